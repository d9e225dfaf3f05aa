package result

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/stats"
)

func TestNewClock(t *testing.T) {
	for _, tc := range []struct {
		name    string
		speedup float64
		want    string
		conv    bool
	}{
		{"", 0, ClockWall, false},                // real hardware: only wall time
		{"", 4, ClockModelled, true},             // --speedup alone: modelled by default
		{ClockWall, 4, ClockWall, false},         // asked for wall
		{ClockModelled, 1, ClockModelled, false}, // nothing to convert at 1x
	} {
		c, err := NewClock(tc.name, tc.speedup)
		if err != nil {
			t.Fatal(err)
		}
		if c.Name != tc.want || c.Modelled() != tc.conv {
			t.Errorf("NewClock(%q, %g) = %+v, want %s, converting %v", tc.name, tc.speedup, c, tc.want, tc.conv)
		}
	}
	if _, err := NewClock("engine", 4); err == nil {
		t.Error("NewClock(engine): no error")
	}
}

func TestClockConversions(t *testing.T) {
	c, _ := NewClock("", 4)
	if got := c.FromModelled(2); got != 0.5 {
		t.Errorf("FromModelled(2 s) = %g, want 0.5 wall seconds", got)
	}
	if got := c.RateFromModelled(10); got != 40 {
		t.Errorf("RateFromModelled(10/s) = %g, want 40/s wall", got)
	}
	if got := c.DurationFromModelled(30 * time.Second); got != 7500*time.Millisecond {
		t.Errorf("DurationFromModelled(30s) = %v", got)
	}
	slo := SLO{TTFT: 2 * time.Second, TPOT: 50 * time.Millisecond}
	wall := c.SLOFromModelled(slo)
	if wall.TTFT != 500*time.Millisecond || wall.TPOT != 12500*time.Microsecond {
		t.Errorf("SLOFromModelled(%s) = %s", slo, wall)
	}
	if back := c.SLOToModelled(wall); back != slo {
		t.Errorf("round trip %s -> %s", slo, back)
	}
	if p, err := ParseSLO("ttft.p99=2s,tpot=50ms"); err != nil || c.SLOFromModelled(p).String() != "ttft.p99=500ms,tpot=12.5ms" {
		t.Errorf("percentile SLO %v: %v, want its percentile kept", p, err)
	}
	w, _ := NewClock(ClockWall, 4)
	if w.ToModelled(3) != 3 || w.RateFromModelled(3) != 3 {
		t.Error("the wall clock converts")
	}
}

// clockResults is a run at --speedup 4 with a figure under each rule.
func clockResults() *Results {
	sum := &stats.Summary{Mean: 1, Median: 1, P90: 2, P99: 3, Min: 0.5, Max: 4, N: 10}
	toks := &stats.Summary{Mean: 256, Median: 256, P99: 256, N: 10}
	ready := 9.0
	return &Results{Schema: Schema, Server: Server{Bundled: &Bundled{Speedup: 4}, Startup: &Startup{HealthOKS: &ready}},
		Runs: []Run{{
			Name: "rate=10", DurationS: 5,
			Workload:   Workload{Mode: "rate", Rate: 40, DurationS: 5, Trace: &TraceWorkload{SpanS: 7}},
			Throughput: Throughput{RequestsPerS: 40, OutputTokensPerS: 4000},
			Client:     ClientStats{E2ES: sum, OutputTokens: toks},
			Engine:     EngineStats{TTFTS: &Hist{Mean: 0.1, Count: 10, P99Est: 0.2}},
			Rate:       &RateStats{TargetPerS: 40, AchievedPerS: 39},
			Goodput:    &Goodput{SLO: "ttft=500ms", RatePerS: 20, Attainment: 50},
			Windows:    []Window{{StartS: 1, EndS: 2, Engine: &WindowEngine{EngineStats: EngineStats{QueueS: &Hist{Mean: 1, Count: 3}}}}},
		}},
		MaxRate: &MaxRate{SLO: "ttft=500ms", RatePerS: 38, MissedAtPerS: 40},
	}
}

