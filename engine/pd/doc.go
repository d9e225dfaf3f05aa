// Package pd is a disaggregated prefill/decode deployment of the bundled
// engine, an emulation of vLLM's P/D setup with a router of servebench's
// own: N prefill instances (sim --kv-role producer) and M decode instances
// (--kv-role consumer) in one process, each on its own 127.0.0.1 port with
// its own /metrics, behind a Router that does what vLLM's disaggregated
// proxy examples do: send the request to a prefill instance with
// max_tokens 1, then the original request to a decode instance, whose
// response (streamed or not) is the client's. The decode instance pays the
// KV transfer (engine/sim kvrole.go). GET /pd/instances lists the
// instances, so a harness can read each one's /metrics as a replica.
//
// It sits beside engine/sim (which it runs) and imports nothing above
// engine.
package pd
