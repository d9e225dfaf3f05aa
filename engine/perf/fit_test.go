package perf

// The fit of the engine's constants to the cited figures: TestFidelity
// runs it and fails when a stored constant strays from what it finds.

import (
	"math"
	"time"
)

// fitResult is the fitted efficiencies of one architecture and the
// training figures they were fitted to.
type fitResult struct {
	Eff     Efficiency
	Figures []CitedFigure
	Loss    float64 // sum of squared log errors at Eff
}

// Fit grid-step and ranges: MFU and bandwidth share stay within what
// well-tuned kernels reach (a fit outside would mean a wrong figure or a
// wrong datasheet, not an efficiency).
const (
	fitStep              = 0.01
	fitMFUMin, fitMFUMax = 0.30, 0.80
	fitBWMin, fitBWMax   = 0.60, 0.95
)

// archOf is the architecture of the GPU profile named gpu ("" if none).
func archOf(gpu string) string {
	g, err := LookupGPU(gpu)
	if err != nil {
		return ""
	}
	return g.Arch
}

// fitEfficiencies fits MFU and bandwidth share per architecture to the
// time figures (TTFT and decode) not held out. The seed's architecture is
// fitted like the others: its seed figures are in its training set, so
// the fit keeps the seed table where the seed has it.
func fitEfficiencies(figs []CitedFigure) ([]fitResult, error) {
	byArch := map[string][]CitedFigure{}
	for _, f := range figs {
		if f.Set != setFit || (f.Quantity != quantityTTFT && f.Quantity != quantityDecode) {
			continue
		}
		arch := archOf(f.GPU)
		byArch[arch] = append(byArch[arch], f)
	}
	var out []fitResult
	for _, a := range sortedKeys(byArch) {
		train := byArch[a]
		best := fitResult{Loss: math.Inf(1), Figures: train}
		ps, err := fitModels(train)
		if err != nil {
			return nil, err
		}
		mfus, bws := fitGrid(train)
		for _, mfu := range mfus {
			for _, bw := range bws {
				e := Efficiency{Arch: a, MFU: mfu, Bandwidth: bw, Fitted: true, decodeGEMMShare: DecodeGEMMShare, splitKVMMAShare: splitKVShare(a)}
				if loss := fitLoss(train, ps, e); loss < best.Loss {
					best.Eff, best.Loss = e, loss
				}
			}
		}
		out = append(out, best)
	}
	return out, nil
}

// shareFit is DecodeGEMMShare as fitted and its training figures.
type shareFit struct {
	Share   float64
	Figures []CitedFigure
	Loss    float64 // sum of squared log errors at Share
}

// fitDecodeGEMMShare fits the one share shared by every architecture to
// the figures that name it in their fits column, each with its
// architecture's stored efficiencies (which no such figure bears on:
// their fit takes batch-1 decode and prefill steps, to which the share
// adds nothing), by a grid search over 0..1 minimising the squared log
// error.
func fitDecodeGEMMShare(figs []CitedFigure) (shareFit, error) {
	share, fitted, loss, err := fitScalar(figs, "DecodeGEMMShare", gridRange(0, 1),
		func(p *Perf, v float64) { p.eff.decodeGEMMShare = v })
	return shareFit{Share: share, Figures: fitted, Loss: loss}, err
}

// fitSplitKVMMAShare fits SplitKVMMAShare to the figures that name it,
// each with its architecture's stored efficiencies, by
// a grid search over 0.01..1 minimising the squared log error.
func fitSplitKVMMAShare(figs []CitedFigure) (shareFit, error) {
	share, fitted, loss, err := fitScalar(figs, "SplitKVMMAShare", gridRange(0.01, 1),
		func(p *Perf, v float64) { p.eff.splitKVMMAShare = v })
	return shareFit{Share: share, Figures: fitted, Loss: loss}, err
}

// durationFit is a time constant as fitted and the figures it was fitted
// to (those that name it).
type durationFit struct {
	Value   time.Duration
	Figures []CitedFigure
	Loss    float64 // sum of squared log errors at Value
}

