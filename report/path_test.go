package report

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// TestPathPairs: a proxied run and its direct side are paired request by
// request (index, turn), leaving out requests that failed on either path,
// and the section gives the added figures.
func TestPathPairs(t *testing.T) {
	rec := func(run string, i int, fv, e2e float64, fail bool) result.Record {
		r := result.Record{Run: run, Index: i, Stream: true, FirstVisibleS: fv, E2ES: e2e}
		if fail {
			r.Error = "http_status"
		}
		return r
	}
	recs := []result.Record{
		rec("s", 0, 0.050, 1.0, false), rec("s-direct", 0, 0.010, 0.98, false),
		rec("s", 1, 0.060, 1.1, false), rec("s-direct", 1, 0.020, 1.05, true), // failed direct: no pair
		rec("s", 2, 0.045, 1.2, false), rec("s-direct", 2, 0.015, 1.19, false),
		{Run: "s", Index: 3, Warmup: true, FirstVisibleS: 9, E2ES: 9}, // warm-up: left out
	}
	sum := func(v float64) *stats.Summary { return &stats.Summary{Median: v, N: 3} }
	res := &result.Results{Runs: []result.Run{
		{Name: "s", Stream: true, Workload: result.Workload{Path: "proxied", PairedWith: "s-direct"},
			Client: result.ClientStats{FirstVisibleS: sum(0.05), E2ES: sum(1.1)}},
		{Name: "s-direct", Stream: true, Workload: result.Workload{Path: "direct", PairedWith: "s"},
			Client: result.ClientStats{FirstVisibleS: sum(0.015), E2ES: sum(1.05)}},
	}}
	pairs := PathPairs(res, recs)
	if len(pairs) != 1 || len(pairs[0].AddedFirstVisible) != 2 {
		t.Fatalf("pairs %+v", pairs)
	}
	if a := pairs[0].AddedFirstVisible; !near(a[0], 0.040) || !near(a[1], 0.030) {
		t.Errorf("added first visible %v, want [0.040 0.030]", a)
	}
	var b strings.Builder
	writePath(&b, pairs)
	if !strings.Contains(b.String(), "| s | 2 | 0.05 s / 0.015 s | 35.0 ms, 40.0 ms, 40.0 ms |") ||
		!strings.Contains(b.String(), "**s:** the path added a median 35.0 ms to first visible output (p90 40.0 ms, 2 requests of one run).") {
		t.Errorf("section:\n%s", b.String())
	}
	// Runs without --direct-url have no pairs and no section.
	if p := PathPairs(&result.Results{Runs: res.Runs[1:]}, recs); len(p) != 0 {
		t.Errorf("unpaired: %+v", p)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
