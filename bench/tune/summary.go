package tune

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/workload"
)

// LevelMaxRate names the level of a --find-max-rate tune: each repeat's
// last run at its found rate (its re-check).
const LevelMaxRate = "max-rate"

// DefaultLadderTarget is the attainment a ladder's level must reach to
// hold an SLO's per-request keys (--find-max-rate gives its own).
const DefaultLadderTarget = 99.0

// unitRun is one unit's results as the summary reads them.
type unitRun struct {
	repeat int
	res    *result.Results
	gpus   int
}

// summarize reads every finished unit's results.json and fills each
// treatment's start-up, levels and max rate, then the answer.
func (o *Options) summarize(t *result.Tune) {
	byT := make([][]unitRun, len(t.Treatments))
	t.Clock, t.Speedup = result.ClockWall, 0
	for _, u := range t.Units {
		if !u.Done {
			continue
		}
		res, _, err := result.LoadResults(filepath.Join(o.Session.Dir, u.Dir))
		if err != nil {
			t.Warnings = append(t.Warnings, fmt.Sprintf("%s: %v", u.Dir, err))
			continue
		}
		// Every figure in the clock the unit recorded (--clock; modelled by
		// default for a sped-up bundled engine): result.Shown converts.
		if c := result.ClockOf(res); c.Modelled() {
			t.Clock, t.Speedup = result.ClockModelled, c.Speedup
		} else if c.Speedup > 1 {
			t.Speedup = c.Speedup
		}
		ur := unitRun{repeat: u.Repeat, res: result.Shown(res), gpus: o.GPUs}
		if slo := shownSLO(ur.res); slo != "" {
			t.SLO = slo // as typed: in the tune's clock
		}
		if ur.gpus == 0 {
			ur.gpus = 1
			if bd := res.Server.Bundled; bd != nil {
				ur.gpus = max(1, bd.TensorParallelSize) * max(1, bd.PipelineParallelSize)
			}
		}
		if u.Error != "" {
			t.Treatments[u.Treatment].Notes = append(t.Treatments[u.Treatment].Notes, fmt.Sprintf("repeat %d: %s", u.Repeat, u.Error))
		}
		byT[u.Treatment] = append(byT[u.Treatment], ur)
	}
	target := t.Target
	if target == 0 {
		target = DefaultLadderTarget
	}
	for i := range t.Treatments {
		tr := &t.Treatments[i]
		units := byT[i]
		slices.SortFunc(units, func(a, b unitRun) int { return cmp.Compare(a.repeat, b.repeat) })
		tr.Repeats = len(units)
		if len(units) > 0 {
			tr.GPUs = units[0].gpus
		}
		tr.Startup = startupFigures(units)
		tr.Levels = levels(units, target, o.GPUHourPrice)
		tr.MaxRate = maxRate(units, tr)
	}
	t.Answer, t.Comparisons = answer(t)
}

// startupFigures are the start-up phases and KV capacity across repeats,
// in the tune's clock (the engine's --startup-speedup undone).
func startupFigures(units []unitRun) []result.TuneFigure {
	keys := []string{"health_ok_s", "first_token_s", "weights_load_s", "kv_cache_tokens"}
	vals := make([][]float64, len(keys))
	for _, u := range units {
		st := u.res.Server.Startup
		if st == nil {
			continue
		}
		for k, p := range []*float64{st.HealthOKS, st.FirstTokenS, st.WeightsLoadS} {
			if p != nil {
				vals[k] = append(vals[k], *p)
			}
		}
		if st.KVCacheTokens != nil {
			vals[3] = append(vals[3], float64(*st.KVCacheTokens))
		}
	}
	var out []result.TuneFigure
	for k, key := range keys {
		if iv := meanInterval(vals[k]); iv != nil {
			out = append(out, result.TuneFigure{Key: key, Interval: *iv})
		}
	}
	return out
}

