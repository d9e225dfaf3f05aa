package scrape

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse drives the whole /metrics path on arbitrary input: Parse, then
// Detect, Diff under every dialect, Gauge and both output writers. Nothing
// may panic, errors must be *ParseError, a snapshot diffed with itself must
// report zero everywhere, and quantile estimates must lie within the
// buckets' range. Seeds: the fixtures (f.Add) and testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtureDir, "*.txt"))
	for _, p := range files {
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	// Small seeds reach the histogram, summary and reset paths faster than
	// the 50 KB vLLM scrape does.
	for _, s := range []string{
		"# TYPE vllm:time_to_first_token_seconds histogram\nvllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"m\",le=\"0.1\"} 1\nvllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"m\",le=\"+Inf\"} 3\nvllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\"} 0.7\nvllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 3\n",
		"# TYPE tgi_request_duration summary\ntgi_request_duration{quantile=\"0.5\"} 1\ntgi_request_duration_sum 4\ntgi_request_duration_count 3\n# TYPE tgi_queue_size gauge\ntgi_queue_size 2\n",
		"sglang:prompt_tokens_total{model_name=\"a\"} 5\nsglang:num_running_reqs{name=\"a\"} NaN\n",
		"# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total 1e308\nllamacpp:requests_processing -Inf\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := Parse(bytes.NewReader(in))
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *ParseError", err, err)
			}
			return
		}
		Detect(s)
		for _, name := range Dialects {
			dl, _ := Lookup(name)
			checkSnapshot(t, s, dl)
		}
		if r, err := Read(s, nil, Filter{}); err == nil {
			if err := r.WriteJSON(io.Discard); err != nil {
				t.Fatalf("WriteJSON: %v", err)
			}
			if err := r.WriteText(io.Discard); err != nil {
				t.Fatalf("WriteText: %v", err)
			}
		}
	})
}

func checkSnapshot(t *testing.T, s *Snapshot, dl *Dialect) {
	total := Diff(nil, s, dl, Filter{})
	self := Diff(s, s, dl, Filter{})
	for _, q := range Quantities {
		if h, ok := self.Hist(q); ok && (h.Count != 0 || h.Sum != 0) {
			t.Fatalf("%s: self-diff histogram %+v, want zero", q, h)
		}
		if v, ok := self.Counter(q); ok && v != 0 {
			t.Fatalf("%s: self-diff counter %g, want 0", q, v)
		}
		if v, ok := s.Gauge(dl, Filter{}, q); ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("%s: gauge %g reported", q, v)
		}
		h, ok := total.Hist(q)
		if !ok {
			continue
		}
		lo, hi, sane := bucketRange(h.Buckets)
		for _, p := range []float64{0, 0.5, 0.9, 0.99, 1} {
			v := h.Quantile(p)
			if sane && !math.IsNaN(v) && (v < lo || v > hi) {
				t.Fatalf("%s: Quantile(%g) = %g outside the buckets' range [%g, %g]: %+v", q, p, v, lo, hi, h.Buckets)
			}
		}
	}
}

// bucketRange is where a quantile estimate may land: from min(0, lowest
// bound) to the highest finite bound. sane is false for bounds no real
// histogram has (NaN, -Inf, none finite).
func bucketRange(bs []Bucket) (lo, hi float64, sane bool) {
	lo, hi = 0, math.Inf(-1)
	for _, b := range bs {
		if math.IsNaN(b.UpperBound) || math.IsInf(b.UpperBound, -1) {
			return 0, 0, false
		}
		if !math.IsInf(b.UpperBound, 1) {
			lo, hi = min(lo, b.UpperBound), max(hi, b.UpperBound)
		}
	}
	return lo, hi, !math.IsInf(hi, -1)
}
