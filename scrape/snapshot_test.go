package scrape

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestParseErrors: errors name the source and the line.
func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, text string
		line       int
		msg        string
	}{
		{"bad value on line 3", "# TYPE a counter\na 1\na{x=\"1\"} one\n", 3, "expected float"},
		{"unterminated label set", "a 1\nb{x=\"1\" 2\n", 2, ""},
		{"bad TYPE", "# TYPE a flux\n", 1, "unknown metric type"},
		{"duplicate series", "# TYPE a counter\na{x=\"1\"} 1\na{x=\"1\"} 2\n", 0, `duplicate series a{x="1"}`},
	}
	for _, c := range cases {
		_, err := ParseSource(strings.NewReader(c.text), "http://h/metrics")
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: err = %v, want *ParseError", c.name, err)
			continue
		}
		if pe.Line != c.line || !strings.Contains(err.Error(), "http://h/metrics") || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err = %q (line %d), want line %d naming the source and %q", c.name, err, pe.Line, c.line, c.msg)
		}
	}
	// A missing trailing newline is fine (curl output often lacks one).
	if s, err := Parse(strings.NewReader("# TYPE a gauge\na 1")); err != nil || len(s.Families) != 1 {
		t.Errorf("no trailing newline: %v", err)
	}
}

func TestParseFile(t *testing.T) {
	_, err := ParseFile(filepath.Join(t.TempDir(), "nope.txt"))
	if err == nil || !strings.Contains(err.Error(), "nope.txt") {
		t.Errorf("missing file: err = %v, want it named", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.txt")
	if err := os.WriteFile(bad, []byte("ok 1\nnot ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ParseFile(bad)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("unparsable file: err = %v, want file and line 2 named", err)
	}
}

func serveText(t *testing.T, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestFetch reads the vLLM fixture over HTTP and gets what ParseFile gets.
func TestFetch(t *testing.T) {
	file, text := loadFixture(t, "vllm_v1_metrics_qwen2.5-1.5b.txt")
	srv := serveText(t, text)
	s, err := Fetch(context.Background(), srv.Client(), srv.URL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Families) != len(file.Families) || s.Source != srv.URL+"/metrics" {
		t.Errorf("fetched %d families from %s, file has %d", len(s.Families), s.Source, len(file.Families))
	}
	a, _ := Diff(nil, s, nil, Filter{}).Hist(EngineTTFT)
	b, _ := Diff(nil, file, nil, Filter{}).Hist(EngineTTFT)
	if a.Count != b.Count || a.Sum != b.Sum {
		t.Errorf("fetched TTFT %+v != file TTFT %+v", a, b)
	}
}

func TestFetchErrors(t *testing.T) {
	srv := serveText(t, "a 1\n")
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		line := strings.Repeat("#", 1<<20-1) + "\n"
		for range MaxBodyBytes>>20 + 2 {
			if _, err := io.WriteString(w, line); err != nil {
				return
			}
		}
	}))
	defer huge.Close()
	ctx := context.Background()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	cases := []struct {
		name string
		ctx  context.Context
		url  string
		want []string
	}{
		{"404", ctx, srv.URL + "/nope", []string{srv.URL + "/nope", "404"}},
		{"not http", ctx, "ftp://x/metrics", []string{`"ftp://x/metrics"`, "http://"}},
		{"no host", ctx, "http:///metrics", []string{"http:///metrics"}},
		{"refused", ctx, "http://127.0.0.1:1/metrics", []string{"127.0.0.1:1"}},
		{"timeout", short, slow.URL + "/metrics", []string{slow.URL, "deadline"}},
		{"too big", ctx, huge.URL + "/metrics", []string{huge.URL, "larger than"}},
	}
	for _, c := range cases {
		_, err := Fetch(c.ctx, nil, c.url)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err = %v, want it to contain %q", c.name, err, w)
			}
		}
	}
}

// TestFetchAll: two replicas are summed by Diff and Gauge (KV averaged);
// one bad URL fails the whole fetch, naming it.
func TestFetchAll(t *testing.T) {
	rep := func(n, kv float64) *httptest.Server {
		return serveText(t, counterFamily("vllm:generation_tokens_total", m0, n)+
			gaugeFamily("vllm:num_requests_running", m0, n/100)+
			gaugeFamily("vllm:kv_cache_usage_perc", m0, kv)+
			histFamily("vllm:time_to_first_token_seconds", ttftBounds, series{m0, []float64{1, n / 100, n / 100}, n / 1000}))
	}
	a, b := rep(100, 0.25), rep(300, 0.75)
	s, err := FetchAll(context.Background(), nil, []string{a.URL + "/metrics", b.URL + "/metrics"})
	if err != nil {
		t.Fatal(err)
	}
	d := Diff(nil, s, nil, Filter{Model: "m"})
	if v, _ := d.Counter(EngineGenerationTokens); v != 400 {
		t.Errorf("summed generation tokens = %g, want 400", v)
	}
	if h, _ := d.Hist(EngineTTFT); h.Count != 4 || math.Abs(h.Sum-0.4) > 1e-12 || h.Buckets[0].Count != 2 {
		t.Errorf("summed TTFT = %+v, want count 4, sum 0.4, first bucket 2", h)
	}
	if v, _ := s.Gauge(d.Dialect, Filter{}, EngineRunning); v != 4 {
		t.Errorf("running = %g, want 1+3", v)
	}
	if v, _ := s.Gauge(d.Dialect, Filter{}, EngineKVUsage); v != 0.5 {
		t.Errorf("KV usage = %g, want the replicas' mean 0.5", v)
	}
	// Filter.Replica reads one replica (FetchAll's URL index) alone.
	if v, _ := Diff(nil, s, nil, Filter{Model: "m", Replica: "1"}).Counter(EngineGenerationTokens); v != 300 {
		t.Errorf("replica 1 generation tokens = %g, want b's 300", v)
	}
	if v, _ := s.Gauge(d.Dialect, Filter{Replica: "0"}, EngineKVUsage); v != 0.25 {
		t.Errorf("replica 0 KV usage = %g, want a's 0.25", v)
	}
	// Before/after across replicas: each replica's series is matched to its own.
	s2, _ := FetchAll(context.Background(), nil, []string{a.URL + "/metrics", b.URL + "/metrics"})
	if v, ok := Diff(s, s2, nil, Filter{}).Counter(EngineGenerationTokens); !ok || v != 0 {
		t.Errorf("replica self-diff = %g, %v; want 0", v, ok)
	}
	_, err = FetchAll(context.Background(), nil, []string{a.URL + "/metrics", a.URL + "/missing"})
	if err == nil || !strings.Contains(err.Error(), a.URL+"/missing") {
		t.Errorf("one bad replica: err = %v, want it named", err)
	}
	if _, err := FetchAll(context.Background(), nil, []string{a.URL + "/metrics", a.URL + "/metrics"}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("same URL twice: err = %v, want a refusal (it would be summed twice)", err)
	}
	if _, err := FetchAll(context.Background(), nil, nil); err == nil {
		t.Error("no URLs: want an error")
	}
}
