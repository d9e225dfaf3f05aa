package perf

import "fmt"

// One request's TTFT at prompt lengths from 128 to 8,192 tokens, and its
// decode ms/token, for Llama-2-70B on DGX-A100 and DGX-H100 nodes at
// tensor parallel 2, 4 and 8: the profiling data behind Microsoft's
// Splitwise simulator (Patel et al., "Splitwise: Efficient Generative LLM
// Inference Using Phase Splitting", ISCA 2024). The length sweep tests
// what one GPU's physics predicts as a prompt grows: the GEMMs' FLOPs (linear
// in the prompt), attention's causal triangle (quadratic) and the fixed
// costs of a step (what is left at 128 tokens).
//
// Provenance, as far as public sources go:
//   - The file does not name the engine that produced it; the simulator's
//     README calls it "profiling data from the DGX-A100 and DGX-H100
//     machines", and its configs/performance_model/db.yaml lists, commented
//     out beside data/perf_model.csv, two other files named
//     data/vllm-bloom.csv and data/vllm-llama.csv that the repository does
//     not hold. An open issue on the repository (mutinifni/splitwise-sim#4,
//     2025-01) asks which framework collected the data and has no answer.
//   - The Splitwise authors built their prototype "on top of an internal
//     vLLM branch" (vllm-project/vllm#2472, 2024-01; the code came as PR
//     #2809), but no source found says these profiles came from it. So the
//     rows say the engine is not stated, and none is fitted to.
//   - The file came with the repository's first commit (2024-03-29); the
//     paper (arXiv 2311.18677, first posted November 2023) characterizes
//     the same two models (BLOOM-176B, Llama2-70B) on DGX-A100 and DGX-H100
//     machines; its setup section could not be read here in full. The
//     data's decode is as slow on 8 GPUs as on 4 (splitwiseTPWhy), which a
//     step bound by launching kernels from the host shows, not vLLM 0.6's
//     or later CUDA-graph decode that the model's TP costs are fitted to.
//
// Llama-2-70B against the llama-3.1-70b-instruct profile: the same hidden
// size (8,192), layers (80), query and KV heads (64, 8; head dim 128) and
// MLP width (28,672). They differ in the vocabulary (32,000 against
// 128,256: a prefill computes one row of logits, a decode step streams the
// lm_head, 0.52 GB against 2.10 GB, 1.1% of the weights it reads), the
// positions (4,096 against 131,072) and RoPE's base, none of which costs
// a prefill anything. The rows use Llama-2-70B itself (llama2_70B).
//
// What the judged TP 2 rows say about the length dependence (go test
// ./engine/perf -run Fidelity -v): on the A100 the model is within -8% to
// +5% from 256 to 8,192 tokens with no trend (-2% to +13% before the
// A100's MFU took Argonne's offline prefills, 0.63 -> 0.68); its 4,096 ->
// 8,192 growth (2.05x) is the file's (2.01x), so the attention triangle
// at the GEMMs' rate (7% of the 8,192-token step) is right there. On the
// H100 it goes from -2% at 512-1,024 tokens to -12% at 4,096 and -15% at
// 8,192: the gap (79, then 199 ms) fits ~0.014 ms per token plus ~1.2e-6
// ms per token squared, i.e. attention at about half the model's rate
// (FlashAttention-2 reaches 35% of an H100's peak, the FlashAttention-3
// paper's abstract, where the GEMMs reach the fitted 58%; on an A100 it
// reaches 50-73%, the FlashAttention-2 paper's, about the GEMMs' 68%)
// plus a linear cost the file cannot split between the all-reduces and the
// GEMMs. The model keeps
// one rate for both: the vLLM it emulates (0.10 and later) runs
// FlashAttention-3 on Hopper (fa_utils.py's get_flash_attn_version picks
// version 3 on compute capability 9), which these pre-2024 kernels are not. The
// decode rows: A100 -6% at a 128-token prompt, -10% at 8,192 (the file's
// step grows 3.6 ms with 8k tokens of KV, whose bytes take 0.9 ms at the
// fitted bandwidth); H100 -15% at both, where the file's own TP 4 and 8
// decode shows a ~29 ms host floor (splitwiseTPWhy) that its TP 2 decode
// (37 ms) sits just above. The decode rows are printed, not judged
// (splitwiseDecodeWhy): on the same two H100s vLLM 0.6.0 decodes a 70B
// model with ten requests in flight faster than this engine decodes one,
// while the two agree on prefill.

