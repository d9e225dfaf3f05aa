// Package perf is the bundled engine's physics: GPU, architecture and model
// records (data/gpus.json, data/archs.json, data/models.json, one record
// each, checked on first use by data.go) and a performance model that
// turns them into KV cache capacity, start-up phase durations and
// per-step times. The CPU-side overheads and start-up
// constants (step.go, startup.go) are shared by every profile; the share of
// the datasheet peaks the kernels reach (MFU, bandwidth) is per GPU
// architecture, fitted to cited public vLLM figures (data/figures, one
// CSV file per source, read by FidelityFigures; fit_test.go fits the
// constants; go test ./engine/perf -run Fidelity -v prints the table and
// the fit). The calibration profile's figures (rtx3060-12gb +
// qwen2.5-7b-instruct-awq) fall out of its public specs and the shared
// defaults. The scheduler in engine/sim asks it how long
// each step takes; it never sleeps itself.
//
// CONTRACT (used by engine/sim; keep these signatures):
//
//	Lookup(gpu, model string) (GPU, Model, error)
//	New(gpu GPU, model Model, cfg Config) (*Perf, error)   // error when the model does not fit
//	(*Perf).KVCacheTokens() int; NumGPUBlocks() int; BlockSize() int
//	(*Perf).MaxConcurrency(tokensPerRequest int) float64
//	(*Perf).StepTime(Step) time.Duration
//	(*Perf).RequestOverhead() time.Duration  // once per request, see below
//	(*Perf).PrefillTTFT(prompts ...int) time.Duration
//	(*Perf).Startup() Startup
//	GPUs() []GPU; Models() []Model; DefaultConfig() Config
//	WriteProfiles(w io.Writer) error        // `servebench engine --list-profiles`
//
// Also: (*Perf).Config() (flags with vLLM's per-GPU defaults filled in:
// MaxNumSeqs, MaxNumBatchedTokens, MaxModelLen), KVCacheGiB(), WeightsGiB(),
// Breakdown(Step); DefaultBatching(GPU); LookupGPU, LookupModel (profile
// or served name); ErrDoesNotFit (errors.Is) for models that do not fit.
//
// How engine/sim applies it: every scheduler step lasts StepTime(step)
// (divided by --speedup); a request's first token is emitted at the end of
// the step that finishes its prefill. Each request also pays
// RequestOverhead() once, between arrival and joining the waiting queue
// (the frontend-to-engine-core hand-off and back, see
// RequestOverheadConst): it counts in TTFT and E2E but not in queue time,
// as in vLLM. A step pays PrefillSeqOverhead for each sequence with prompt
// tokens in it, so requests admitted together share the FLOPs but not that
// cost. Alone, a request therefore sees TTFT = RequestOverhead +
// StepTime(its prefill step) (PrefillTTFT) and E2E = TTFT + (n-1) decode
// steps; with prefix caching (on by default, as in vLLM V1) its prefill
// step holds only the tokens past its cached blocks and reads the cached
// ones' KV.
//
// Calibration (TestCalibration prints model vs seed): the seed's table is
// what `servebench table` sends, 20 sequential requests of
// bench.DefaultPrompt (CalibrationPrompt), 46 tokens under Qwen2.5's chat
// template (engine/tok; its default system turn alone is ~29 tokens),
// streaming then non-streaming, with prefix caching on as in the seed's
// vLLM V1. Only the first request prefills all 46 tokens (53 ms); the
// other 39 find 32 cached and prefill 14 (27.6 ms), a step bound by
// reading the weights, so the fixed costs carry the TTFT: ~14 ms per
// request beside ~13.5 ms of weight reads. Means: streaming 28.9 ms (seed
// 28.4), non-streaming 27.6 ms (seed 28.1). A prompt of different length
// moves the first request only (~0.85 ms per token on the 3060, where a
// full prefill of over ~16 tokens is compute-bound), a twentieth of that
// in the streaming mean.
//
// Long prompts: the compute side (MFU) is checked against public vLLM
// figures (data/figures/lambdalabs-vllm-benchmark.csv: LambdaLabsML/vllm-benchmark's
// Meta-Llama-3-8B-Instruct runs on an A100-80GB-SXM and an H100-80GB-SXM,
// ten prompts of 1,369 tokens in all prefilled in one step, median TTFT
// 124.5-126.7 and 62.1-62.8 ms over reruns at three --max-model-len);
// TestPublicPrefill prints model vs public figure and fails past 15%; with
// the A100's and H100's fitted efficiencies (fidelity.go) they hold within
// 1.2%.
//
// Why latency grows under load (what the scheduler will show):
//   - A decode step streams all weights once however many sequences it
//     serves, so batching is cheap; but each sequence past the first adds
//     DecodeGEMMShare of its GEMM FLOPs' time (step.go), and every sequence
//     reads its whole KV cache each step, so step time (and so inter-token
//     latency) grows with the batch and its total context.
//   - New requests are prefilled in the same steps as running decodes
//     (chunked prefill, --max-num-batched-tokens per step): a prefill chunk
//     makes that step compute-bound and long, so a newcomer's TTFT is at
//     least one long mixed step, and the running streams stall for it too.
//   - Admission is capped twice: --max-num-seqs running slots, and free KV
//     blocks (KVCacheTokens / BlockSize). A request that finds either
//     exhausted waits in the FIFO queue; its queue wait, part of TTFT, is
//     the time until enough running requests finish. When growing sequences
//     run out of blocks, the newest is preempted and recomputed later.
package perf
