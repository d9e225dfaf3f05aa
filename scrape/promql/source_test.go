package promql_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/scrape/promql"
	"github.com/servebench/servebench/scrape/promql/promtest"
)

const model = "promql-test-model"

// complete sends one non-streaming completion of exactly n tokens.
func complete(t *testing.T, base string, n int) {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"prompt":"Say something.","max_tokens":%d,"ignore_eos":true,"min_tokens":%d}`, model, n, n)
	resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
		t.Fatalf("completion: HTTP %d: %s", resp.StatusCode, b)
	}
}

func fetch(t *testing.T, base string) *scrape.Snapshot {
	t.Helper()
	s, err := scrape.Fetch(context.Background(), nil, base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func host(base string) string {
	u, _ := url.Parse(base)
	return u.Host
}

// TestWindow runs a real Prometheus scraping three bundled engines every
// second and checks that a window read through it equals each engine's own
// /metrics delta over the same requests: exact counts (no extrapolation),
// the same histogram sums, one replica per instance, the sum of them, the
// lag to the first scrape after the window, and a counter reset reported.
func TestWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus and bundled engines")
	}
	start := func(faults ...string) string {
		return simtest.Start(t, func(o *sim.Options) { o.ServedModelName = model; o.Faults = faults }).BaseURL()
	}
	a, b, c := start(), start(), start("metrics-reset=2")
	prom := promtest.Start(t, a, b, c)
	ctx := context.Background()

	sel, err := promql.ParseSelector(fmt.Sprintf(`{namespace="llm", job="vllm", instance!=%q}`, host(c)))
	if err != nil {
		t.Fatal(err)
	}
	// Wait: 10 s, not 3 intervals, so a loaded test machine's late scrape
	// does not cut a window short; the wait ends at the scrape.
	src, err := promql.New(promql.Options{URL: prom, Selector: sel, Filter: scrape.Filter{Model: model}, Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	beforeA, beforeB := fetch(t, a), fetch(t, b)
	from := time.Now()
	for range 3 {
		complete(t, a, 7)
	}
	complete(t, b, 5)
	complete(t, b, 5)
	to := time.Now()
	afterA, afterB := fetch(t, a), fetch(t, b)
	w, err := src.Window(ctx, from, to, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Replicas) != 2 || w.Replicas[0].Name == w.Replicas[1].Name {
		t.Fatalf("replicas %+v: want a and b", w.Replicas)
	}
	for _, r := range w.Replicas {
		want := scrape.Diff(beforeA, afterA, nil, scrape.Filter{})
		if r.Instance == host(b) {
			want = scrape.Diff(beforeB, afterB, nil, scrape.Filter{})
		}
		for _, q := range []scrape.Quantity{scrape.EngineRequests, scrape.EngineGenerationTokens, scrape.EnginePromptTokens} {
			got, _ := r.Delta.Counter(q)
			exp, _ := want.Counter(q)
			if got != exp || got == 0 {
				t.Errorf("replica %s %s = %v from Prometheus, %v from /metrics", r.Name, q, got, exp)
			}
		}
		for _, q := range []scrape.Quantity{scrape.EngineTTFT, scrape.EngineE2E, scrape.EngineQueue} {
			got, ok := r.Delta.Hist(q)
			exp, _ := want.Hist(q)
			if !ok || got.Count != exp.Count || math.Abs(got.Sum-exp.Sum) > 1e-9 || len(got.Buckets) != len(exp.Buckets) {
				t.Errorf("replica %s %s = %+v from Prometheus, %+v from /metrics", r.Name, q, got, exp)
			}
		}
		if _, ok := r.Gauges[scrape.EngineKVUsage]; !ok {
			t.Errorf("replica %s: no KV usage gauge over the window", r.Name)
		}
		if !r.To.After(to) || r.From.After(from) {
			t.Errorf("replica %s window %v..%v does not cover the run %v..%v", r.Name, r.From, r.To, from, to)
		}
	}
	if n, _ := w.Total.Counter(scrape.EngineRequests); n != 5 {
		t.Errorf("total requests %v, want 5", n)
	}
	if h, _ := w.Total.Hist(scrape.EngineTTFT); h.Count != 5 {
		t.Errorf("total TTFT count %v, want 5", h.Count)
	}
	if w.Interval != promtest.Interval || w.Lag <= 0 || w.Lag > 10*time.Second || w.Resets != 0 {
		t.Errorf("interval %v lag %v resets %d: want 1s, a lag within the wait, no reset", w.Interval, w.Lag, w.Resets)
	}
	if len(w.Queries) == 0 || !strings.Contains(w.Queries[0], `namespace="llm"`) || !strings.Contains(w.Queries[0], "@") {
		t.Errorf("queries %q: want the selector and the @ time in each", w.Queries)
	}
	t.Logf("lag %v, waited %v, %d queries, e.g. %s", w.Lag, w.Waited, len(w.Queries), w.Queries[0])

	// Snapshots read through Prometheus at the window's ends diff like
	// /metrics scrapes: the same five requests, the replicas kept apart.
	end := w.Replicas[0].To
	for _, r := range w.Replicas {
		if r.To.After(end) {
			end = r.To
		}
	}
	s0, err := src.Snapshot(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	s1, err := src.Snapshot(ctx, end)
	if err != nil {
		t.Fatal(err)
	}
	d := scrape.Diff(s0, s1, nil, scrape.Filter{})
	n, _ := d.Counter(scrape.EngineRequests)
	h, _ := d.Hist(scrape.EngineTTFT)
	if n != 5 || h.Count != 5 || len(h.Buckets) == 0 || len(d.Warnings()) > 0 {
		t.Errorf("snapshot delta: %v requests, TTFT %+v, warnings %q: want 5 and 5 with buckets", n, h, d.Warnings())
	}
	if running, ok := s1.Gauge(d.Dialect, scrape.Filter{}, scrape.EngineRunning); !ok || running != 0 {
		t.Errorf("running gauge %v, %v: want 0 after the requests", running, ok)
	}
	if iv, err := src.ScrapeInterval(ctx); err != nil || iv != promtest.Interval {
		t.Errorf("scrape interval %v, %v: want %v", iv, err, promtest.Interval)
	}

	// c restarts its metrics from zero after 2 responses: Prometheus must
	// see the counter fall between two scrapes and say so.
	onlyC, _ := promql.ParseSelector(fmt.Sprintf(`{instance=%q}`, host(c)))
	srcC, _ := promql.New(promql.Options{URL: prom, Selector: onlyC, Wait: 10 * time.Second})
	from = time.Now()
	complete(t, c, 3)
	time.Sleep(1500 * time.Millisecond) // a scrape sees 1
	complete(t, c, 3)                   // the reset
	time.Sleep(1500 * time.Millisecond) // a scrape sees the fresh counters
	complete(t, c, 3)
	wc, err := srcC.Window(ctx, from, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if wc.Resets == 0 || !strings.Contains(strings.Join(wc.Warnings, "\n"), "reset") {
		t.Errorf("resets %d, warnings %q: want the reset reported", wc.Resets, wc.Warnings)
	}
}

// TestWindowsNextRest: a run's windows read one at a time while it goes
// on (Next) and the rest at its end (Rest, after Window) count exactly the
// requests finished in each, and add up to the run's window.
func TestWindowsNextRest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus and bundled engines")
	}
	a := simtest.Start(t, func(o *sim.Options) { o.ServedModelName = model }).BaseURL()
	prom := promtest.Start(t, a)
	ctx := context.Background()
	src, err := promql.New(promql.Options{URL: prom, Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	from := time.Now()
	ws := src.Windows(from)
	batches := []int{2, 3, 1, 2} // requests per window; the first two read by Next
	var cuts []time.Time
	var got []*promql.Window
	for i, n := range batches[:len(batches)-1] {
		for range n {
			complete(t, a, 3)
		}
		cut := time.Now()
		if i < 2 {
			w, err := ws.Next(ctx, cut)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, w)
		} else {
			cuts = append(cuts, cut)
			// The next window's requests must not finish before the scrape
			// closing this one (Next waited for it above).
			if err := src.WaitScrape(ctx, cut); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range batches[len(batches)-1] {
		complete(t, a, 3)
	}
	run, err := src.Window(ctx, from, time.Now(), 8)
	if err != nil {
		t.Fatal(err)
	}
	rest, err := ws.Rest(ctx, run, cuts)
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, rest...)
	if len(got) != len(batches) || ws.Read() != len(batches) {
		t.Fatalf("%d windows, %d read: want %d", len(got), ws.Read(), len(batches))
	}
	var sum float64
	for i, w := range got {
		n, _ := w.Total.Counter(scrape.EngineRequests)
		h, _ := w.Total.Hist(scrape.EngineTTFT)
		if n != float64(batches[i]) || h.Count != n {
			t.Errorf("window %d: %v requests, %v TTFT observations (warnings %q): want %d", i+1, n, h.Count, w.Warnings, batches[i])
		}
		sum += n
	}
	if total, _ := run.Total.Counter(scrape.EngineRequests); total != sum || total != 8 {
		t.Errorf("windows add up to %v requests, the run's window %v: want 8", sum, total)
	}
}

// TestParseSelector: the matchers every query carries, and bad selectors
// refused with what is wrong.
func TestParseSelector(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{`{namespace="llm",job="vllm"}`, `{namespace="llm",job="vllm"}`, ""},
		{` namespace = "llm" , pod=~"vllm-.*", `, `{namespace="llm",pod=~"vllm-.*"}`, ""}, // no braces, spaces, trailing comma
		{`{a!="x\"y", b!~` + "`z+`" + `}`, `{a!="x\"y",b!~"z+"}`, ""},                     // escapes and backquotes
		{``, `{}`, ""},                              // no matcher
		{`{job="vllm"`, "", "closing }"},            // unclosed
		{`{job=vllm}`, "", "double-quoted"},         // unquoted value
		{`{__name__="up"}`, "", "__name__"},         // the metric is servebench's choice
		{`{1job="x"}`, "", "label name"},            // bad label name
		{`{job~"x"}`, "", "expected"},               // bad operator
		{`{job=~"("}`, "", "regex"},                 // bad regex
		{`{a="x" b="y"}`, "", "expected , between"}, // missing comma
	} {
		sel, err := promql.ParseSelector(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || sel.String() != tc.want {
			t.Errorf("%q: %s, %v; want %s", tc.in, sel, err, tc.want)
		}
	}
	m := promql.Matcher{Name: "pod", Op: "=~", Value: "vllm-[0-9]"}
	if !m.Matches("vllm-1") || m.Matches("xvllm-1") {
		t.Errorf("%s: regex matchers must be anchored", m)
	}
}
