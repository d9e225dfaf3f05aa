// Package result defines servebench's saved outputs: results.json (schema
// "servebench/v1") and the lines of requests.jsonl. bench writes them;
// Load (and ReadRecords for requests.jsonl alone) is the one reader that
// report and compare use. JSON keys are a contract users script against:
// add fields, never rename.
package result
