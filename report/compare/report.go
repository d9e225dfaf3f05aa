package compare

import (
	"fmt"
	"math"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// Report is the outcome of Compare. Its JSON form is the json output format.
type Report struct {
	Alpha      float64 `json:"alpha"`
	MinSamples int     `json:"min_samples"` // successful requests needed per side and run
	Test       string  `json:"test"`
	Clock      string  `json:"clock,omitempty"` // which time the figures are in, when a side was sped up
	// Mode says which test stands behind the verdicts (ModeRuns,
	// ModeHistory, ModeLimits, ModeRequests); RunsBase, RunsNew how many
	// runs of each run name a side holds.
	Mode     string `json:"mode"`
	RunsBase int    `json:"runs_base"`
	RunsNew  int    `json:"runs_new"`
	// Gated counts the figures whose p-values were Holm-adjusted together
	// (ModeRuns, ModeHistory: those with a limit).
	Gated       int         `json:"gated,omitempty"`
	Base        SideInfo    `json:"base"`
	New         SideInfo    `json:"new"`
	ServerDiffs []Diff      `json:"server_differences"` // shown, never refused
	Thresholds  []Threshold `json:"thresholds"`         // active: defaults overlaid with Options
	Forced      bool        `json:"forced,omitempty"`
	Runs        []RunReport `json:"runs"`
	OnlyInBase  []string    `json:"only_in_base,omitempty"`
	OnlyInNew   []string    `json:"only_in_new,omitempty"`
}

// SideInfo is what a report shows about one side: where it came from and
// its manifest.
type SideInfo struct {
	Path     string          `json:"path"`
	Manifest result.Manifest `json:"manifest"`
	Server   result.Server   `json:"server"`
	Warnings []string        `json:"warnings,omitempty"`
}

func sideInfo(s *Side) SideInfo {
	w := append([]string(nil), s.Results.Warnings...)
	return SideInfo{Path: s.Path, Manifest: s.Results.Manifest, Server: s.Results.Server, Warnings: append(w, s.Warnings...)}
}

// RunReport compares one run.
type RunReport struct {
	Name          string          `json:"name"`
	Stream        bool            `json:"stream"`
	Workload      result.Workload `json:"workload"`                       // the base side's
	WorkloadDiffs []Diff          `json:"workload_differences,omitempty"` // only with Force
	// Unchecked lists workload fields that could not be checked: a side
	// from another tool (vLLM's benchmark) does not record them.
	Unchecked []string `json:"workload_unchecked,omitempty"`
	Base      Counts   `json:"base"`
	New       Counts   `json:"new"`
	Rows      []Row    `json:"rows"`
}

// Counts are a run side's measured requests.
type Counts struct {
	Measured int `json:"measured"`
	OK       int `json:"ok"`
	Failed   int `json:"failed"`
}

// Verdicts of a Row.
const (
	VerdictRegression  = "REGRESSION"
	VerdictWorse       = "worse, within limit" // significant, not past its threshold
	VerdictWorseNoGate = "worse"               // significant, no threshold set
	VerdictBetter      = "better"
	VerdictSame        = "~" // no significant change
	VerdictNoTest      = "no test"
	VerdictUnconfirmed = "past limit, unconfirmed" // engine figure past its limit, client figure did not move
	VerdictNotJudged   = "not judged"
	VerdictWithinLimit = "within limit" // one run a side: not past its limit, noise unknown
)

// Row is one statistic of one quantity in one run.
type Row struct {
	Quantity string   `json:"quantity"`
	Stat     string   `json:"stat"`
	Unit     string   `json:"unit"`
	Base     float64  `json:"base"`
	New      float64  `json:"new"`
	Change   *float64 `json:"change"` // (new-base)/base; null when base is 0
	P        *float64 `json:"p"`      // null: no significance test; run-level when Runs is set
	// RequestP is the per-request Mann-Whitney p-value when the verdict
	// rests on runs (or on the limits alone): shown, not gating.
	RequestP *float64 `json:"p_requests,omitempty"`
	// Runs is the run-level evidence (ModeRuns, ModeHistory); NBase and
	// NNew then count runs, not requests.
	Runs        *RunLevel `json:"runs,omitempty"`
	NBase       int       `json:"n_base"` // samples (or engine count) behind each side
	NNew        int       `json:"n_new"`
	Significant bool      `json:"significant"`
	Threshold   string    `json:"threshold,omitempty"`
	Past        bool      `json:"past_threshold"`
	Regression  bool      `json:"regression"`
	Verdict     string    `json:"verdict"`
	Note        string    `json:"note,omitempty"`

	// Confirmed names the client test that stands in for an engine
	// figure's missing one, e.g. "client.first_token p<0.001 worse".
	Confirmed string `json:"confirmed_by,omitempty"`

	confirmedWorse bool
	// becameClumped: the base side's streams were smooth, the new side's
	// came in clumps (burst share rows; quantity.past).
	becameClumped bool
	limitsOnly    bool // judged by its limit alone (ModeLimits)
	// Throughput rows: the median per-request output tokens/s of each side.
	rateBase, rateNew float64
}

// Key is "QUANTITY.STAT".
func (r Row) Key() string { return r.Quantity + "." + r.Stat }

// evidence is what a regression of the row rests on: its own test, or, for
// an engine figure, which has none, the client test that confirmed it.
func (r Row) evidence() string {
	switch {
	case r.Runs != nil:
		return fmt.Sprintf("%s across runs, %s, 95%% %s", pPhrase(r.P), r.Runs.Test, fmtInterval(r.Runs))
	case r.P == nil && r.Confirmed != "":
		return "confirmed by " + r.Confirmed
	case r.limitsOnly:
		return "past its limit; one run a side, run-to-run noise unknown"
	}
	return pPhrase(r.P)
}

// Regressed reports whether any row of any run is a regression.
func (r *Report) Regressed() bool { return len(r.Regressions()) > 0 }

// Regressions lists the regressions as `run: quantity.stat +12.3% (p=0.001)`.
func (r *Report) Regressions() []string {
	var out []string
	for _, run := range r.Runs {
		for _, row := range run.Rows {
			if row.Regression {
				key := row.Key()
				if q, _ := lookupQuantity(row.Quantity); q.Aspect != "" {
					key += " (" + q.Aspect + ")"
				}
				out = append(out, fmt.Sprintf("%s: %s %s (%s -> %s, %s)", run.Name, key, fmtChange(row.Change), fmtValue(row.Base, row.Unit), fmtValue(row.New, row.Unit), row.evidence()))
			}
		}
	}
	return out
}

// compareRun builds the rows of one run: each quantity's headline
// statistic, plus every statistic that has a threshold.
func compareRun(p runPair, th map[string]Threshold, alpha float64, minN int) RunReport {
	shown := p.b
	if p.baseForeign { // a vLLM result records less of its workload than servebench
		shown = p.n
	}
	rr := RunReport{
		Name: shown.Name, Stream: shown.Stream, Workload: shown.Workload, WorkloadDiffs: p.diffs, Unchecked: p.unchecked,
		Base: Counts{p.sb.measured, p.sb.ok(), p.sb.failed},
		New:  Counts{p.sn.measured, p.sn.ok(), p.sn.failed},
	}
	for _, q := range quantities {
		for _, stat := range q.Stats {
			t, has := th[q.Name+"."+stat]
			if stat != q.Headline && !has {
				continue
			}
			row, ok := buildRow(q, stat, p, alpha, minN)
			if !ok {
				continue
			}
			overBursts(&row, p)
			row.becameClumped = !stutters(p.b, p.sb) && stutters(p.n, p.sn)
			if has {
				row.Threshold = t.String()
				row.Past = q.past(t, &row)
				if q.src == fromThroughput {
					// The run figure has no samples to test; it counts only
					// when the tested per-request rates moved as far too.
					row.Past = row.Past && t.past(row.rateBase, row.rateNew, false)
				}
			}
			judge(&row, q, has, alpha)
			rr.Rows = append(rr.Rows, row)
		}
	}
	return rr
}

// overBursts leaves ITL and TPOT unjudged when one side's tokens arrived
// in bursts and the other's did not: a buffering proxy collapses the gaps inside a burst
// to ~0 and stretches the first token, so a "better" ITL or TPOT there is
// a stream that stutters. client.burst_share judges that (smoothness).
func overBursts(row *Row, p runPair) {
	if row.Quantity != "client.itl" && row.Quantity != "client.tpot" {
		return
	}
	b, n := p.sb.stat("client.burst_share", "median"), p.sn.stat("client.burst_share", "median")
	if stutters(p.b, p.sb) == stutters(p.n, p.sn) {
		return // both smooth, or both held and clumped (the same proxy): like for like
	}
	row.Verdict = VerdictNotJudged
	row.Note = fmt.Sprintf("computed over bursts (median share of tokens in bursts: base %.0f%%, new %.0f%%): "+
		"it measures the bursts, not the engine; smoothness (client.burst_share) judges this", 100*b, 100*n)
}

// stutters says whether a run side's streams were held by something on
// the way: its tokens came in clumps (runSamples.clumped) and its first
// visible output came well after the engine's first token (mean against
// mean, at least twice the engine's TTFT and heldMin more). An engine so
// fast that a whole answer fits in one read (a few hundred microseconds,
// sped up 200x) clumps without being held, and keeps its ITL and TPOT.
// Without engine figures, clumps alone decide.
func stutters(r *result.Run, s *runSamples) bool {
	if !s.clumped() {
		return false
	}
	fv, ttft := r.Client.FirstVisibleS, r.Engine.TTFTS
	if fv == nil || ttft == nil || ttft.Count <= 0 {
		return true
	}
	return fv.Mean-ttft.Mean >= max(ttft.Mean, heldMin)
}

// heldMin is how much later than the engine's first token the client must
// see it for its stream to count as held: far above the client's own
// overhead (tens of microseconds) and a loaded host's scheduling noise.
const heldMin = 0.005

// buildRow fills base, new, change and p; false when neither side has the
// quantity (e.g. ITL of a non-streaming run).
func buildRow(q quantity, stat string, p runPair, alpha float64, minN int) (Row, bool) {
	row := Row{Quantity: q.Name, Stat: stat, Unit: q.unitOf(stat)}
	has := true
	switch q.src {
	case fromSamples:
		has = row.fillSamples(q, stat, p, minN)
	case fromEngine:
		has = row.fillEngine(q, stat, p, alpha, minN)
	case fromThroughput:
		row.fillThroughput(q, stat, p)
	case fromGoodput:
		has = row.fillGoodput(q, stat, p)
	case fromErrors:
		row.Base, row.New = frac(p.sb.failed, p.sb.measured), frac(p.sn.failed, p.sn.measured)
		row.NBase, row.NNew = p.sb.measured, p.sn.measured
		row.P = p.test(q.Name)
	}
	if !has {
		return row, false
	}
	row.Change = relChange(row.Base, row.New)
	return row, true
}

// fillSamples fills a row from per-request samples; false when neither
// side recorded any.
func (r *Row) fillSamples(q quantity, stat string, p runPair, minN int) bool {
	nb, nn := len(p.sb.samples(q.Name)), len(p.sn.samples(q.Name))
	if nb == 0 && nn == 0 {
		return false
	}
	r.NBase, r.NNew = nb, nn
	r.Base, r.New = p.sb.stat(q.Name, stat), p.sn.stat(q.Name, stat)
	switch {
	case nb == 0 || nn == 0:
		r.Note = "recorded by one side only"
		r.Verdict = VerdictNotJudged
	case nb < minN || nn < minN:
		r.Note = fmt.Sprintf("too few samples (base %d, new %d; need %d each)", nb, nn, minN)
		r.Verdict = VerdictNotJudged
	default:
		r.P = p.test(q.Name)
	}
	return true
}

// fillEngine fills a row from the engines' /metrics histograms; false when
// neither side exported one.
func (r *Row) fillEngine(q quantity, stat string, p runPair, alpha float64, minN int) bool {
	hb, hn := engineHist(&p.b.Engine, q.Name), engineHist(&p.n.Engine, q.Name)
	if hb == nil && hn == nil {
		return false
	}
	if hb == nil || hn == nil {
		r.Note = "exported by one side only"
		r.Verdict = VerdictNotJudged
		r.Base, r.New = histOrNaN(hb, stat), histOrNaN(hn, stat)
		return true
	}
	r.Base, r.New = histStat(hb, stat), histStat(hn, stat)
	r.NBase, r.NNew = int(hb.Count), int(hn.Count)
	r.Note = noteEngine
	if stat != "mean" {
		r.Note += " (bucket estimate)"
	}
	if r.NBase < minN || r.NNew < minN {
		r.Note = fmt.Sprintf("engine counted too few requests (base %d, new %d; need %d each)", r.NBase, r.NNew, minN)
		r.Verdict = VerdictNotJudged
	}
	r.Confirmed, r.confirmedWorse = confirmation(q, p, alpha)
	return true
}

// fillThroughput fills a row from the runs' throughput, tested on the
// per-request token rates.
func (r *Row) fillThroughput(q quantity, stat string, p runPair) {
	r.Base, r.New = p.b.Throughput.OutputTokensPerS, p.n.Throughput.OutputTokensPerS
	if stat == "requests_per_s" {
		r.Base, r.New = p.b.Throughput.RequestsPerS, p.n.Throughput.RequestsPerS
	}
	r.NBase, r.NNew = len(p.sb.rates), len(p.sn.rates)
	r.P = p.test(q.Name)
	r.rateBase, r.rateNew = p.sb.stat(q.Name, "median"), p.sn.stat(q.Name, "median")
	r.Note = noteThroughput
}

// fillGoodput fills a row from SLO attainment; false without an SLO.
func (r *Row) fillGoodput(q quantity, stat string, p runPair) bool {
	if p.sb.attained == nil {
		return false
	}
	r.Base, r.New = frac(p.sb.nAttained, p.sb.measured), frac(p.sn.nAttained, p.sn.measured)
	if stat == "rate_per_s" {
		r.Base, r.New = perSecond(p.sb.nAttained, p.b.DurationS), perSecond(p.sn.nAttained, p.n.DurationS)
	}
	r.NBase, r.NNew = p.sb.measured, p.sn.measured
	r.P = p.test(q.Name)
	r.Note = p.sloNote
	return true
}

// judge sets Significant, Regression and Verdict of a row buildRow did not
// already mark as not judged.
func judge(row *Row, q quantity, hasThreshold bool, alpha float64) {
	if row.Verdict != "" {
		return
	}
	if q.src == fromEngine {
		switch {
		case row.Past && row.confirmedWorse:
			row.Regression, row.Verdict = true, VerdictRegression
		case row.Past:
			row.Verdict = VerdictUnconfirmed
		default:
			row.Verdict = VerdictNoTest
		}
		return
	}
	worse := row.New > row.Base
	if !q.higherIsWorse() {
		worse = row.New < row.Base
	}
	row.Significant = row.P != nil && *row.P < alpha
	if q.src == fromThroughput && worse != (row.rateNew < row.rateBase) {
		// The run figure and the tested per-request rates disagree on
		// the direction: no finding either way.
		row.Significant = false
	}
	testedVerdict(row, worse, hasThreshold)
}

// testedVerdict sets the verdict of a row whose Significant a test has
// decided (per request or across runs): the change's direction, and
// whether it is past its limit.
func testedVerdict(row *Row, worse, hasThreshold bool) {
	switch {
	case !row.Significant || row.New == row.Base:
		row.Verdict = VerdictSame
	case !worse:
		row.Verdict = VerdictBetter
	case row.Past:
		row.Regression, row.Verdict = true, VerdictRegression
	case hasThreshold:
		row.Verdict = VerdictWorse
	default:
		row.Verdict = VerdictWorseNoGate
	}
}

func histOrNaN(h *result.Hist, stat string) float64 {
	if h == nil {
		return math.NaN()
	}
	return histStat(h, stat)
}

// test is the Mann-Whitney p-value of quantity name's samples, base
// against new, or nil when a side has none. Each quantity is tested once:
// its rows and the engine rows it confirms share the outcome, each row
// with its own copy.
func (p runPair) test(name string) *float64 {
	pv, ok := p.pvals[name]
	if !ok {
		if res, err := stats.MannWhitney(p.sb.samples(name), p.sn.samples(name)); err == nil {
			pv = &res.P
		}
		p.pvals[name] = pv
	}
	if pv == nil {
		return nil
	}
	c := *pv
	return &c
}

func perSecond(n int, durationS float64) float64 {
	if durationS <= 0 {
		return 0
	}
	return float64(n) / durationS
}

func frac(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// pPhrase is "p=0.012", "p<0.001" or "no test".
func pPhrase(p *float64) string {
	switch {
	case p == nil:
		return "no test"
	case *p < 0.001:
		return "p<0.001"
	}
	return fmt.Sprintf("p=%.3f", *p)
}

// confirmation tests the client quantity whose interval contains an engine
// figure's: the engine's TTFT and queue wait lie inside the client's time
// to first token (E2E when non-streaming), its E2E inside the client's
// E2E, its inter-token latency inside the client's TPOT (E2E when
// non-streaming). An engine mean has no samples to test and one stalled request can
// move it; a real change of the engine figure must move the client's
// per-request distribution the same way. worse is true when that client
// test is significant in the worse direction.
func confirmation(q quantity, p runPair, alpha float64) (desc string, worse bool) {
	both := func(name string) bool { return len(p.sb.byName[name]) > 0 && len(p.sn.byName[name]) > 0 }
	name := "client.e2e"
	switch q.Name {
	case "engine.e2e":
	case "engine.itl":
		if both("client.tpot") {
			name = "client.tpot"
		}
	default:
		if both("client.first_token") {
			name = "client.first_token"
		}
	}
	pv := p.test(name)
	if pv == nil {
		return "", false
	}
	worse = *pv < alpha && p.sn.stat(name, "median") > p.sb.stat(name, "median")
	dir := "unchanged"
	switch {
	case worse:
		dir = "worse"
	case *pv < alpha:
		dir = "better"
	}
	return fmt.Sprintf("%s %s %s", name, pPhrase(pv), dir), worse
}
