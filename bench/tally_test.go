package bench

import (
	"github.com/servebench/servebench/bench/workload"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
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
	if cs := onTime.client(); cs.FirstVisibleFromIntendedS != nil || onTime.fvI.n != 0 {
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

// TestTallySpillEqualsMemory: a tally whose samples go to files (a bounded
// run's) gives the same client figures, bit for bit, as one that keeps
// them in memory, on the same records: on-time sends then late ones,
// errors, absent timings and non-streamed requests included; read back
// whole (the default selection limit) or by radix selection over the
// files (a limit of 100 samples). Its files are unlinked once created
// (where the system allows it), and close releases them.
func TestTallySpillEqualsMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	recs := make([]result.Record, 5000)
	for i := range recs {
		fv := 0.01 + r.ExpFloat64()*0.02
		rec := result.Record{Run: "r", Stream: i%5 != 0, FirstVisibleS: fv, FirstTokenS: fv * 0.9, TTFBS: fv * 0.5,
			E2ES: fv + r.Float64(), OutputTokens: 1 + r.IntN(128)}
		switch {
		case i%97 == 0:
			rec = result.Record{Run: "r", Error: "timeout"}
		case i%31 == 0:
			rec.TTFBS = 0 // absent
		case i > 2500 && i%3 == 0:
			rec.IntendedLagS = r.Float64() * 0.1 // the sender fell behind
		}
		recs[i] = rec
	}
	for _, limit := range []int{0, 100} {
		dir := t.TempDir()
		var mem tally
		disk := tally{selectLimit: limit}
		if err := disk.spill(dir); err != nil {
			t.Fatal(err)
		}
		for _, c := range disk.columns() {
			if c.f == nil {
				t.Fatal("a column kept in memory after spill")
			}
		}
		if files, _ := os.ReadDir(dir); len(files) != 0 && runtime.GOOS != "windows" {
			t.Errorf("%d sample files named in %s, want them unlinked once created", len(files), dir)
		}
		for i := range recs {
			mem.add(&recs[i])
			disk.add(&recs[i])
		}
		want, got := mem.client(), disk.client()
		if err := disk.spillErr(); err != nil {
			t.Fatal(err)
		}
		if got.FirstVisibleFromIntendedS == nil || got.TPOTS == nil || got.TTFBS == nil || got.E2ES.N != mem.ok {
			t.Fatalf("limit %d: spilled figures incomplete: %+v", limit, got)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("limit %d: spilled samples give\n%+v\nin memory\n%+v", limit, got, want)
		}
		disk.close()
		if files, _ := os.ReadDir(dir); len(files) != 0 {
			t.Errorf("%d sample files left after close", len(files))
		}
	}
}

// TestLateWarningOnlyWhenItMatters: issue 20's run, 20 of 103 Poisson
// sends at 4 req/s past 1 ms but none past 1.2 ms, kept its schedule (the
// gaps are 250 ms); sends 40 ms late at that rate did not.
func TestLateWarningOnlyWhenItMatters(t *testing.T) {
	wl := &result.Workload{Mode: workload.ModeRate, Rate: 4, Arrival: workload.ArrivalPoisson, Burstiness: 1}
	lags := make([]float64, 103)
	for i := range 20 {
		lags[i] = 0.0011 + 0.0001*float64(i%2)
	}
	rs := &result.RateStats{TargetPerS: 4, AchievedPerS: 3.4, LateSends: 20, SendLagS: stats.Summarize(lags)}
	if w := lateWarning(rs, wl); w != "" {
		t.Errorf("1.2 ms lags at 250 ms gaps: %q", w)
	}
	for i := range lags {
		lags[i] = 0.04
	}
	rs = &result.RateStats{TargetPerS: 4, AchievedPerS: 3.72, LateSends: 103, SendLagS: stats.Summarize(lags)}
	if w := lateWarning(rs, wl); !strings.Contains(w, "schedule was not kept") || !strings.Contains(w, "within the arrival process's own variation") {
		t.Errorf("40 ms lags: %q", w)
	}
}
