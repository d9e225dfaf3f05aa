// Package client is servebench's OpenAI-compatible HTTP client: chat and
// completions, streaming (SSE) and not. Each request yields one Trace with
// monotonic offsets from a single start. It owns the SSE parser, the hot path
// of every streaming run. Pipeline: Workload -> Runner -> client.Trace ->
// bench.Record -> report.
package client
