package bench

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// errSaturated stops an open-loop run's sending once its queue grows
// without bound (result.Saturation); what was sent is answered and kept.
var errSaturated = errors.New("saturated: the queue wait grows without bound")

// steadyCap bounds the requests a run keeps for its steady state and
// saturation test (56 bytes each): past it, every other one is dropped
// and only every stride-th kept, a uniform thinning.
const steadyCap = 1 << 17

// saturationEvery is how many completions pass between two saturation
// tests.
const saturationEvery = 16

// steadyPoint is one measured request, offsets in seconds from the run's
// start: sent (actually), intended (the schedule's send time), ended.
type steadyPoint struct {
	sent, intended, end float64
	wait                float64 // first token (or, not streaming, the answer) from the intended send
	fv, e2e, tpot       float64 // client figures; tpot < 0 when undefined
	tokens              int
	ok                  bool
}

// steadyTracker finds a run's steady state as its requests complete and,
// in an open loop, tests for saturation (stopping the sends once it holds).
// Used under the run collector's mu (collector.keep).
type steadyTracker struct {
	start    time.Time
	open     bool
	conc     int
	rate     float64 // open loop: the schedule's rate (wall), for Little's target
	stop     func(error)
	pts      []steadyPoint
	stride   int // keep every stride-th request
	seen     int
	sent     int     // measured requests completed (all, not only kept)
	firstEnd float64 // -1: nothing completed yet
	lastSend float64
	stopped  float64 // when sending stopped for saturation (0: it did not)
}

// newSteadyTracker tracks a run of workload mode and concurrency that
// started at start; rate is an open loop's schedule (wall), stop stops its
// sending (nil: a finished run's records, nothing to stop).
func newSteadyTracker(mode result.Mode, concurrency int, start time.Time, rate float64, stop func(error)) *steadyTracker {
	if stop == nil {
		stop = func(error) {}
	}
	return &steadyTracker{start: start, open: mode.OpenLoop(),
		conc: max(1, concurrency), rate: rate, stop: stop, stride: 1, firstEnd: -1}
}

// SteadyState finds a finished run's steady state and saturation from its
// records, as a run finds its own (merge feeds it a sharded run's merged
// records). Not safe for concurrent use.
type SteadyState struct{ t *steadyTracker }

// NewSteadyState is a SteadyState for a run of workload w started at
// start (its send rate w.Rate, in wall time).
func NewSteadyState(w *result.Workload, start time.Time) *SteadyState {
	return &SteadyState{newSteadyTracker(w.Mode, w.Concurrency, start, w.Rate, nil)}
}

// Add counts a record (warm-up and retried attempts are left out).
func (s *SteadyState) Add(rec *result.Record) { s.t.add(rec) }

// Reset forgets every record added (merge reads them again).
func (s *SteadyState) Reset() {
	t := s.t
	s.t = &steadyTracker{start: t.start, open: t.open, conc: t.conc, rate: t.rate, stop: t.stop, stride: 1, firstEnd: -1}
}

// Finish is the run's steady state and, for an open loop, its saturation test.
func (s *SteadyState) Finish() (*result.Steady, *result.Saturation) { return s.t.finish() }

// add counts a measured outcome (rec.Outcome()).
func (t *steadyTracker) add(rec *result.Record) {
	if t == nil || !rec.Outcome() {
		return
	}
	sent := rec.Start.Sub(t.start).Seconds()
	p := steadyPoint{sent: sent, intended: sent - rec.IntendedLagS, end: sent + rec.E2ES, ok: rec.Error == "",
		fv: rec.FirstVisibleS, e2e: rec.E2ES, tpot: -1, tokens: rec.OutputTokens}
	p.wait = rec.FirstTokenS + rec.IntendedLagS
	if !rec.Stream || rec.FirstTokenS <= 0 {
		p.wait = rec.E2ES + rec.IntendedLagS
	}
	if v, ok := rec.TPOT(); ok {
		p.tpot = v
	}
	if t.firstEnd < 0 || p.end < t.firstEnd {
		t.firstEnd = p.end
	}
	t.lastSend = max(t.lastSend, sent)
	t.sent++
	if t.seen++; (t.seen-1)%t.stride == 0 {
		t.pts = append(t.pts, p)
		if len(t.pts) >= steadyCap {
			t.thin()
		}
	}
	if t.open && t.stopped == 0 && t.sent%saturationEvery == 0 {
		if s := t.saturation(); s.Saturated {
			t.stopped = time.Since(t.start).Seconds()
			t.stop(errSaturated)
		}
	}
}

// thin halves the kept points (every other one) and doubles the stride.
func (t *steadyTracker) thin() {
	kept := t.pts[:0]
	for i := 0; i < len(t.pts); i += 2 {
		kept = append(kept, t.pts[i])
	}
	t.pts, t.stride = kept, 2*t.stride
}

// inWindow are the successful kept requests sent in [firstEnd, lastSend].
func (t *steadyTracker) inWindow() []steadyPoint {
	var w []steadyPoint
	for _, p := range t.pts {
		if p.ok && p.sent >= t.firstEnd && p.sent <= t.lastSend {
			w = append(w, p)
		}
	}
	return w
}