func TestClockView(t *testing.T) {
	res := clockResults()
	before, _ := json.Marshal(res)
	c, _ := NewClock("", 4)
	v := c.View(res)
	if after, _ := json.Marshal(res); string(after) != string(before) {
		t.Fatal("View changed the stored results")
	}
	r := v.Runs[0]
	for _, tc := range []struct {
		what      string
		got, want float64
	}{
		{"duration_s", r.DurationS, 20},
		{"workload rate", r.Workload.Rate, 10},
		{"workload duration_s", r.Workload.DurationS, 20},
		{"requests_per_s", r.Throughput.RequestsPerS, 10},
		{"output_tokens_per_s", r.Throughput.OutputTokensPerS, 1000},
		{"client e2e p99", r.Client.E2ES.P99, 12},
		{"client e2e median", r.Client.E2ES.Median, 4},
		{"output tokens (not a time)", r.Client.OutputTokens.Median, 256},
		{"engine ttft mean", r.Engine.TTFTS.Mean, 0.4},
		{"engine ttft count (a count)", r.Engine.TTFTS.Count, 10},
		{"rate target_per_s", r.Rate.TargetPerS, 10},
		{"goodput rate_per_s", r.Goodput.RatePerS, 5},
		{"goodput attainment (a share)", r.Goodput.Attainment, 50},
		{"window end_s", r.Windows[0].EndS, 8},
		{"window engine queue (embedded)", r.Windows[0].Engine.QueueS.Mean, 4},
		{"trace span (the trace's own)", r.Workload.Trace.SpanS, 7},
		{"start-up health", *v.Server.Startup.HealthOKS, 36},
		{"max rate", v.MaxRate.RatePerS, 9.5},
	} {
		if math.Abs(tc.got-tc.want) > 1e-9 {
			t.Errorf("%s = %g, want %g", tc.what, tc.got, tc.want)
		}
	}
	if r.Client.E2ES.N != 10 {
		t.Errorf("n = %d, want 10", r.Client.E2ES.N)
	}
	if r.Goodput.SLO != "ttft=2s" || v.MaxRate.SLO != "ttft=2s" {
		t.Errorf("SLO %q, max rate SLO %q: want ttft=2s", r.Goodput.SLO, v.MaxRate.SLO)
	}
	if c.View(v) != v {
		t.Error("a view viewed again was converted twice")
	}
	if w, _ := NewClock(ClockWall, 4); w.View(res) != res {
		t.Error("the wall clock's view is a copy")
	}
}

func TestClockAnnotate(t *testing.T) {
	res := clockResults()
	c, _ := NewClock("", 4)
	c.Annotate(res)
	b, _ := json.Marshal(res)
	var back Results
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Clock == nil || back.Clock.Name != ClockModelled || back.Clock.Speedup != 4 {
		t.Fatalf("clock %+v", back.Clock)
	}
	r := back.Runs[0]
	if r.Throughput.RequestsPerS != 40 || r.Modelled == nil || r.Modelled.Throughput.RequestsPerS != 10 || r.Modelled.RatePerS != 10 {
		t.Errorf("wall %+v, modelled %+v: want both, 40 and 10 req/s", r.Throughput, r.Modelled)
	}
	if back.MaxRateModelled == nil || back.MaxRateModelled.RatePerS != 9.5 || back.MaxRate.RatePerS != 38 {
		t.Errorf("max rate %+v, modelled %+v", back.MaxRate, back.MaxRateModelled)
	}
	// Shown reads the stored clock: the modelled figures, not the block twice.
	v := Shown(&back)
	if v.Runs[0].DurationS != 20 || v.Runs[0].Modelled != nil {
		t.Errorf("Shown: duration %g, modelled block %v", v.Runs[0].DurationS, v.Runs[0].Modelled)
	}
}

func TestClockViewRecords(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	runs := []Run{{Name: "r", StartedAt: t0}}
	recs := []Record{{Run: "r", Start: t0.Add(time.Second), FirstVisibleS: 0.5, E2ES: 1, OutputTokens: 3,
		Events: Events{{0.5, 1}, {1, 2}}, Engine: &EngineRecord{TotalS: 1, EvalCount: 3}}}
	c, _ := NewClock("", 4)
	v := c.ViewRecords(recs, runs)
	r := v[0]
	if r.E2ES != 4 || r.FirstVisibleS != 2 || r.Events[1][0] != 4 || r.Events[1][1] != 2 || r.Engine.TotalS != 4 || r.Engine.EvalCount != 3 || r.OutputTokens != 3 {
		t.Errorf("view %+v, engine %+v", r, r.Engine)
	}
	if !r.Start.Equal(t0.Add(4 * time.Second)) {
		t.Errorf("start %v, want 4 s after the run's", r.Start.Sub(t0))
	}
	if recs[0].E2ES != 1 || recs[0].Events[1][0] != 1 || recs[0].Engine.TotalS != 1 {
		t.Error("ViewRecords changed the records")
	}
}

// TestClockViewQuantileBounds: a histogram's quantile buckets are seconds
// too: in the modelled clock they scale with the mean beside them (before:
// an E2E mean of 3.857 modelled seconds beside a "0.3-0.5" wall-clock
// bucket).
func TestClockViewQuantileBounds(t *testing.T) {
	res := clockResults()
	hi := 0.5
	res.Runs[0].Engine.E2ES = &Hist{Mean: 0.3857, Count: 20, Bounds: map[string]QuantileBound{"p50": {Above: 0.3, AtMost: &hi}}}
	c, _ := NewClock("", 10)
	v := c.View(res)
	_, b := v.Runs[0].Engine.E2ES.Quantile("p50")
	if m := v.Runs[0].Engine.E2ES.Mean; b == nil || math.Abs(b.Above-3) > 1e-9 || math.Abs(*b.AtMost-5) > 1e-9 || math.Abs(m-3.857) > 1e-9 {
		t.Errorf("modelled: mean %v, bound %+v: want 3.857 in (3, 5]", m, b)
	}
	if _, b := res.Runs[0].Engine.E2ES.Quantile("p50"); b.Above != 0.3 || *b.AtMost != 0.5 {
		t.Errorf("View changed the stored bound: %+v", b)
	}
}
