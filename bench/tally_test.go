package bench

import (
	"math"
	"testing"

	"github.com/servebench/servebench/bench/result"
)

// TestTallyLateSends: figures from the intended send time appear once a
// send is late and count the on-time requests before it too (the tally
// copies their plain figures then, not before).
func TestTallyLateSends(t *testing.T) {
	recs := []result.Record{
		{Run: "r", FirstVisibleS: 0.1, E2ES: 1},
		{Run: "r", FirstVisibleS: 0.2, E2ES: 2},
		{Run: "r", FirstVisibleS: 0.3, E2ES: 3, IntendedLagS: 0.5},
		{Run: "r", FirstVisibleS: 0.4, E2ES: 4},
	}
	var onTime tally
	onTime.add(&recs[0])
	if cs := onTime.client(); cs.FirstVisibleFromIntendedS != nil || onTime.fvI != nil {
		t.Errorf("no late send, yet figures from the intended send time: %+v", cs.FirstVisibleFromIntendedS)
	}
	cs := ClientSummary(recs)
	fv, e2e := cs.FirstVisibleFromIntendedS, cs.E2EFromIntendedS
	if fv == nil || e2e == nil || fv.N != 4 || e2e.N != 4 || math.Abs(fv.Mean-(1.0+0.5)/4) > 1e-12 || math.Abs(e2e.Mean-(10+0.5)/4) > 1e-12 || e2e.Max != 4 {
		t.Errorf("from intended: first visible %+v, e2e %+v; want 4 samples each, the late one 0.5 s longer", fv, e2e)
	}
}

// TestAppendRecent: the progress bar keeps between barRecent and
// 2*barRecent of the latest values, newest last.
func TestAppendRecent(t *testing.T) {
	var xs []float64
	for i := range 5 * barRecent {
		xs = appendRecent(xs, float64(i))
		if len(xs) > 2*barRecent || xs[len(xs)-1] != float64(i) || (i >= barRecent && len(xs) < barRecent) {
			t.Fatalf("after %d appends: %d kept, last %v", i+1, len(xs), xs[len(xs)-1])
		}
	}
	if xs[0] != float64(5*barRecent-len(xs)) {
		t.Errorf("kept values are not the latest: first %v of %d", xs[0], len(xs))
	}
}
