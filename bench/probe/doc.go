// Package probe runs the checks the seed lesson says to make on any
// inference server before deploying it, beside the benchmark pipeline
// rather than inside it: one request (or a few) each, read with package
// client, with /metrics read through package scrape.
//
//   - cancel: open a stream, read K tokens, disconnect, then watch /metrics:
//     does the running count drop and do generated tokens stop growing?
//   - midstream-error: how does the server report an error once streaming
//     may have begun (HTTP status before the stream, an error event inside an
//     HTTP 200 stream, or a silently cut stream)?
//   - buffering: do tokens arrive one by one at the engine's inter-token
//     pace, or in bursts held back somewhere between engine and client?
//   - limits: is a prompt over max_model_len rejected with 400?
//
// Run returns a Result per probe: a verdict, a one-line summary and the
// evidence behind it. A verdict is data; Run returns an error only when the
// probe could not run at all (bad options: ErrUsage; no server: ErrUnreachable).
// Write renders results as text or JSON.
package probe
