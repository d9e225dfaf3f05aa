// Package sim is servebench's bundled engine: a Go HTTP server that behaves
// like `vllm serve` on a given GPU, timed by the physics model in engine/perf
// instead of a GPU.
//
// It sits at the far end of the pipeline: the harness (bench, via client and
// scrape) talks to it exactly as it talks to a real server, over loopback
// HTTP and SSE, and reads its Prometheus /metrics. `servebench engine` runs it
// as a child process; tests run it in-process through engine/sim/simtest.
//
// The parts, each in its own file:
//
//   - options.go: Options (vLLM flag names) and validation.
//   - engine.go, startup.go: New, Run, the start-up phases and their vLLM log lines.
//   - sched.go: the engine loop (vLLM's EngineCore step loop) with continuous
//     batching, chunked prefill, a paged KV cache and preemption by recompute.
//   - prefix.go: the KV block pool with vLLM V1's automatic prefix caching.
//   - truth.go: per-request records (--debug-requests) and the periodic stats log line.
//   - api.go, stream.go: the OpenAI-compatible HTTP API and SSE writing.
//   - metrics.go: vLLM V1 metric families on a private registry.
//   - text.go: prompt token counting and deterministic generated text.
//   - tokenize.go: prompts to token ids (engine/tok, the model's chat
//     template), vLLM's /tokenize and /detokenize.
//   - faults.go: --fault injection for testing harnesses against misbehaving servers.
//   - spec.go: speculative decoding (--speculative-tokens, --acceptance-rate):
//     1 to K+1 tokens per step in one streamed chunk, vLLM's spec-decoding counters.
//   - reasoning.go: reasoning parsers (--reasoning-parser, --reasoning-tokens):
//     chat requests think first, streamed in vLLM's reasoning field, then answer.
//
// Every modelled duration is divided by Options.Speedup, and every time the
// engine reports is in wall seconds after that division: at --speedup 10 a
// 23.4 s weight load is logged as 2.34 s and a 3.85 s request shows as
// 0.385 s in /metrics. Token times in /metrics are the modelled GPU clock
// (each token at the end of the step that made it; a request's arrival is
// real time), so a busy host delays what clients see but not what the
// engine reports, just as a real server's clock and its clients' differ.
package sim
