package perf

import "time"

// PrefillFigure is a public measurement of vLLM's time to first token for
// prompts prefilled together in one step, which the model must meet within
// PrefillTolerance with the shared constants of step.go.
type PrefillFigure struct {
	Source      string // title and address of the measurement
	GPU         string // GPU profile it ran on
	Model       string // model profile with the measured model's architecture
	Measured    string // the model, precision and vLLM version as published
	Prompts     []int  // prompt tokens of the requests sent at once
	MaxModelLen int    // the run's --max-model-len
	TTFT        time.Duration
	Statistic   string // which statistic TTFT is
}

// PrefillTolerance is how far the model's TTFT may be from a PrefillFigure.
const PrefillTolerance = 0.15

// lambdaPrompts are the prompt lengths (Llama-3 tokenizer) of the ten
// ShareGPT prompts of LambdaLabsML/vllm-benchmark's prompt_10 runs: 1,369
// tokens in all, sent at once (request rate inf).
var lambdaPrompts = []int{13, 25, 27, 10, 329, 29, 399, 328, 4, 205}

// PublicPrefill are the public figures the prefill side is checked
// against. Each is vLLM's own benchmark_serving.py TTFT (client side, from
// sending to the first streamed token) for ten requests sent together, all
// prefilled in one step of 1,369 tokens: vLLM 0.6.0 with --max-model-len
// 2,048, 4,096 or 8,192 has chunked prefill off, so one prefill step takes up to
// max(max-model-len, 2,048) tokens, and the ten TTFTs of each run lie within
// 2 ms of each other, as one shared step implies.
//
// Source: LambdaLabsML/vllm-benchmark (https://github.com/LambdaLabsML/vllm-benchmark),
// results/prompt_10/<GPU>/Meta-Llama-3-8B-Instruct_tp1_len<L>.json, written by
// its benchmark.py (vllm.entrypoints.openai.api_server --max-num-seqs 1024
// --gpu-memory-utilization 0.95, then benchmark_serving.py --dataset-name
// sharegpt --num-prompts 10) in September 2024. Meta-Llama-3-8B-Instruct in
// bf16 has the llama-3.1-8b-instruct profile's architecture (only the
// context length and RoPE scaling differ, which change no FLOP or byte of a
// step).
var PublicPrefill = []PrefillFigure{
	{
		Source: "LambdaLabsML/vllm-benchmark results/prompt_10/1xA100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len2048.json",
		GPU:    "a100-80gb", Model: "llama-3.1-8b-instruct",
		Measured: "Meta-Llama-3-8B-Instruct bf16, vLLM 0.6.0, 1x A100-80GB-SXM",
		Prompts:  lambdaPrompts, MaxModelLen: 2048,
		TTFT: 126730 * time.Microsecond, Statistic: "median of 10",
	},
	{
		Source: "LambdaLabsML/vllm-benchmark results/prompt_10/1xA100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len4096.json",
		GPU:    "a100-80gb", Model: "llama-3.1-8b-instruct",
		Measured: "Meta-Llama-3-8B-Instruct bf16, vLLM 0.6.0, 1x A100-80GB-SXM (--max-model-len 4096 rerun)",
		Prompts:  lambdaPrompts, MaxModelLen: 4096,
		TTFT: 124549 * time.Microsecond, Statistic: "median of 10",
	},
	{
		Source: "LambdaLabsML/vllm-benchmark results/prompt_10/1xA100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len8192.json",
		GPU:    "a100-80gb", Model: "llama-3.1-8b-instruct",
		Measured: "Meta-Llama-3-8B-Instruct bf16, vLLM 0.6.0, 1x A100-80GB-SXM (--max-model-len 8192 rerun)",
		Prompts:  lambdaPrompts, MaxModelLen: 8192,
		TTFT: 126471 * time.Microsecond, Statistic: "median of 10",
	},
	{
		Source: "LambdaLabsML/vllm-benchmark results/prompt_10/1xH100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len2048.json",
		GPU:    "h100-80gb", Model: "llama-3.1-8b-instruct",
		Measured: "Meta-Llama-3-8B-Instruct bf16, vLLM 0.6.0, 1x H100-80GB-SXM",
		Prompts:  lambdaPrompts, MaxModelLen: 2048,
		TTFT: 62195 * time.Microsecond, Statistic: "median of 10",
	},
	{
		Source: "LambdaLabsML/vllm-benchmark results/prompt_10/1xH100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len4096.json",
		GPU:    "h100-80gb", Model: "llama-3.1-8b-instruct",
		Measured: "Meta-Llama-3-8B-Instruct bf16, vLLM 0.6.0, 1x H100-80GB-SXM (--max-model-len 4096 rerun)",
		Prompts:  lambdaPrompts, MaxModelLen: 4096,
		TTFT: 62796 * time.Microsecond, Statistic: "median of 10",
	},
	{
		Source: "LambdaLabsML/vllm-benchmark results/prompt_10/1xH100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len8192.json",
		GPU:    "h100-80gb", Model: "llama-3.1-8b-instruct",
		Measured: "Meta-Llama-3-8B-Instruct bf16, vLLM 0.6.0, 1x H100-80GB-SXM (--max-model-len 8192 rerun)",
		Prompts:  lambdaPrompts, MaxModelLen: 8192,
		TTFT: 62101 * time.Microsecond, Statistic: "median of 10",
	},
}

// PrefillTTFT is the TTFT of len(prompts) requests that arrive together,
// are admitted at once and prefilled in one step (their sum within the
// step's token budget): each pays RequestOverhead in parallel, then the
// shared step. With one prompt it is a request alone.
func (p *Perf) PrefillTTFT(prompts ...int) time.Duration {
	total := 0
	for _, n := range prompts {
		total += n
	}
	return p.RequestOverhead() + p.StepTime(Step{PrefillTokens: total, PrefillSeqs: len(prompts)})
}
