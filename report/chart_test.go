package report

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/reporttest"
)

// pngInfo decodes a chart and counts its pixels by colour.
type pngInfo struct {
	img    image.Image
	counts map[color.RGBA]int
}

func decodeChart(t *testing.T, b []byte) pngInfo {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a valid PNG: %v", err)
	}
	if got := img.Bounds().Size(); got.X != ChartWidth || got.Y != ChartHeight {
		t.Fatalf("size %dx%d, want %dx%d", got.X, got.Y, ChartWidth, ChartHeight)
	}
	info := pngInfo{img: img, counts: map[color.RGBA]int{}}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, b, a := img.At(x, y).RGBA()
			info.counts[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}]++
		}
	}
	// Not blank: many colours (text is anti-aliased) and plenty of ink.
	white := info.counts[color.RGBA{0xff, 0xff, 0xff, 0xff}]
	if len(info.counts) < 20 || white > ChartWidth*ChartHeight*98/100 {
		t.Fatalf("chart looks blank: %d colours, %d of %d pixels white", len(info.counts), white, ChartWidth*ChartHeight)
	}
	return info
}

// near counts pixels within 6 per channel of c (anti-aliased edges differ).
func (p pngInfo) near(c color.RGBA) int {
	n := 0
	for k, v := range p.counts {
		if absDiff(k.R, c.R) <= 6 && absDiff(k.G, c.G) <= 6 && absDiff(k.B, c.B) <= 6 {
			n += v
		}
	}
	return n
}

func absDiff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

// wantSeries fails unless each named colour covers at least min pixels.
func wantSeries(t *testing.T, p pngInfo, min int, cols map[string]color.RGBA) {
	t.Helper()
	for name, c := range cols {
		if n := p.near(c); n < min {
			t.Errorf("series %s (colour %v): %d pixels, want at least %d", name, c, n, min)
		}
	}
}

func pal(keys ...string) map[string]color.RGBA {
	m := map[string]color.RGBA{}
	for _, k := range keys {
		m[k] = Palette[k]
	}
	return m
}

func TestTableChart(t *testing.T) {
	res, _ := reporttest.Seed()
	b, err := TableChart(res)
	if err != nil {
		t.Fatal(err)
	}
	p := decodeChart(t, b)
	// Four bars per mode are drawn (queue wait is 0, only its legend swatch).
	wantSeries(t, p, 4000, pal(KeyFirstVisible, KeyE2EClient, KeyEngineTTFT, KeyE2EEngine))
	if n := p.near(Palette[KeyQueue]); n == 0 || n > 1500 {
		t.Errorf("queue wait is 0: want only its legend swatch, got %d pixels", n)
	}
	// A sweep has real queue wait: its bars appear.
	sres, _ := reporttest.Build("vllm", reporttest.SweepSpecs()...)
	b, err = TableChart(sres)
	if err != nil {
		t.Fatal(err)
	}
	wantSeries(t, decodeChart(t, b), 4000, pal(KeyQueue))
}

func TestTimelineChart(t *testing.T) {
	res, recs := reporttest.Seed()
	b, err := TimelineChart(res, recs)
	if err != nil {
		t.Fatal(err)
	}
	p := decodeChart(t, b)
	// Marks: sent, engine TTFT, first visible, done, engine E2E; ticks for content.
	wantSeries(t, p, 150, pal(KeySent, KeyEngineTTFT, KeyFirstVisible, KeyE2EClient, KeyE2EEngine))
	wantSeries(t, p, 3000, pal(KeyContent)) // 256 ticks on the streaming lane
	if _, err := TimelineChart(res, nil); err == nil {
		t.Error("timeline without records: want an error")
	}
}

func TestTokensChart(t *testing.T) {
	res, recs := reporttest.Seed()
	b, err := TokensChart(res, recs)
	if err != nil {
		t.Fatal(err)
	}
	p := decodeChart(t, b)
	wantSeries(t, p, 2000, map[string]color.RGBA{"streaming": runColor(0, 2), "non-streaming": runColor(1, 2)})
}

func TestCDFChart(t *testing.T) {
	res, recs := reporttest.Seed()
	b, err := CDFChart(res, recs)
	if err != nil {
		t.Fatal(err)
	}
	wantSeries(t, decodeChart(t, b), 1500, pal(KeyFirstVisible, KeyE2EClient))
}

func TestStartupChart(t *testing.T) {
	res, _ := reporttest.Seed()
	b, err := StartupChart(res)
	if err != nil {
		t.Fatal(err)
	}
	p := decodeChart(t, b)
	wantSeries(t, p, 5000, map[string]color.RGBA{"measured phases": phaseColor, "log durations": logColor})
	res.Server.Startup = nil
	if _, err := StartupChart(res); err == nil {
		t.Error("nil start-up: want an error")
	}
	res.Server.Startup = &result.Startup{}
	if _, err := StartupChart(res); err == nil {
		t.Error("empty start-up: want an error")
	}
}

// TestStartupFacts: the chart's caption writes token counts as vLLM logs them.
func TestStartupFacts(t *testing.T) {
	got := startupFacts(reporttest.SeedStartup())
	for _, want := range []string{"KV cache 77,744 tokens", "max concurrency 18.98x at 4,096 tokens per request"} {
		if !strings.Contains(got, want) {
			t.Errorf("startupFacts = %q, want it to contain %q", got, want)
		}
	}
}

