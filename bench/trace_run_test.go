package bench

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/client"
)

// TestTraceRun replays the Mooncake fixture 20 times faster: every entry
// once, at its time, latency also from the intended send time.
func TestTraceRun(t *testing.T) {
	tr, err := workload.LoadTrace("../testdata/workload/"+"mooncake.jsonl", "", 20, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	spec := RunSpec{Name: "trace", Workload: workload.Workload{Mode: workload.ModeTrace}, Request: RequestSpec{MaxTokens: 64}, Source: tr}
	run, recs, err := (&Runner{Client: &echoDoer{}}).Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if run.Requests != 6 || run.Rate == nil || run.Rate.SendLagS == nil || run.Client.E2EFromIntendedS == nil {
		t.Fatalf("run: %d requests, rate %+v", run.Requests, run.Rate)
	}
	if run.DurationS < 0.125 {
		t.Errorf("run took %.3f s; the trace spans 2.5 s / 20 = 0.125 s", run.DurationS)
	}
	if want := 5 / 0.125; run.Rate.TargetPerS != want {
		t.Errorf("target rate %v, want %v (5 gaps over the span)", run.Rate.TargetPerS, want)
	}
	for _, r := range recs {
		if r.MaxTokens < 4 || r.MaxTokens > 20 {
			t.Errorf("record %d asked %d tokens, want the trace's output_length", r.Index, r.MaxTokens)
		}
	}
	// --requests cuts it short.
	spec.Workload.Requests = 2
	if run, _, _ := (&Runner{Client: &echoDoer{}}).Run(context.Background(), spec); run.Requests != 2 {
		t.Errorf("--requests 2 on a trace of 6: %d sent", run.Requests)
	}
}

// noopDoer answers at once, like a server of infinite speed.
type noopDoer struct{}

func (noopDoer) Do(context.Context, *client.Request) client.Trace {
	return client.Trace{Start: time.Now(), Status: 200, OutputTokens: 1, FirstVisible: 1, FirstToken: 1, Done: 1}
}

// BenchmarkTraceReplay replays a synthetic 2,000 req/s Mooncake-like trace
// (4,000 requests over 2 s, each with 2-4 shared 512-token blocks) against
// a no-op Doer and reports the send lag p50/p99 (start minus intended
// time) and the achieved rate over the intended one. Target: p99 < 1 ms.
// The floor, measured in the same run, is a bare loop waking at the same
// 2,000 times per second with the same timer and doing nothing else: the
// lag this machine's scheduler alone adds (on a loaded machine it, not the
// replay, dominates).
func BenchmarkTraceReplay(b *testing.B) {
	const n, rate = 4000, 2000.0
	var sb strings.Builder
	for i := range n {
		ms := float64(i) * 1000 / rate
		sb.WriteString(`{"timestamp": ` + strconvF(ms) + `, "input_length": ` + strconvF(float64(512*(2+i%3))) +
			`, "output_length": 8, "hash_ids": [0, ` + strconvF(float64(1+i%50)) + `, ` + strconvF(float64(100+i)) + `, 9999]}` + "\n")
	}
	file := filepath.Join(b.TempDir(), "trace.jsonl")
	os.WriteFile(file, []byte(sb.String()), 0o644)
	tr, err := workload.LoadTrace(file, "", 1, "", 0)
	if err != nil {
		b.Fatal(err)
	}
	var p50, p99, ratio, floor50, floor99 float64
	for b.Loop() {
		floor50, floor99 = timerFloor(n, time.Duration(float64(time.Second)/rate))
		spec := RunSpec{Name: "trace", Workload: workload.Workload{Mode: workload.ModeTrace}, Request: RequestSpec{MaxTokens: 8}, Source: tr}
		run, _, err := (&Runner{Client: noopDoer{}}).Run(context.Background(), spec)
		if err != nil || run.Rate.SendLagS == nil {
			b.Fatal(err)
		}
		p50, p99 = run.Rate.SendLagS.Median, run.Rate.SendLagS.P99
		ratio = run.Rate.AchievedPerS / run.Rate.TargetPerS
	}
	b.ReportMetric(p50*1e3, "lag-p50-ms")
	b.ReportMetric(p99*1e3, "lag-p99-ms")
	b.ReportMetric(floor50*1e3, "floor-p50-ms")
	b.ReportMetric(floor99*1e3, "floor-p99-ms")
	b.ReportMetric(ratio, "achieved/intended")
	b.Logf("2,000 req/s trace, %d requests, GOMAXPROCS %d: send lag p50 %.3f ms, p99 %.3f ms (target p99 < 1 ms; bare timer loop floor p50 %.3f ms, p99 %.3f ms); achieved/intended rate %.4f",
		n, runtime.GOMAXPROCS(0), p50*1e3, p99*1e3, floor50*1e3, floor99*1e3, ratio)
}

// timerFloor wakes n times every gap with the runner's timer pattern and
// returns the p50 and p99 of how late it woke, in seconds.
func timerFloor(n int, gap time.Duration) (p50, p99 float64) {
	lags := make([]float64, n)
	timer := time.NewTimer(0)
	<-timer.C
	start := time.Now()
	for i := range n {
		next := start.Add(time.Duration(i) * gap)
		if d := time.Until(next); d > 0 {
			timer.Reset(d)
			<-timer.C
		}
		lags[i] = time.Since(next).Seconds()
	}
	slices.Sort(lags)
	return lags[n/2], lags[n*99/100]
}

func strconvF(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
