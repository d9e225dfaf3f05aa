package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/report/reporttest"
)

// TestMarkdown checks report.md against golden files for the seed run, a
// buffered and a queued server, a TGI server without TTFT, and a sweep.
func TestMarkdown(t *testing.T) {
	tgi := reporttest.SeedSpecs()
	for i := range tgi {
		tgi[i].NoTTFT = true
	}
	cases := []struct {
		name  string
		build func() (*result.Results, []result.Record)
	}{
		{"seed", reporttest.Seed},
		{"buffered", func() (*result.Results, []result.Record) { return reporttest.Build("vllm", reporttest.Buffered()) }},
		{"queued", func() (*result.Results, []result.Record) { return reporttest.Build("vllm", reporttest.Queued()) }},
		{"tgi", func() (*result.Results, []result.Record) { return reporttest.Build("tgi", tgi...) }},
		{"sweep", func() (*result.Results, []result.Record) { return reporttest.Build("vllm", reporttest.SweepSpecs()...) }},
		{"bundled", func() (*result.Results, []result.Record) { return reporttest.Bundled(100) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, recs := c.build()
			var b bytes.Buffer
			if err := Markdown(&b, res, recs, PlanCharts(res, recs)); err != nil {
				t.Fatal(err)
			}
			md := b.String()
			for _, want := range []string{"## Where is the time going", "Two clocks", "![", "(table.png)", "Reconciliation"} {
				if !strings.Contains(md, want) {
					t.Errorf("report.md lacks %q", want)
				}
			}
			checkGolden(t, "", b.Bytes())
		})
	}
}

// TestMarkdownWarnings: run and result warnings are listed.
func TestMarkdownWarnings(t *testing.T) {
	res, recs := reporttest.Seed()
	// As a run saves them: the run's warnings are copied, prefixed, into
	// the results' own list.
	res.Warnings = []string{"engine counter reset during the run", "streaming: 2 requests stalled"}
	res.Runs[0].Warnings = []string{"2 requests stalled"}
	var b bytes.Buffer
	if err := Markdown(&b, res, recs, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Warnings", "- engine counter reset during the run", "- Streaming: 2 requests stalled"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if n := strings.Count(strings.ToLower(b.String()), "2 requests stalled"); n != 1 {
		t.Errorf("the run's warning appears %d times in report.md, want once", n)
	}
	if strings.Contains(b.String(), "![") {
		t.Error("no charts given, yet report.md embeds one")
	}
}

// readDir returns every file in dir by name.
func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// TestWriteAllDeterministic: WriteAll twice into two directories, and once
// more from the saved files via LoadDir, gives identical bytes.
func TestWriteAllDeterministic(t *testing.T) {
	for name, build := range map[string]func() (*result.Results, []result.Record){
		"seed":  reporttest.Seed,
		"sweep": func() (*result.Results, []result.Record) { return reporttest.Build("vllm", reporttest.SweepSpecs()...) },
	} {
		t.Run(name, func(t *testing.T) {
			res, recs := build()
			a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
			if err := WriteAll(a, res, recs); err != nil {
				t.Fatal(err)
			}
			if name == "seed" { // twice from memory once is enough
				if err := WriteAll(b, res, recs); err != nil {
					t.Fatal(err)
				}
			}
			// The `servebench report DIR` path: saved files only.
			if err := reporttest.Save(c, res, recs); err != nil {
				t.Fatal(err)
			}
			lres, lrecs, _, _, err := LoadDir(c)
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteAll(c, lres, lrecs); err != nil {
				t.Fatal(err)
			}
			fa, fb, fc := readDir(t, a), readDir(t, b), readDir(t, c)
			want := []string{"cdf.png", "report.html", "report.md", "startup.png", "table.png", "timeline.png", "tokens.png"}
			if name == "sweep" {
				want = append(want, "sweep.png")
				slices.Sort(want)
			}
			var got []string
			for f := range fa {
				got = append(got, f)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("files = %q, want %q", got, want)
			}
			for f, data := range fa {
				if name == "seed" && !bytes.Equal(data, fb[f]) {
					t.Errorf("%s differs between two WriteAll calls", f)
				}
				if !bytes.Equal(data, fc[f]) {
					t.Errorf("%s differs when regenerated from the saved files", f)
				}
			}
		})
	}
}

// TestWriteAllNoRequests: a run where every request failed still gets a
// report.md (and the table chart), without the per-request charts.
func TestWriteAllNoRequests(t *testing.T) {
	res, _ := reporttest.Seed()
	for i := range res.Runs {
		res.Runs[i].OK = 0
		res.Runs[i].Client = result.ClientStats{}
	}
	dir := t.TempDir()
	if err := WriteAll(dir, res, nil); err != nil {
		t.Fatal(err)
	}
	files := readDir(t, dir)
	if _, ok := files["report.md"]; !ok {
		t.Fatal("no report.md")
	}
	if _, ok := files["timeline.png"]; ok {
		t.Error("timeline.png drawn without any successful request")
	}
	if !strings.Contains(string(files["report.md"]), "No successful requests") {
		t.Error("report.md does not say there were no successful requests")
	}
}