// levels are the treatment's load levels across repeats, in the order the
// first repeat ran them; a search's steps are left out but for its
// answer's run (LevelMaxRate).
func levels(units []unitRun, target, price float64) []result.TuneLevel {
	var names []string
	perLevel := map[string][][]float64{} // level -> figure index -> values
	held := map[string]int{}
	for _, u := range units {
		for _, lr := range levelRuns(u.res) {
			name, run := lr.name, lr.run
			if _, ok := perLevel[name]; !ok {
				names = append(names, name)
				perLevel[name] = make([][]float64, len(figureKeys))
			}
			for k, v := range runFigures(run, u.gpus, price) {
				if v != nil {
					perLevel[name][k] = append(perLevel[name][k], *v)
				}
			}
			if HoldsSLO(run, target) {
				held[name]++
			}
		}
	}
	out := make([]result.TuneLevel, 0, len(names))
	for _, name := range names {
		lv := result.TuneLevel{Name: name}
		for k, key := range figureKeys {
			if iv := meanInterval(perLevel[name][k]); iv != nil {
				lv.Figures = append(lv.Figures, result.TuneFigure{Key: key, Interval: *iv})
			}
		}
		if h, ok := held[name]; ok || slices.ContainsFunc(units, func(u unitRun) bool { return hasSLO(u.res) }) {
			lv.SLOHeld = &h
		}
		out = append(out, lv)
	}
	return out
}

type levelRun struct {
	name string
	run  *result.Run
}

// levelRuns are a unit's runs by level: every run of a ladder; of a
// search, the last run at its answer (the re-check, when one was made).
func levelRuns(res *result.Results) []levelRun {
	if mr := res.MaxRate; mr != nil {
		for i := len(res.Runs) - 1; i >= 0; i-- {
			r := &res.Runs[i]
			if r.Workload.Mode == workload.ModeRate && r.Workload.Rate == mr.RatePerS && mr.RatePerS > 0 {
				return []levelRun{{LevelMaxRate, r}}
			}
		}
		return nil
	}
	out := make([]levelRun, len(res.Runs))
	for i := range res.Runs {
		out[i] = levelRun{res.Runs[i].Name, &res.Runs[i]}
	}
	return out
}

// shownSLO is the SLO res's runs were judged against, in res's clock.
func shownSLO(res *result.Results) string {
	if res.MaxRate != nil {
		return res.MaxRate.SLO
	}
	for _, r := range res.Runs {
		if r.Goodput != nil {
			return r.Goodput.SLO
		}
	}
	return ""
}

func hasSLO(res *result.Results) bool {
	return len(res.Runs) > 0 && res.Runs[0].Goodput != nil
}

// HoldsSLO reports whether run met its SLO: its percentile keys within
// their bounds, and at least target percent of its requests attaining the
// other keys.
func HoldsSLO(run *result.Run, target float64) bool { return run.Goodput.Held(target) }

// figureKeys are the figures of a level, in the order runFigures gives them.
var figureKeys = []string{result.FigOutputTokS, result.FigOutputTokSPerGPU, result.FigTokSPerUser, result.FigRequestsS, result.FigTTFTP99,
	result.FigTPOTMedian, result.FigTPOTP99, result.FigE2EMedian, result.FigE2EP99, result.FigAttainment, result.FigUSDPerMTok}

// runFigures are run's figures (run already in the tune's clock), nil
// where the run has none.
func runFigures(run *result.Run, gpus int, price float64) []*float64 {
	f := make([]*float64, len(figureKeys))
	set := func(k int, v float64) { f[k] = &v }
	c := run.Client
	if tps := run.Throughput.OutputTokensPerS; tps > 0 {
		set(0, tps)
		set(1, tps/float64(gpus))
		if price > 0 {
			set(10, price*float64(gpus)/3600/tps*1e6)
		}
	}
	if c.TPOTS != nil && c.TPOTS.Median > 0 {
		set(2, 1/c.TPOTS.Median)
		set(5, c.TPOTS.Median)
		set(6, c.TPOTS.P99)
	}
	set(3, run.Throughput.RequestsPerS)
	if c.FirstTokenS != nil {
		set(4, c.FirstTokenS.P99)
	}
	if c.E2ES != nil {
		set(7, c.E2ES.Median)
		set(8, c.E2ES.P99)
	}
	if run.Goodput != nil {
		set(9, run.Goodput.Attainment)
	}
	return f
}

