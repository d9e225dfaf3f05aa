// Package perf is the bundled engine's physics: GPU and model profiles (data)
// and a performance model that turns them into KV cache capacity, start-up
// phase durations and per-step times. One set of efficiency constants
// (step.go, startup.go) is shared by every profile; the calibration profile's
// figures (rtx3060-12gb + qwen2.5-7b-instruct-awq) fall out of its public
// specs and those constants. The scheduler in engine/sim asks it how long
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
// (tokenization, API process to engine core hand-off): it counts in TTFT
// and E2E but not in queue time, as in vLLM. A step pays
// PrefillSeqOverhead for each sequence with prompt tokens in it, so
// requests admitted together share the FLOPs but not that cost. Alone, a
// request therefore sees TTFT = RequestOverhead + StepTime(its prefill
// step) (PrefillTTFT) and E2E = TTFT + (n-1) decode steps. The seed's
// 0.028 s TTFT is met for a 27-token prompt, engine/sim's count for
// bench.DefaultPrompt; on the 3060 the prefill is compute-bound and costs
// ~0.85 ms per prompt token, so the engine's token counting and the
// calibration must move together.
//
// Long prompts: the compute side (MFU) is checked against public vLLM
// figures (PublicPrefill, prefill.go: LambdaLabsML/vllm-benchmark's
// Meta-Llama-3-8B-Instruct runs on an A100-80GB-SXM and an H100-80GB-SXM,
// ten prompts of 1,369 tokens in all prefilled in one step, TTFT 126.7 and
// 62.2 ms); TestPublicPrefill prints model vs public figure and fails past
// 15%. The same constants that give the 3060's 28 ms give those within 4%.
//
// Why latency grows under load (what the scheduler will show):
//   - A decode step streams all weights once however many sequences it
//     serves, so batching is nearly free at first; but every sequence also
//     reads its whole KV cache each step, so step time (and so inter-token
//     latency) grows with the batch's total context, and past the GPU's
//     ridge point the step becomes compute-bound and grows with the batch.
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
