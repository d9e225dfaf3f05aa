package perf

import (
	"fmt"
	"math"
)

// Efficiency is the share of a GPU's datasheet peaks that vLLM's kernels
// reach on one GPU architecture: MFU of the dense bf16/fp16 tensor FLOP/s
// (prefill and large-batch GEMMs) and the share of memory bandwidth that
// decode's weight and KV reads sustain. Chips of one architecture share
// their kernels (cuBLAS/CUTLASS tile shapes, FlashAttention version), so
// they share these; the CPU-side costs (RequestOverheadConst,
// StepOverhead, LayerOverhead, PrefillSeqOverhead) stay common to all.
type Efficiency struct {
	Arch      string  // architecture name, e.g. "ga100"
	MFU       float64 // of GPU.TFLOPs
	Bandwidth float64 // of GPU.BandwidthGBs
	// DecodeGEMMShare is the package's DecodeGEMMShare, the same for
	// every architecture (EfficiencyFor sets it); a field so that
	// FitDecodeGEMMShare can try other values.
	DecodeGEMMShare float64
	// SplitKVMMAShare is the package's SplitKVMMAShare on the
	// architectures whose vLLM decode runs FlashAttention-2's split-KV
	// kernel (splitKVArchs), 0 elsewhere; a field so that
	// FitSplitKVMMAShare can try other values.
	SplitKVMMAShare float64
	// Fitted reports whether the values were fitted to cited figures
	// (FidelityFigures, TestFidelity); otherwise they are the shared
	// defaults MFU and BandwidthEfficiency, met by the seed's RTX 3060.
	Fitted bool
}

// gpuArch maps GPU profiles to their architecture. A GPU not listed here
// (a profile added later) uses the shared defaults.
var gpuArch = map[string]string{
	"rtx3060-12gb": "ga106", // GeForce Ampere: the seed, met by the shared defaults
	"a10g-24gb":    "ga102",
	"l4-24gb":      "ad104", // Ada Lovelace (AD104), a 72 W board
	"a100-40gb":    "ga100",
	"a100-80gb":    "ga100",
	"h100-80gb":    "gh100",
	"h200-141gb":   "gh100",
}

// archEfficiency holds the fitted efficiencies. TestFidelity refits them
// from the training half of FidelityFigures (a grid search minimising the
// squared log error of the TTFT and decode figures of each architecture),
// prints the fit and fails if a value here strays from it by more than the
// grid step; rewrite them from its output when figures change.
//
//   - ga100: an A100's decode streams its HBM2e at 75% of the datasheet
//     bandwidth beside the model's fixed per-step costs (johnmusgrave.com
//     reads "roughly 77% of the memory-bandwidth ceiling" off its
//     A100-40GB, all costs included), not the 92% of the seed's GDDR6
//     card; its prefill runs at 68% of 312 TFLOP/s, fitted to two
//     sources at once: LambdaLabs' ten prompts in one 1,369-token step
//     (vLLM 0.6.0, A100 80GB) alone give 63%, Argonne's offline 16 x
//     1,024-token prefills (fidelity_dc.go; A100 40GB, no HTTP request,
//     so none of the fitted request overheads that are 23% of Lambda's
//     TTFT) 74%; the fit leaves them -6% and +8%. The held-out Splitwise
//     Llama-2-70B prefills at tensor parallel 2 (fidelity_lengths.go)
//     agree: -8% to +5% at 256-8,192 tokens (-2% to +13% at 63%).
//   - gh100: an H100 decodes at 79% of 3.35 TB/s and prefills at 58% of
//     989 TFLOP/s (Lambda's 1,369-token step and Argonne's offline
//     prefills, as the A100's; Lambda's alone give 57%); the H200 shares
//     its kernels. Its one figure (vLLM's CI latency test,
//     fidelity_h200.go, held out) sits 12% above the model where the
//     H100's twin sits 4% above: vLLM gets less of the H200's 4.8 TB/s
//     than of the H100's 3.35 (one figure is too few to fit the H200
//     apart, so it stays held out).
//   - ad104: an L4 prefills at 38% of 121 TFLOP/s, fitted to one figure,
//     the cold ~1,460-token TTFT of Qwen2.5-7B on vLLM 0.8.5
//     (fidelity_lengths7b.go): 1.9e13 FLOPs in the ~410 ms the model's
//     fixed costs leave of 424 ms, ~46 TFLOP/s. Corroborated, not fitted:
//     PyTorch 2.9 (cu128) bf16 square matmuls on an L4 run 54.9, 59.4 and
//     56.9 TFLOP/s at 4096, 8192 and 10240 (70.9 at 2048), 45-49% of the
//     datasheet (github.com/zzc0721/torch-performance-test-data issue
//     120); the 72 W board does not hold its 2,040 MHz boost under dense
//     GEMMs, and a prefill adds attention and elementwise work to them.
//     Its bandwidth share, 0.83 of 300 GB/s, is fitted to one decode
//     figure from the same runs (one request's 512-token answers, 58.92
//     ms a token); at the shared 0.92 every memory-bound L4 row sat 4-13%
//     under the real one (GDDR6 on a 72 W board, where the seed's GDDR6
//     desktop card reaches 0.92).
//   - ga106 (the seed's RTX 3060) prefills at 78% of its 25.5 TFLOP/s,
//     fitted to one vLLM 0.15.1 figure (a 4,845-token prompt of
//     Qwen3-0.6B in 2,048-token chunks, fidelity_small.go) beside the
//     seed's, whose short prompts barely bear on MFU; its bandwidth share
//     stays the shared 0.92 that the seed's decode fits (the fit's 0.91 is
//     within a grid step). GeForce boards boost past the clock their
//     datasheet peak is quoted at, so more of that peak is reachable
//     than on a datacenter part. ga102
//     (A10G) has only held-out figures (fidelity_gpus.go: one source, too
//     few to fit two efficiencies and still judge them), which the shared
//     defaults meet within 15%, so it keeps them.
var archEfficiency = map[string]Efficiency{
	"ad104": {Arch: "ad104", MFU: 0.38, Bandwidth: 0.83, Fitted: true},
	"ga100": {Arch: "ga100", MFU: 0.68, Bandwidth: 0.75, Fitted: true},
	"ga106": {Arch: "ga106", MFU: 0.78, Bandwidth: BandwidthEfficiency, Fitted: true},
	"gh100": {Arch: "gh100", MFU: 0.58, Bandwidth: 0.79, Fitted: true},
}