func TestWriteAllBadDir(t *testing.T) {
	res, recs := reporttest.Seed()
	err := WriteAll(filepath.Join(t.TempDir(), "missing"), res, recs)
	if err == nil || !strings.Contains(err.Error(), "report.md") {
		t.Fatalf("err = %v, want one naming report.md", err)
	}
}

// TestMarkdownZeroQueueQuantiles: a histogram whose observations were all 0
// shows quantiles of 0, exactly (no "~"), not the first bucket's
// interpolated middle.
func TestMarkdownZeroQueueQuantiles(t *testing.T) {
	res, recs := reporttest.Seed()
	res.Runs[0].Engine.QueueS = &result.Hist{Mean: 0, Count: 21, P50Est: 0.15, P90Est: 0.27, P99Est: 0.297}
	var b bytes.Buffer
	if err := Markdown(&b, res, recs, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| queue wait (s) | engine | 21 | 0.0000 | 0.0000 | 0.0000 | 0.0000 |") ||
		strings.Contains(b.String(), "~0.1500") {
		t.Errorf("queue wait row wrong:\n%s", b.String())
	}
}

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// checkGolden compares got with testdata/<name>.golden (t.Name() by default),
// or rewrites the file with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	if name == "" {
		name = t.Name()
	}
	reporttest.CheckGolden(t, filepath.Join("testdata", filepath.FromSlash(name)+".golden"), got, *update)
}

// TestMarkdownPrefixCache: each run's prefix cache line, from the engine's
// counters, from a server's own gauge, and with nothing looked up.
func TestMarkdownPrefixCache(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		name string
		es   result.EngineStats
		want string
	}{
		{"counters", result.EngineStats{PrefixCacheQueries: f(12800), PrefixCacheHits: f(9600), PrefixCacheHitRate: f(0.75)},
			"- Prefix cache: 75.0% hit rate: 9600 of 12800 prompt tokens looked up were cached (engine counters over the run)\n"},
		{"gauge", result.EngineStats{PrefixCacheHitRate: f(0.0075)},
			"- Prefix cache: 0.8% hit rate (the server's own recent figure at the run's end, not the run's)\n"},
		{"off", result.EngineStats{PrefixCacheQueries: f(0), PrefixCacheHits: f(0)},
			"- Prefix cache: no prompt tokens looked up (prefix caching off?)\n"},
		{"not exported", result.EngineStats{}, ""},
	}
	for _, c := range cases {
		res, recs := reporttest.Seed()
		rc := res.Runs[0].Engine.Reconciliation
		res.Runs[0].Engine = c.es
		res.Runs[0].Engine.Reconciliation = rc
		var b bytes.Buffer
		if err := Markdown(&b, res, recs, nil); err != nil {
			t.Fatal(err)
		}
		md := b.String()
		if c.want == "" && strings.Contains(md, "Prefix cache:") || c.want != "" && !strings.Contains(md, c.want) {
			t.Errorf("%s: report.md's prefix cache line wrong, want %q:\n%s", c.name, c.want, md)
		}
	}
}

// TestMarkdownSchedule: the schedule line explains the achieved rate by the
// arrival process and says whether the sends' lateness matters.
func TestMarkdownSchedule(t *testing.T) {
	res, recs := reporttest.Seed()
	r := &res.Runs[0]
	r.Workload.Mode, r.Workload.Rate, r.Workload.Arrival, r.Workload.Burstiness = "rate", 4, "poisson", 1
	lags := make([]float64, 103)
	lags[0], lags[1] = 0.0012, 0.0011
	r.Rate = &result.RateStats{TargetPerS: 4, AchievedPerS: 3.72, LateSends: 2, SendLagS: stats.Summarize(lags)}
	var b bytes.Buffer
	if err := Markdown(&b, res, recs, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"achieved 3.72 of 4 req/s (-7.0%, within the arrival process's own variation: ±9.9%",
		"2 sends late by over 1 ms", "under the 25 ms from which lateness matters"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// TestMarkdownWorkloadLine: a dataset run's workload line gives the
// dataset's lengths, not the max_tokens they replaced, and says when the
// dataset was reused to fill the run (issue 20: 50 conversations for 103
// requests).
func TestMarkdownWorkloadLine(t *testing.T) {
	res, recs := reporttest.Seed()
	r := &res.Runs[0]
	r.Requests, r.Workload.Warmup = 103, 0
	r.Workload.Source, r.Workload.SourceFile, r.Workload.SourceEntries = "sharegpt", "sharegpt.json", 50
	r.Workload.OutputTokensFrom, r.Workload.OutputTokensRange = "dataset", []int{2, 1067}
	var b bytes.Buffer
	if err := Markdown(&b, res, recs, nil); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"output lengths from the dataset (2 to 1067 tokens asked; max_tokens 256 where it gives none)",
		"50 conversations reused for 103 requests"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if !strings.Contains(md, "chat endpoint, max_tokens 256, exact length, fixed prompt") {
		t.Error("the other run's workload line should still give its max_tokens")
	}
}