func TestSweepChart(t *testing.T) {
	res, _ := reporttest.Build("vllm", reporttest.SweepSpecs()...)
	b, err := SweepChart(res)
	if err != nil {
		t.Fatal(err)
	}
	wantSeries(t, decodeChart(t, b), 400,
		pal(KeyFirstVisible, KeyE2EClient, KeyEngineTTFT, KeyQueue, KeyTokensPerS))
	seed, _ := reporttest.Seed()
	if _, err := SweepChart(seed); err == nil {
		t.Error("streaming/non-streaming is not a sweep: want an error")
	}
}

// TestPaletteDistinct: every quantity has its own colour.
func TestPaletteDistinct(t *testing.T) {
	seen := map[color.RGBA]string{}
	for k, c := range Palette {
		if other, dup := seen[c]; dup {
			t.Errorf("%s and %s share colour %v", k, other, c)
		}
		seen[c] = k
	}
}

// BenchmarkCharts measures rendering every chart of the seed run.
func BenchmarkCharts(b *testing.B) {
	res, recs := reporttest.Seed()
	b.ReportAllocs()
	for b.Loop() {
		if err := renderAll(res, recs); err != nil {
			b.Fatal(err)
		}
	}
}

// TestIsSweep: which run sets get sweep.png.
func TestIsSweep(t *testing.T) {
	run := func(name string, c int, rate float64) result.Run {
		return result.Run{Name: name, Workload: result.Workload{Concurrency: c, Rate: rate}}
	}
	cases := []struct {
		name string
		runs []result.Run
		want bool
	}{
		{"concurrency levels", []result.Run{run("c=1", 1, 0), run("c=8", 8, 0)}, true},
		{"rate levels", []result.Run{run("rate=2", 0, 2), run("rate=4.5", 0, 4.5)}, true},
		{"one level is not a sweep", []result.Run{run("c=1", 1, 0)}, false},
		{"mixed kinds", []result.Run{run("c=1", 1, 0), run("rate=4", 0, 4)}, false},
		{"the seed's two modes", []result.Run{run("streaming", 1, 0), run("non-streaming", 1, 0)}, false},
		{"name without workload", []result.Run{run("c=1", 0, 0), run("c=2", 0, 0)}, false},
	}
	for _, c := range cases {
		if got := isSweep(&result.Results{Runs: c.runs}); got != c.want {
			t.Errorf("%s: isSweep = %v, want %v", c.name, got, c.want)
		}
	}
	// A rate sweep draws with the rate on the x axis.
	res, _ := reporttest.Build("vllm", reporttest.SweepSpecs()...)
	for i := range res.Runs {
		res.Runs[i].Name = fmt.Sprintf("rate=%d", i+1)
		res.Runs[i].Workload.Concurrency, res.Runs[i].Workload.Rate = 0, float64(i+1)
	}
	if sweepKind(res) != "rate" {
		t.Errorf("sweepKind = %q, want rate", sweepKind(res))
	}
	if _, err := SweepChart(res); err != nil {
		t.Error(err)
	}
}

// TestChartsEdgeCases: one request per run, records without content events,
// and a run with no successful request draw without error or panic.
func TestChartsEdgeCases(t *testing.T) {
	specs := reporttest.SeedSpecs()
	for i := range specs {
		specs[i].N = 1
	}
	res, recs := reporttest.Build("vllm", specs...)
	for i := range recs {
		recs[i].Events = nil // a client that kept no events
	}
	if err := renderAll(res, recs); err != nil {
		t.Fatalf("one request per run: %v", err)
	}
	// The second run failed entirely: its charts simply lack it.
	res.Runs[1].OK, res.Runs[1].Client = 0, result.ClientStats{}
	recs[1].Error, recs[1].E2ES = "http_status", 0
	if err := renderAll(res, recs); err != nil {
		t.Fatalf("one failed run: %v", err)
	}
}

// renderAll draws every chart PlanCharts lists, as WriteAll does, and
// returns every failure, joined.
func renderAll(res *result.Results, recs []result.Record) error {
	var errs []error
	for _, c := range PlanCharts(res, recs) {
		if _, err := c.render(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.File, err))
		}
	}
	return errors.Join(errs...)
}

// TestLogTicksLabels: up to three decades the axis is labelled at 1, 2 and
// 5 times each power of ten; over more only the powers of ten, whose
// labels do not run into each other.
func TestLogTicksLabels(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var out []string
		for _, tk := range (logTicks{}).Ticks(lo, hi) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	if got, want := labels(0.01, 1), []string{"0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"}; !slices.Equal(got, want) {
		t.Errorf("two decades: labels %q, want %q", got, want)
	}
	if got, want := labels(0.001, 1), []string{"0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"}; !slices.Equal(got, want) {
		t.Errorf("three decades: labels %q, want %q", got, want)
	}
	if got, want := labels(0.00005, 0.2), []string{"0.0001", "0.001", "0.01", "0.1"}; !slices.Equal(got, want) {
		t.Errorf("3.6 decades: labels %q, want %q", got, want)
	}
}