// EfficiencyFor returns the efficiencies the model uses for g: its
// architecture's fitted ones, else the shared defaults.
func EfficiencyFor(g GPU) Efficiency {
	arch := gpuArch[g.Name]
	if e, ok := archEfficiency[arch]; ok {
		e.DecodeGEMMShare, e.SplitKVMMAShare = DecodeGEMMShare, splitKVShare(arch)
		return e
	}
	if arch == "" {
		arch = "default"
	}
	return Efficiency{Arch: arch, MFU: MFU, Bandwidth: BandwidthEfficiency, DecodeGEMMShare: DecodeGEMMShare, SplitKVMMAShare: splitKVShare(arch)}
}

// Efficiency returns the efficiencies this model runs with.
func (p *Perf) Efficiency() Efficiency { return p.eff }

// Datasheet is a GPU's vendor peaks, which GPU.TFLOPs and
// GPU.BandwidthGBs must equal (TestDatasheets).
type Datasheet struct {
	GPU          string
	DenseTFLOPs  float64 // dense bf16/fp16 tensor TFLOP/s with fp32 accumulate
	BandwidthGBs float64
	Source       string
}

// Datasheets are the vendor figures behind the GPU profiles. NVIDIA lists
// tensor throughput with 2:4 sparsity; dense is half of it.
var Datasheets = []Datasheet{
	{"rtx3060-12gb", 25.5, 360,
		"NVIDIA GeForce RTX 3060 specifications (12 GB GDDR6, 192-bit at 15 Gbps: 360 GB/s); the NVIDIA Ampere GA102 " +
			"whitepaper's appendix gives GeForce Ampere FP16 tensor math with FP32 accumulate at half the FP16-accumulate " +
			"rate: 28 SMs x 4 tensor cores x 128 FLOP/clk x 1.777 GHz boost = 25.5 TFLOP/s (derived, not printed)"},
	{"a10g-24gb", 125, 600,
		"NVIDIA publishes no A10G datasheet; AWS's A10G is a variant of the A10 (GA102, 24 GB GDDR6 at 600 GB/s: " +
			"baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference). NVIDIA A10 datasheet: BF16 tensor 125 TFLOP/s dense " +
			"(250 sparse). The GeForce-class 70 TFLOP/s derived before (half-rate FP32 accumulate) is refuted by a measured " +
			"A10G prefill (a10gSource: 550 tokens of Llama-3-8B in 137 ms, the engine's 7.8 TFLOP in the 123 ms left after its fixed costs, 63 TFLOP/s achieved, 90% of 70)"},
	{"l4-24gb", 121, 300,
		"NVIDIA L4 datasheet: FP16/BF16 tensor 242 TFLOP/s with sparsity (121 dense), 300 GB/s GDDR6"},
	{"a100-40gb", 312, 1555,
		"NVIDIA A100 datasheet: BF16 tensor 312 TFLOP/s dense (624 sparse); A100 40GB SXM HBM2 1,555 GB/s"},
	{"a100-80gb", 312, 2039,
		"NVIDIA A100 datasheet: BF16 tensor 312 TFLOP/s dense; A100 80GB SXM HBM2e 2,039 GB/s"},
	{"h100-80gb", 989, 3350,
		"NVIDIA H100 datasheet: H100 SXM BF16 tensor 1,979 TFLOP/s with sparsity (989 dense), HBM3 3.35 TB/s"},
	{"h200-141gb", 989, 4800,
		"NVIDIA H200 datasheet: H200 SXM BF16 tensor 1,979 TFLOP/s with sparsity (989 dense), HBM3e 4.8 TB/s"},
}