// maxRate is the search's answer across repeats, in the tune's clock.
func maxRate(units []unitRun, tr *result.TuneTreatment) *result.Interval {
	var xs []float64
	for _, u := range units {
		mr := u.res.MaxRate
		if mr == nil {
			continue
		}
		xs = append(xs, mr.RatePerS)
		if mr.Note != "" {
			tr.Notes = append(tr.Notes, fmt.Sprintf("repeat %d: %s", u.repeat, mr.Note))
		}
	}
	return meanInterval(xs)
}

// candidate is a treatment's best showing: its figure's runs at its best
// level.
type candidate struct {
	name  string
	level string
	iv    *result.Interval
}

// answer recommends under the SLO: with a search, the treatment with the
// highest max rate; with a ladder, the one whose best level meeting the SLO
// in every repeat has the most output tokens/s per GPU. Its runner-up and
// every other treatment are compared with it across repeats.
func answer(t *result.Tune) (*result.TuneAnswer, []result.TuneComparison) {
	var cands []candidate
	figure, unit := result.FigOutputTokSPerGPU, "tokens/s per GPU"
	if t.Target > 0 {
		figure, unit = result.FigMaxRate, "req/s"
	}
	for i := range t.Treatments {
		tr := &t.Treatments[i]
		if c, ok := best(tr, figure); ok {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return &result.TuneAnswer{Figure: figure, Text: "no treatment met the SLO in every repeat"}, nil
	}
	slices.SortStableFunc(cands, func(a, b candidate) int { return cmp.Compare(b.iv.Mean, a.iv.Mean) })
	a := &result.TuneAnswer{Figure: figure, Best: cands[0].label()}
	a.Text = fmt.Sprintf("recommended: %s, %s %s [%s, %s] (95%%, n=%d runs)", a.Best, figure,
		num(cands[0].iv.Mean), num(cands[0].iv.Lo), num(cands[0].iv.Hi), cands[0].iv.N)
	var comps []result.TuneComparison
	for i, c := range cands[1:] {
		cmpr := compare(cands[0].label(), c.label(), figure, cands[0].iv.Values, c.iv.Values, true, unit)
		comps = append(comps, cmpr)
		if i == 0 {
			a.RunnerUp, a.Compare = c.label(), &comps[0]
			a.Text += fmt.Sprintf("; runner-up %s, %s %s [%s, %s]; %s", a.RunnerUp, figure, num(c.iv.Mean), num(c.iv.Lo), num(c.iv.Hi), cmpr.Text)
		}
	}
	if t.SLO != "" {
		a.Text += fmt.Sprintf(" (SLO %s)", t.SLO)
	}
	return a, comps
}

func (c candidate) label() string {
	if c.level == "" || c.level == LevelMaxRate {
		return c.name
	}
	return c.name + " at " + c.level
}

// best is tr's best showing on figure: its max rate, or its best level
// whose SLO (if any) held in every repeat.
func best(tr *result.TuneTreatment, figure string) (candidate, bool) {
	if figure == result.FigMaxRate {
		return candidate{name: tr.Name, iv: tr.MaxRate}, tr.MaxRate != nil && tr.MaxRate.Mean > 0
	}
	var c candidate
	for i := range tr.Levels {
		lv := &tr.Levels[i]
		iv := lv.Figure(figure)
		if iv == nil || lv.SLOHeld != nil && *lv.SLOHeld < iv.N {
			continue
		}
		if c.iv == nil || iv.Mean > c.iv.Mean {
			c = candidate{name: tr.Name, level: lv.Name, iv: iv}
		}
	}
	return c, c.iv != nil
}

// num writes a figure with 3 significant digits.
func num(v float64) string {
	s := fmt.Sprintf("%.3g", v)
	if strings.Contains(s, "e+") {
		s = fmt.Sprintf("%.0f", v)
	}
	return s
}