// splitwiseSource is the data file, at the commit that added it.
const splitwiseSource = "github.com/Mutinifni/splitwise-sim data/perf_model.csv @378088013a54df6f2052c27ff5ae6ea7619c3ecc " +
	"(rows model=llama2-70b, batch_size=1, token_size=128; columns hardware, tensor_parallel, prompt_size, %s; median of its 5 runs)"

const (
	splitwiseVLLM = "engine not stated (see fidelity_lengths.go; file committed 2024-03-29)"
	// splitwiseNodes names the hardware column's machines.
	splitwiseA100 = "DGX-A100 (A100-80GB SXM, NVSwitch)"
	splitwiseH100 = "DGX-H100 (H100-80GB SXM, NVSwitch)"
	// splitwiseOutput is token_size: e2e_time = prompt_time + 127 x
	// token_time in the file, so prompt_time is the TTFT and token_time
	// the mean time between the 127 tokens after it.
	splitwiseOutput = 128
	// splitwiseMaxLen covers the longest prompt and its output. Llama-2's
	// config has 4,096 positions; the profiled engine ran 8,192-token
	// prompts past them, so the fidelity model admits them (positions
	// change no step time).
	splitwiseMaxLen = 8192 + splitwiseOutput
	// splitwiseUtil: --gpu-memory-utilization is not stated; 0.95 lets a
	// 70B model's 68.7 GB per GPU at TP 2 keep a KV cache for one
	// 8,320-token request on an 80 GB GPU, as it ran.
	splitwiseUtil = 0.95
)

// splitwiseTPWhy is why the TP 4 and TP 8 rows are printed, not judged:
// measured in the same file, the engine's parallel steps are bound by what
// the GPUs' physics does not set.
const splitwiseTPWhy = "this engine's TP 4/8 steps are not set by the GPUs: its decode is as slow on 8 GPUs as on 4 " +
	"(A100 44.9 and 45.0 ms/token, H100 29.4 and 29.7, medians at a 1,024-token prompt) though each GPU streams half the bytes, " +
	"so a step is bound by the host launching its kernels (a 128-512-token prompt sits on that floor too); and its " +
	"8,192-token prefill is only 1.9x (A100) and 1.6x (H100) faster on 8 GPUs than on 2 where each GPU's FLOPs fall 4x, " +
	"so its all-reduces cost several times what NCCL reaches on NVSwitch; the model's TP costs are fitted to vLLM 0.6's " +
	"CUDA-graph decode and all-reduces (parallel.go)"

// splitwiseDecodeWhy is why every decode row of the file is printed, not
// judged. Measured against vLLM itself: LambdaLabs' vLLM 0.6.0 run of
// Meta-Llama-3-70B on 2 H100s (fidelity_parallel.go, ten requests at once)
// has a median TPOT of 29.5 ms, a step that streams the same 8,192-wide,
// 80-layer weights (a larger vocabulary, 1% more bytes) for up to ten
// sequences, where this file's TP 2 step for one sequence takes 37.2 ms:
// the profiled engine's decode is at least 26% slower than vLLM's on the
// same GPUs. Its prefill is not: interpolated to the LambdaLabs run's
// 1,369 prompt tokens, its TP 2 H100 prompt_time (158 ms at 1,024, 310 ms
// at 2,048) gives ~210 ms against vLLM's 219 ms, so the TP 2 prefill rows
// stay judged. The A100 rows are the same engine's decode path.
const splitwiseDecodeWhy = "not vLLM's decode: on the same 2 H100s vLLM 0.6.0 decodes Llama-3-70B at 29.5 ms a step " +
	"with ten requests in flight (LambdaLabs, fidelity_parallel.go) where this engine takes 37.2 ms for one, at least " +
	"26% slower, while its prefill agrees with vLLM's (~210 against 219 ms at 1,369 tokens); its A100 decode is the same " +
	"engine's decode path"

// splitwiseRidgeWhy is why the A100's 128-token prompt at TP 2 is printed,
// not judged.
const splitwiseRidgeWhy = "ridge point: 128 tokens at TP 2 on an A100 take as long in FLOPs (44.6 ms at the fitted MFU) as " +
	"in streaming the GPU's 68.7 GB of weights (44.9 ms), where a real GEMM reaches neither peak and the model's max() of " +
	"the two is least true; the file's own 128-token prompt costs 27 ms more than its decode step (81.1 against 53.7 ms), " +
	"on the H100 (memory-bound there) 11 ms, as the model has it (13 ms)"

// llama2_70B is meta-llama/Llama-2-70b-hf's architecture (config.json:
// 68,976,648,192 parameters, untied embeddings), with MaxContext widened
// to splitwiseMaxLen (see there).
var llama2_70B = Model{
	Name: "llama2-70b", ServedName: "meta-llama/Llama-2-70b-hf",
	ParamsB: 68.976648192, BytesPerWeight: 2,
	Layers: 80, Hidden: 8192, Intermediate: 28672, Heads: 64, KVHeads: 8, HeadDim: 128,
	Vocab: 32000, MaxContext: splitwiseMaxLen,
}