// saturation regresses the window's waits on their intended send times.
func (t *steadyTracker) saturation() result.Saturation {
	w := t.inWindow()
	s := result.Saturation{Points: len(w)}
	if len(w) < result.SaturationMinPoints {
		return s
	}
	slices.SortFunc(w, func(a, b steadyPoint) int { return cmp.Compare(a.intended, b.intended) })
	x, y := make([]float64, len(w)), make([]float64, len(w))
	for i, p := range w {
		x[i], y[i] = p.intended, p.wait
	}
	s.WaitSlope, s.T = slopeT(x, y)
	q := len(w) / 4
	s.WaitFirstS, s.WaitLastS = mean(y[:q]), mean(y[len(y)-q:])
	s.Saturated = s.T > result.SaturationT && s.WaitSlope > result.SaturationMinSlope && s.WaitLastS > result.SaturationGrowth*s.WaitFirstS
	return s
}

// finish is the run's steady state and, in an open loop, its saturation test.
func (t *steadyTracker) finish() (*result.Steady, *result.Saturation) {
	if t == nil {
		return nil, nil
	}
	var sat *result.Saturation
	if t.open {
		s := t.saturation()
		s.StoppedAtS = t.stopped
		sat = &s
	}
	st := &result.Steady{StartS: max(0, t.firstEnd), EndS: t.lastSend}
	if t.stride > 1 {
		st.Sampled = len(t.pts)
	}
	w := t.inWindow()
	if t.firstEnd < 0 || t.lastSend <= t.firstEnd || len(w) == 0 {
		st.Note = "no steady state: every request was sent before the first answer came (the run was all ramp-up and drain)"
		return st, sat
	}
	t.figures(st, w)
	return st, sat
}

// figures fills st from the window's requests w.
func (t *steadyTracker) figures(st *result.Steady, w []steadyPoint) {
	span := st.EndS - st.StartS
	tokens := 0
	for _, p := range t.pts {
		if p.ok && p.end > st.StartS && p.end <= st.EndS { // (start, end]: the first answer opens the window
			st.Completed += t.stride
			tokens += t.stride * p.tokens
		}
	}
	st.Throughput = result.Throughput{RequestsPerS: float64(st.Completed) / span, OutputTokensPerS: float64(tokens) / span}
	var fv, e2e, tpot []float64
	for _, p := range w {
		e2e = append(e2e, p.e2e)
		if p.fv > 0 {
			fv = append(fv, p.fv)
		}
		if p.tpot >= 0 {
			tpot = append(tpot, p.tpot)
		}
	}
	st.Requests = len(w)
	st.FirstVisible, st.E2E, st.TPOT = stats.Summarize(fv), stats.Summarize(e2e), stats.Summarize(tpot)
	st.InFlightTarget = float64(t.conc)
	if t.open {
		st.InFlightTarget = t.rate * mean(e2e) // Little's law
	}
	st.InFlightMean, st.InFlightMin, st.InFlightMax = t.inFlight(st.StartS, st.EndS)
}

// inFlight is the in-flight count (scaled by the stride) over the
// window, read at evenly spaced instants (a time average, as Little's law
// has it): the kept requests sent by then and not yet answered.
func (t *steadyTracker) inFlight(from, to float64) (mean float64, lo, hi int) {
	starts, ends := make([]float64, len(t.pts)), make([]float64, len(t.pts))
	for i, p := range t.pts {
		starts[i], ends[i] = p.sent, p.end
	}
	sort.Float64s(starts)
	sort.Float64s(ends)
	upTo := func(xs []float64, v float64) int { return sort.SearchFloat64s(xs, math.Nextafter(v, math.Inf(1))) }
	lo = math.MaxInt
	sum := 0
	for i := range inFlightSamples {
		at := from + (to-from)*float64(i)/float64(inFlightSamples-1)
		n := t.stride * (upTo(starts, at) - upTo(ends, at))
		sum += n
		lo, hi = min(lo, n), max(hi, n)
	}
	return float64(sum) / inFlightSamples, lo, hi
}

// inFlightSamples is how many instants inFlight reads the count at.
const inFlightSamples = 200

// maxT caps the t statistic of a perfect fit (JSON has no infinity).
const maxT = 1e6

// slopeT is the least-squares slope of y on x and its t statistic (0, 0
// when x does not vary; maxT for a perfect fit).
func slopeT(x, y []float64) (slope, t float64) {
	n := float64(len(x))
	mx, my := mean(x), mean(y)
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	if sxx == 0 || n < 3 {
		return 0, 0
	}
	slope = sxy / sxx
	var sse float64
	for i := range x {
		r := y[i] - my - slope*(x[i]-mx)
		sse += r * r
	}
	se := math.Sqrt(sse / (n - 2) / sxx)
	if se == 0 {
		return slope, math.Copysign(maxT, slope)
	}
	return slope, max(-maxT, min(maxT, slope/se))
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
