package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/engine/dist"
	"github.com/servebench/servebench/engine/pd"
	"github.com/servebench/servebench/engine/perf"
	"github.com/servebench/servebench/engine/sim"
)

// engineOptions is `servebench engine`'s parsed flags.
type engineOptions struct {
	sim           sim.Options
	listProfiles  bool
	prefixCaching bool // --enable-prefix-caching
	enableLoRA    bool // --enable-lora: accepted for vLLM command lines; adapters come with --lora-modules
	pdPrefill     int  // --pd-prefill: P/D deployment (engine/pd)
	pdDecode      int  // --pd-decode
}

func newEngineCmd() *cobra.Command {
	o := &engineOptions{sim: sim.DefaultOptions()}
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "Run the bundled engine: a vLLM-compatible server timed by a GPU performance model",
		Long: `engine serves the OpenAI-compatible API (/v1/chat/completions, /v1/completions,
/v1/models), /tokenize, /detokenize, /health, /metrics (vLLM V1 names) and /version
like ` + "`vllm serve`" + ` on the chosen GPU, with start-up phases, continuous batching, a
paged KV cache with vLLM V1's automatic prefix caching (off with
--no-enable-prefix-caching) and preemption timed by a physics model of that GPU
instead of a GPU. Logs go to stderr in vLLM's formats. Prompts are counted by a byte-level BPE
tokenizer that matches Qwen2.5's and Llama-3's counts on English text, after the
model's chat template (Qwen2.5's default system prompt included). With
--speculative-tokens K each decode step streams 1 to K+1 tokens in one chunk
(drafts accepted with --acceptance-rate). With --reasoning-parser each chat
request thinks first (--reasoning-tokens), streamed as vLLM's reasoning parsers do.`,
		Example: `  servebench engine                                  # RTX 3060 + Qwen2.5-7B-Instruct-AWQ on 127.0.0.1:8000
  servebench engine --gpu h100-80gb --model llama-3.1-8b-instruct --speedup 10
  servebench engine --gpu h100-80gb --model llama-3.1-70b-instruct --tensor-parallel-size 8 --max-model-len 32768
  servebench engine --port 0 --fault http-error=0.1:429
  servebench engine --speculative-tokens 3 --acceptance-rate 0.7
  servebench engine --reasoning-parser qwen3 --reasoning-tokens lognormal:1000,500
  servebench engine --enable-auto-tool-choice --tool-call-parser hermes
  servebench engine --list-profiles`,
		Annotations: map[string]string{validatesItself: "sim.New"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.listProfiles {
				return perf.WriteProfiles(cmd.OutOrStdout())
			}
			if f := cmd.Flags(); f.Changed("enable-prefix-caching") {
				if f.Changed("no-enable-prefix-caching") && o.prefixCaching == o.sim.NoPrefixCaching {
					return usageErr(errors.New("--enable-prefix-caching and --no-enable-prefix-caching contradict each other: give one"))
				}
				o.sim.NoPrefixCaching = !o.prefixCaching
			}
			if cmd.Flags().Changed("acceptance-rate") && o.sim.SpeculativeTokens == 0 {
				return usageErr(fmt.Errorf("--acceptance-rate %g applies to speculative decoding: give --speculative-tokens K too", o.sim.AcceptanceRate))
			}
			o.sim.Log = cmd.ErrOrStderr()
			if o.pdPrefill != 0 || o.pdDecode != 0 {
				po := pd.Options{Engine: o.sim, Prefill: o.pdPrefill, Decode: o.pdDecode}
				if err := po.Check(); err != nil {
					return usageErr(err)
				}
				if validating(cmd.Flags()) {
					return nil
				}
				return runPD(cmd, po)
			}
			e, err := sim.New(o.sim)
			if err != nil {
				return usageErr(err)
			}
			if validating(cmd.Flags()) { // sim.New checked the options; nothing listens yet
				return nil
			}
			err = e.Run(cmd.Context())
			if errors.Is(err, sim.ErrCrashed) || errors.Is(err, sim.ErrLoadFailed) {
				return withExit(exitInvalidRun, err)
			}
			return err
		},
	}
	f := cmd.Flags()
	s := &o.sim
	f.StringVar(&s.GPU, "gpu", s.GPU, "GPU profile (see --list-profiles)")
	f.StringVar(&s.Model, "model", s.Model, "model profile or served name (see --list-profiles)")
	f.IntVar(&s.MaxModelLen, "max-model-len", s.MaxModelLen, "context length in tokens (0: the model's)")
	f.Float64Var(&s.GPUMemoryUtilization, "gpu-memory-utilization", s.GPUMemoryUtilization, "fraction of GPU memory vLLM may use")
	f.IntVar(&s.MaxNumSeqs, "max-num-seqs", s.MaxNumSeqs, "running sequences at most (0: vLLM's default for the GPU, 256, or 1024 on H100/H200)")
	f.IntVar(&s.MaxNumBatchedTokens, "max-num-batched-tokens", s.MaxNumBatchedTokens, "tokens per step, the chunked-prefill budget (0: vLLM's default, 2048, or 8192 on H100/H200)")
	f.IntVar(&s.TensorParallelSize, "tensor-parallel-size", 1, "GPUs of one node (of the --gpu profile) the model is split over, as vLLM's tensor parallelism splits it")
	f.StringVar(&s.KVRole, "kv-role", "", "disaggregated serving: "+strings.Join(sim.KVRoles, " (a prefill instance) or ")+" (a decode instance: each prompt's KV arrives over --kv-link-gbps instead of being prefilled)")
	f.Float64Var(&s.KVLinkGbps, "kv-link-gbps", sim.DefaultKVLinkGbps, "with --kv-role consumer: the KV link from the prefill instances, Gb/s")
	f.IntVar(&o.pdPrefill, "pd-prefill", 0, "run a P/D deployment: this many prefill instances (with --pd-decode) behind servebench's router on --port (an emulation)")
	f.IntVar(&o.pdDecode, "pd-decode", 0, "run a P/D deployment: this many decode instances (with --pd-prefill)")
	f.StringVar(&s.KVAllocation, "kv-allocation", sim.KVPaged, "KV cache allocation: "+strings.Join(sim.KVAllocations, " (vLLM's), ")+" (prompt + max_tokens reserved at admission, as servers before paging did; prefix caching off)")
	f.IntVar(&s.PipelineParallelSize, "pipeline-parallel-size", 1, "pipeline stages of consecutive layers, each on --tensor-parallel-size GPUs (the node has TP x PP); the step time is one batch's through every stage")
	f.StringVar(&s.VLLMVersion, "vllm-version", "", "pace steps as this vLLM release's engine loop does (e.g. 0.20.1): before 0.8.0 (V0) each decoding sequence adds CPU work to a step; from 0.14.0 async scheduling overlaps the per-step CPU work (default: the seed's V1)")
	f.IntVar(&s.NumGPUBlocksOverride, "num-gpu-blocks-override", 0, "KV cache blocks of 16 tokens (0: from the performance model)")
	f.BoolVar(&o.prefixCaching, "enable-prefix-caching", true, "reuse the KV blocks of cached prompt prefixes (vLLM V1's default)")
	f.BoolVar(&s.NoPrefixCaching, "no-enable-prefix-caching", false, "turn automatic prefix caching off")
	f.BoolVar(&s.PromptTokensDetails, "enable-prompt-tokens-details", false, "report usage.prompt_tokens_details.cached_tokens, as vLLM's flag does")
	f.BoolVar(&s.DebugRequests, "debug-requests", false, "keep each request's engine-side record and serve them on GET /debug/requests (tests)")
	f.Float64Var(&s.Speedup, "speedup", s.Speedup, "divide every modelled duration by this factor")
	f.Float64Var(&s.StartupSpeedup, "startup-speedup", 0, "divide the start-up phases by this factor instead (0: --speedup)")
	f.Int64Var(&s.Seed, "seed", s.Seed, "seed for generated text, lengths and faults")
	f.StringVar(&s.Host, "host", s.Host, "address to bind")
	f.IntVar(&s.Port, "port", s.Port, "port to listen on (0: a free one, named in the log)")
	f.StringVar(&s.APIKey, "api-key", "", "require this key as a Bearer token on /v1 endpoints")
	f.StringVar(&s.HealthDuringLoad, "health-during-load", s.HealthDuringLoad, `while loading: "refuse" (not listening, like vLLM) or "503" (like llama.cpp)`)
	f.BoolVar(&s.IgnoreDisconnect, "ignore-disconnect", false, "keep generating for clients that disconnected (shows the waste)")
	f.BoolVar(&s.LogRequests, "enable-log-requests", false, "log each request's receipt, finish and abort by its id (vLLM's flag; the id is X-Request-Id when sent)")
	f.StringVar(&s.ServedModelName, "served-model-name", "", "model name served in /v1/models (default: the model's)")
	f.IntVar(&s.SpeculativeTokens, "speculative-tokens", 0, "speculative decoding: draft tokens verified per decode step (0: off); a step streams 1 to K+1 tokens in one chunk")
	f.Float64Var(&s.AcceptanceRate, "acceptance-rate", s.AcceptanceRate, "speculative decoding: chance each draft token is accepted, given the ones before it were (seeded per request)")
	f.StringVar(&s.ReasoningParser, "reasoning-parser", "", "think before answering, streamed as vLLM's reasoning parser of this name does: "+strings.Join(sim.ReasoningParsers, ", "))
	f.StringVar(&s.ReasoningTokens, "reasoning-tokens", "", "with --reasoning-parser: thinking tokens per chat request, drawn seeded (default "+sim.DefaultReasoningTokens+"): "+dist.Grammar)
	f.StringVar(&s.ReasoningField, "reasoning-field", "", `with --reasoning-parser: the delta field thinking streams in, "reasoning_content" (vLLM 0.11, default) or "reasoning" (newer vLLM, with usage.completion_tokens_details)`)
	f.BoolVar(&s.EnableAutoToolChoice, "enable-auto-tool-choice", false, `allow tool_choice "auto" (vLLM's flag; needs --tool-call-parser)`)
	f.StringVar(&s.ToolCallParser, "tool-call-parser", "", "vLLM tool call parser name: "+strings.Join(sim.ToolCallParsers, ", "))
	f.Float64Var(&s.AutoToolCallRate, "auto-tool-call-rate", s.AutoToolCallRate, `share of tool_choice "auto" answers that call a tool (seeded per request)`)
	f.BoolVar(&o.enableLoRA, "enable-lora", false, "serve LoRA adapters (vLLM's flag; --lora-modules alone turns them on here)")
	f.StringSliceVar(&s.LoRAModules, "lora-modules", nil, "LoRA adapters served beside the base model, name=path (repeatable or comma-separated); each is a model in /v1/models")
	f.IntVar(&s.MaxLoRAs, "max-loras", 0, "distinct adapters in one batch, and GPU slots; another adapter waits and is swapped in from host memory (0: vLLM's default, 1)")
	f.IntVar(&s.MaxLoRARank, "max-lora-rank", 0, "adapter rank, which sizes the swap (0: vLLM's default, 16)")
	f.StringArrayVar(&s.Faults, "fault", nil, "inject a fault (repeatable): "+strings.Join(sim.FaultNames, ", "))
	f.BoolVar(&o.listProfiles, "list-profiles", false, "print the GPU and model profiles and which models fit which GPUs, then exit")
	return cmd
}

// runPD runs the engine as a P/D deployment (engine/pd). Bad options,
// an instance's too, are usage errors; an instance that dies is a failed run.
func runPD(cmd *cobra.Command, o pd.Options) error {
	err := pd.Run(cmd.Context(), o)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pd.ErrInstance):
		return withExit(exitInvalidRun, err)
	}
	return usageErr(err)
}