// FidelityTolerance and FidelityHeldOutTolerance are the targets: a
// figure the fit saw must be met within 15%, a held-out one within 20%.
const (
	FidelityTolerance        = 0.15
	FidelityHeldOutTolerance = 0.20
)

// FidelityResult is one cited figure beside the model's value.
type FidelityResult struct {
	Figure CitedFigure
	Model  float64 // in Figure.Unit
	Err    float64 // Model/Real - 1
	Target float64 // the tolerance that applies
}

// Within reports whether the model meets the figure's target.
func (r FidelityResult) Within() bool { return math.Abs(r.Err) <= r.Target }

// Pass reports whether the figure stands as labelled: an exempt figure
// always does, a known gap while the model still misses it, any other
// when the model meets its target.
func (r FidelityResult) Pass() bool {
	switch r.Figure.Set {
	case setExempt:
		return true
	case setGap:
		return !r.Within()
	}
	return r.Within()
}

// Figure sets, as Line prints them and TestFidelity's summary counts them.
const (
	setFit      = "fit"
	setHeldOut  = "held-out"
	setConstFit = "const-fit"
	setGap      = "gap"
	setExempt   = "exempt"
)

// Line is the figure as `go test -run Fidelity -v` prints it.
func (r FidelityResult) Line() string {
	f := r.Figure
	return fmt.Sprintf("FIDELITY %s %s %s %s real=%s model=%s err=%+.1f%% set=%s vllm=%s measured=%q source=%s",
		f.GPU, f.Model, f.Quantity, f.Config, formatValue(f.Real, f.Unit), formatValue(r.Model, f.Unit),
		100*r.Err, f.Set, f.VLLM, f.Measured, f.Source)
}

func formatValue(v float64, unit string) string {
	switch unit {
	case "s":
		return fmt.Sprintf("%.4gs", v)
	case "ms":
		return fmt.Sprintf("%.4gms", v)
	case "tokens":
		return fmt.Sprintf("%dtok", int(math.Round(v)))
	}
	return fmt.Sprintf("%.4g%s", v, unit)
}

// Evaluate computes the model's value for every cited figure with the
// stored efficiencies.
func Evaluate(figs []CitedFigure) ([]FidelityResult, error) {
	out := make([]FidelityResult, 0, len(figs))
	for _, f := range figs {
		v, err := f.modelValue()
		if err != nil {
			return nil, err
		}
		target := FidelityTolerance
		if f.HeldOut() {
			target = FidelityHeldOutTolerance
		}
		out = append(out, FidelityResult{Figure: f, Model: v, Err: v/f.Real - 1, Target: target})
	}
	return out, nil
}

// modelValue builds the figure's Perf and evaluates it.
func (f CitedFigure) modelValue() (float64, error) {
	p, err := f.perf()
	if err != nil {
		return 0, err
	}
	return f.eval(p), nil
}

// perf builds the model for the figure's GPU, model and configuration.
func (f CitedFigure) perf() (*Perf, error) {
	g, err := LookupGPU(f.GPU)
	if err != nil {
		return nil, err
	}
	m, err := lookupFidelityModel(f.Model)
	if err != nil {
		return nil, err
	}
	cfg := f.Cfg
	if cfg.VLLMVersion == "" {
		cfg.VLLMVersion = statedVersion(f.VLLM)
	}
	p, err := New(g, m, cfg)
	if err != nil {
		return nil, fmt.Errorf("perf: cited figure %s %s %s: %w", f.GPU, f.Model, f.Config, err)
	}
	return p, nil
}

// lookupFidelityModel finds a model profile, or an architecture that only
// the fidelity table uses (fidelityModels).
func lookupFidelityModel(name string) (Model, error) {
	for _, m := range fidelityModels {
		if m.Name == name {
			return m, nil
		}
	}
	return LookupModel(name)
}

// ProfileFidelity is one GPU profile's standing against its cited figures.
type ProfileFidelity struct {
	GPU      string
	Points   int     // cited figures on this GPU
	HeldOut  int     // of which judged as held out (set=held-out: not exempt, a gap or fitted to a constant)
	WorstErr float64 // largest |error| over non-exempt figures, known gaps included (0 without any)
}

// FidelityByGPU summarises Evaluate(FidelityFigures) per GPU profile, in
// profile order, for `servebench engine --list-profiles`.
func FidelityByGPU() ([]ProfileFidelity, error) {
	figs, err := FidelityFigures()
	if err != nil {
		return nil, err
	}
	res, err := Evaluate(figs)
	if err != nil {
		return nil, err
	}
	by := map[string]*ProfileFidelity{}
	for _, g := range gpus {
		by[g.Name] = &ProfileFidelity{GPU: g.Name}
	}
	for _, r := range res {
		pf := by[r.Figure.GPU]
		pf.Points++
		if r.Figure.Set == setHeldOut {
			pf.HeldOut++
		}
		if r.Figure.Set != setExempt {
			pf.WorstErr = max(pf.WorstErr, math.Abs(r.Err))
		}
	}
	out := make([]ProfileFidelity, 0, len(gpus))
	for _, g := range gpus {
		out = append(out, *by[g.Name])
	}
	return out, nil
}
