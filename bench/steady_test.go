package bench

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/workload"
)

// steadyRec is a streaming request sent at sent s (its intended time
// sent-lag) answered after e2e s, its first token after ttft s.
func steadyRec(t0 time.Time, sent, lag, ttft, e2e float64) result.Record {
	return result.Record{Stream: true, Start: t0.Add(time.Duration(sent * float64(time.Second))), IntendedLagS: lag,
		FirstTokenS: ttft, FirstVisibleS: ttft, E2ES: e2e, OutputTokens: 10}
}

// TestSteadyClosedLoop: four requests in flight, each 1 s: the window runs
// from the first answer (1 s) to the last send, the in-flight count holds
// at its target 4 there, and the throughput is 4 req/s.
func TestSteadyClosedLoop(t *testing.T) {
	t0 := time.Now()
	spec := RunSpec{Workload: workload.Workload{Mode: workload.ModeConcurrent, Concurrency: 4}}
	tr := newSteadyTracker(spec.Workload.Mode, spec.Workload.Concurrency, t0, 0, func(error) { t.Fatal("a closed loop was stopped") })
	for i := range 40 { // slot i%4 sends at i/4 s
		r := steadyRec(t0, float64(i/4), 0, 0.1, 1)
		tr.add(&r)
	}
	st, sat := tr.finish()
	if sat != nil {
		t.Errorf("closed loop judged for saturation: %+v", sat)
	}
	if st.StartS != 1 || st.EndS != 9 || st.InFlightTarget != 4 || st.InFlightMin != 4 || st.InFlightMax != 4 {
		t.Errorf("window %g-%g s, in-flight target %g, %d-%d: want 1-9 s, 4, 4-4", st.StartS, st.EndS, st.InFlightTarget, st.InFlightMin, st.InFlightMax)
	}
	if math.Abs(st.Throughput.RequestsPerS-4) > 1e-9 || st.E2E == nil || st.E2E.P99 != 1 || st.Requests != 36 {
		t.Errorf("throughput %g req/s, E2E %+v over %d requests: want ~4 req/s, 1 s over the 36 sent in the window (1-9 s)", st.Throughput.RequestsPerS, st.E2E, st.Requests)
	}
}

// TestSaturation: an open loop whose wait grows with the send time is
// saturated, and its sending is stopped; one whose wait holds is not.
func TestSaturation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		wait   func(i int, sent float64) float64
		stops  bool
		points int
	}{
		// the server serves 5 req/s of the 10 sent: each waits longer
		{"queue grows", func(_ int, sent float64) float64 { return 0.2 + 0.5*sent }, true, result.SaturationMinPoints},
		// a fast server's millisecond waits drifting up (a loaded client
		// machine): significant and 5x, but no queue worth the name
		{"millisecond drift", func(_ int, sent float64) float64 { return 0.001 + 0.0002*sent }, false, 0},
		// a steady queue with jitter: no trend
		{"steady", func(i int, _ float64) float64 { return 0.2 + 0.05*float64(i%3) }, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			spec := RunSpec{Workload: workload.Workload{Mode: workload.ModeRate, Rate: 10}}
			var stopped error
			tr := newSteadyTracker(spec.Workload.Mode, 0, t0, 10, func(err error) {
				if stopped == nil {
					stopped = err
				}
			})
			for i := range 200 {
				sent := float64(i) / 10
				w := tc.wait(i, sent)
				r := steadyRec(t0, sent, 0, w, w+0.5)
				tr.add(&r)
			}
			_, sat := tr.finish()
			if sat == nil || sat.Saturated != tc.stops || errors.Is(stopped, errSaturated) != tc.stops {
				t.Fatalf("saturation %+v, stop %v: want saturated and stopped %v", sat, stopped, tc.stops)
			}
			if tc.stops && !(sat.WaitSlope > 0.4 && sat.WaitSlope < 0.6) {
				t.Errorf("slope %g, want the 0.5 s/s built in", sat.WaitSlope)
			}
		})
	}
}

// TestSteadyCap: past steadyCap requests the tracker thins its sample and
// scales its counts, so memory stays bounded and throughput stays right.
func TestSteadyCap(t *testing.T) {
	t0 := time.Now()
	spec := RunSpec{Workload: workload.Workload{Mode: workload.ModeConcurrent, Concurrency: 8}}
	tr := newSteadyTracker(spec.Workload.Mode, spec.Workload.Concurrency, t0, 0, nil)
	n := steadyCap + steadyCap/2
	for i := range n { // 8 in flight, each 1 s: 8 req/s
		r := steadyRec(t0, float64(i/8), 0, 0.1, 1)
		tr.add(&r)
	}
	st, _ := tr.finish()
	if len(tr.pts) > steadyCap || st.Sampled == 0 {
		t.Fatalf("%d points kept (cap %d), sampled %d", len(tr.pts), steadyCap, st.Sampled)
	}
	if math.Abs(st.Throughput.RequestsPerS-8) > 0.1 || math.Abs(st.InFlightMean-8) > 0.5 {
		t.Errorf("throughput %g req/s, in-flight %g: want 8 and 8 from the thinned sample", st.Throughput.RequestsPerS, st.InFlightMean)
	}
}
