// Package client is servebench's OpenAI-compatible HTTP client: chat and
// completions, streaming (SSE) and not. Each request yields one Trace with
// monotonic offsets from a single start. Pipeline: Workload -> Runner ->
// client.Trace -> bench.Record -> report.
//
// Client.Do never returns an error: a failed request is a Trace with an
// ErrorClass and the partial measurements it had (failures are data). A
// Client is safe for concurrent use and keeps a connection pool sized by
// Options.MaxConns (HTTP/1.1, keep-alive, no compression).
//
// The package owns the hot path of every streaming run: SSEReader (event
// framing) and ChunkDecoder (the fields of one chunk). Both own and reuse
// their buffers, allocate nothing per event in steady state, and hand out
// slices valid only until their next call; they are not safe for
// concurrent use. The API key is sent as a Bearer token and never recorded:
// outside text that reaches a Trace is redacted first.
package client