// splitwiseLengths are the prompt_size values of the batch-1 sweep.
var splitwiseLengths = []int{128, 256, 512, 1024, 2048, 4096, 8192}

// splitwiseSweep is one node's sweep: the median prompt_time per length
// (splitwiseLengths order) and the median token_time at the prompts the
// decode rows use.
type splitwiseSweep struct {
	gpu, node string
	tp        int
	ttft      []float64 // ms
	decode    map[int]float64
}

var splitwiseSweeps = []splitwiseSweep{
	{"a100-80gb", splitwiseA100, 2, []float64{81.08, 112.93, 196.86, 377.06, 688.05, 1485.35, 2990.18},
		map[int]float64{128: 53.68, 8192: 57.32}},
	{"a100-80gb", splitwiseA100, 4, []float64{63.65, 78.57, 126.96, 227.08, 403.33, 965.15, 2278.45},
		map[int]float64{1024: 44.95}},
	{"a100-80gb", splitwiseA100, 8, []float64{65.35, 66.76, 94.31, 154.46, 274.22, 661.22, 1549.82},
		map[int]float64{1024: 44.97}},
	{"h100-80gb", splitwiseH100, 2, []float64{48.33, 51.85, 83.83, 157.95, 310.32, 642.66, 1339.84},
		map[int]float64{128: 37.24, 8192: 37.80}},
	{"h100-80gb", splitwiseH100, 4, []float64{49.09, 50.98, 59.62, 105.61, 200.68, 463.46, 953.58},
		map[int]float64{1024: 29.44}},
	{"h100-80gb", splitwiseH100, 8, []float64{58.19, 51.66, 53.39, 77.91, 136.80, 390.29, 844.89},
		map[int]float64{1024: 29.74}},
}

// lengthFigures are the sweep's rows, all held out of the efficiency fit
// (they would pull the single-GPU rows' MFU with multi-GPU costs): the TP 2
// prefill rows are judged, the decode rows printed with splitwiseDecodeWhy
// and the TP 4 and 8 ones with splitwiseTPWhy.
func lengthFigures() []CitedFigure {
	var figs []CitedFigure
	for _, s := range splitwiseSweeps {
		cfg := Config{MaxModelLen: splitwiseMaxLen, GPUMemoryUtilization: splitwiseUtil,
			MaxNumBatchedTokens: splitwiseMaxLen, TensorParallelSize: s.tp}
		base := CitedFigure{
			GPU: s.gpu, Model: llama2_70B.Name, Unit: "ms", VLLM: splitwiseVLLM, HeldOut: true, Cfg: cfg,
			Measured: fmt.Sprintf("Llama-2-70B (16-bit), %s, tensor parallel %d", s.node, s.tp),
		}
		if s.tp > 2 {
			base.Why = splitwiseTPWhy
		}
		for i, n := range splitwiseLengths {
			f := base
			f.Quantity, f.Real = fitQuantityTTFT, s.ttft[i]
			f.Config = fmt.Sprintf("tp=%d,batch=1,prompt=%d,one-step-prefill,prompt_time", s.tp, n)
			f.Source = fmt.Sprintf(splitwiseSource, "prompt_time")
			if s.gpu == "a100-80gb" && s.tp == 2 && n == 128 {
				f.Why = splitwiseRidgeWhy
			}
			f.Eval = func(p *Perf) float64 { return millis(requestTTFT(p, n, 0)) }
			figs = append(figs, f)
		}
		for _, n := range splitwiseLengths {
			real, ok := s.decode[n]
			if !ok {
				continue
			}
			f := base
			f.Quantity, f.Real = fitQuantityDecode, real
			f.Config = fmt.Sprintf("tp=%d,batch=1,context=%d..%d,token_time", s.tp, n+1, n+splitwiseOutput-1)
			f.Source = fmt.Sprintf(splitwiseSource, "token_time")
			if f.Why == "" {
				f.Why = splitwiseDecodeWhy
			}
			f.Eval = func(p *Perf) float64 { return splitwiseDecode(p, n) }
			figs = append(figs, f)
		}
	}
	return figs
}

// splitwiseDecode is the mean decode step, in ms, over the 127 tokens
// after a prompt of n: what token_time averages.
func splitwiseDecode(p *Perf, n int) float64 {
	return millis(decodeAfter(p, 1, n, splitwiseOutput)) / (splitwiseOutput - 1)
}
