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
	// decodeGEMMShare and splitKVMMAShare are the package's
	// DecodeGEMMShare and, where the architecture's vLLM decode runs
	// FlashAttention-2's split-KV kernel (data/archs.json), its
	// SplitKVMMAShare (0 elsewhere), set by EfficiencyFor; fields so that
	// the fit (fit_test.go) can try other values.
	decodeGEMMShare, splitKVMMAShare float64
	// Fitted reports whether the values were fitted to cited figures
	// (FidelityFigures, TestFidelity); otherwise they are the shared
	// defaults MFU and BandwidthEfficiency, met by the seed's RTX 3060.
	Fitted bool
}

// EfficiencyFor returns the efficiencies the model uses for g: its
// architecture's (data/archs.json), the shared MFU and BandwidthEfficiency
// where the architecture has no fitted value.
func EfficiencyFor(g GPU) Efficiency {
	a := archOfGPU(g)
	e := Efficiency{Arch: g.Arch, MFU: a.MFU, Bandwidth: a.Bandwidth, Fitted: a.Fitted,
		decodeGEMMShare: DecodeGEMMShare, splitKVMMAShare: splitKVShare(g.Arch)}
	if e.MFU == 0 {
		e.MFU = MFU
	}
	if e.Bandwidth == 0 {
		e.Bandwidth = BandwidthEfficiency
	}
	return e
}

// Efficiency returns the efficiencies this model runs with.
func (p *Perf) Efficiency() Efficiency { return p.eff }

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
// the cited figures use (data/models.json cited_only).
func lookupFidelityModel(name string) (Model, error) { return lookupModel(name, true) }

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
	gpus := GPUs()
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
