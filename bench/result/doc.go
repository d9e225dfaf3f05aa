// Package result defines servebench's saved outputs: results.json (schema
// "servebench/v1") and the lines of requests.jsonl. bench writes them,
// report and compare read them. JSON keys are a contract users script
// against: add fields, never rename.
package result