// fitMicroseconds fits the time constant named constant to its figures
// by fitScalar over 0..maxUS us in 1 us steps; set puts a value into a
// figure's model.
func fitMicroseconds(figs []CitedFigure, constant string, maxUS int, set func(*Perf, time.Duration)) (durationFit, error) {
	var grid []float64
	for us := 0; us <= maxUS; us++ {
		grid = append(grid, float64(us))
	}
	us, fitted, loss, err := fitScalar(figs, constant, grid, func(p *Perf, v float64) { set(p, time.Duration(v)*time.Microsecond) })
	return durationFit{Value: time.Duration(us) * time.Microsecond, Figures: fitted, Loss: loss}, err
}

// fitScalar fits one constant by grid search: the figures that name it
// (CitedFigure.Fits), each model run with set(model, v) for every v of grid; it
// returns the first v of least squared log error, those figures and the
// loss there.
func fitScalar(figs []CitedFigure, constant string, grid []float64, set func(*Perf, float64)) (best float64, fitted []CitedFigure, loss float64, err error) {
	for _, f := range figs {
		if f.Fits == constant {
			fitted = append(fitted, f)
		}
	}
	ps, err := fitModels(fitted)
	if err != nil {
		return 0, nil, 0, err
	}
	loss = math.Inf(1)
	for _, v := range grid {
		var l float64
		for i, f := range fitted {
			set(ps[i], v)
			d := math.Log(f.eval(ps[i]) / f.Real)
			l += d * d
		}
		if l < loss {
			best, loss = v, l
		}
	}
	return best, fitted, loss, nil
}

// fitGrid is the MFU and bandwidth-share values the fit tries for one
// architecture's training figures. A share no training figure bears on
// stays at the shared default (one prefill figure fits MFU, not bandwidth
// as well), so it takes the one value.
func fitGrid(train []CitedFigure) (mfus, bws []float64) {
	var ttft, decode bool
	for _, f := range train {
		ttft = ttft || f.Quantity == quantityTTFT
		decode = decode || f.Quantity == quantityDecode
	}
	mfus, bws = []float64{MFU}, []float64{BandwidthEfficiency}
	if ttft {
		mfus = gridRange(fitMFUMin, fitMFUMax)
	}
	if decode {
		bws = gridRange(fitBWMin, fitBWMax)
	}
	return mfus, bws
}

// gridRange is lo..hi in fitStep steps, rounded to the step.
func gridRange(lo, hi float64) []float64 {
	var out []float64
	for x := lo; x <= hi+1e-9; x += fitStep {
		out = append(out, round2(x))
	}
	return out
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// fitModels builds each figure's model once for a fit, which then re-runs
// it at every efficiency it tries: only Perf.eff changes between tries.
func fitModels(figs []CitedFigure) ([]*Perf, error) {
	ps := make([]*Perf, len(figs))
	for i, f := range figs {
		p, err := f.perf()
		if err != nil {
			return nil, err
		}
		ps[i] = p
	}
	return ps, nil
}

// fitLoss is the sum of squared log errors of figs, whose models are ps
// (fitModels), at the efficiencies e.
func fitLoss(figs []CitedFigure, ps []*Perf, e Efficiency) float64 {
	var loss float64
	for i, f := range figs {
		ps[i].eff = e
		d := math.Log(f.eval(ps[i]) / f.Real)
		loss += d * d
	}
	return loss
}

// fitMXFP4MoELatency fits MXFP4MoELayerLatency to its figures by a grid
// search over 0..200 us in 1 us steps minimising the squared log error.
func fitMXFP4MoELatency(figs []CitedFigure) (durationFit, error) {
	return fitMicroseconds(figs, "MXFP4MoELayerLatency", 200, func(p *Perf, d time.Duration) { p.mxfp4Latency = d })
}

// fitV0SeqOverhead fits V0SeqOverhead to its figures, each replayed at
// its release, by a grid search over 0..100 us in 1 us steps minimising
// the squared log error.
func fitV0SeqOverhead(figs []CitedFigure) (durationFit, error) {
	return fitMicroseconds(figs, "V0SeqOverhead", 100, func(p *Perf, d time.Duration) { p.loop.v0Seq = d })
}
