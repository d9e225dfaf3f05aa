package scrape

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// These tests read /metrics from the bundled engine over real HTTP: the
// engine exports vLLM V1 names, so they check the vllm dialect end to end.

const engineModel = "scrape-test-model"

func startEngine(t *testing.T, faults ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the bundled engine")
	}
	e := simtest.Start(t, func(o *sim.Options) {
		o.ServedModelName = engineModel
		o.Faults = faults
	})
	return e.BaseURL()
}

// complete sends one non-streaming completion of exactly maxTokens tokens.
func complete(t *testing.T, base string, maxTokens int) {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"prompt":"Say something.","max_tokens":%d,"ignore_eos":true,"min_tokens":%d}`, engineModel, maxTokens, maxTokens)
	resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
		t.Fatalf("completion: HTTP %d: %s", resp.StatusCode, b)
	}
}

// fetchUntil scrapes until ok(snapshot) holds, bounded: the engine may
// update its metrics just after the response is sent.
func fetchUntil(t *testing.T, base string, ok func(*Snapshot) bool) *Snapshot {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := Fetch(context.Background(), nil, base+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		if ok(s) || time.Now().After(deadline) {
			return s
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBundledEngine(t *testing.T) {
	base := startEngine(t)
	before, err := Fetch(context.Background(), nil, base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	dl, ok := Detect(before)
	if !ok || dl.Name != "vllm" {
		t.Fatalf("bundled engine detected as %v, %v; want vllm", dl, ok)
	}
	const n, tokens = 4, 8
	for range n {
		complete(t, base, tokens)
	}
	finished := func(s *Snapshot) bool {
		v, _ := Diff(before, s, dl, Filter{}).Counter(EngineRequests)
		return v >= n
	}
	after := fetchUntil(t, base, finished)
	d := Diff(before, after, dl, Filter{Model: engineModel})
	if w := d.Warnings(); len(w) > 0 {
		t.Errorf("warnings: %q", w)
	}
	for q, want := range map[Quantity]float64{EngineRequests: n, EngineGenerationTokens: n * tokens} {
		if v, ok := d.Counter(q); !ok || v != want {
			t.Errorf("%s = %g, %v; want %g", q, v, ok, want)
		}
	}
	if v, ok := d.Counter(EnginePromptTokens); !ok || v <= 0 {
		t.Errorf("prompt tokens = %g, %v; want > 0", v, ok)
	}
	counts := map[Quantity]float64{EngineTTFT: n, EngineE2E: n, EngineQueue: n, EnginePrefill: n, EngineDecode: n, EngineITL: n * (tokens - 1)}
	for q, want := range counts {
		if h, ok := d.Hist(q); !ok || h.Count != want {
			t.Errorf("%s count = %g, %v; want %g", q, h.Count, ok, want)
		}
	}
	ttft, _ := d.Hist(EngineTTFT)
	e2e, _ := d.Hist(EngineE2E)
	if !(ttft.Mean() > 0 && ttft.Mean() < e2e.Mean()) {
		t.Errorf("TTFT mean %g should be positive and below E2E mean %g", ttft.Mean(), e2e.Mean())
	}
	if v, ok := after.Gauge(dl, Filter{}, EngineRunning); !ok || v != 0 {
		t.Errorf("running after the run = %g, %v; want 0", v, ok)
	}
}

// TestBundledEngineMetricsReset: with --fault metrics-reset=2 the engine
// recreates its metrics after every second response, as a restarted server
// would; the delta across it must warn and omit, never go negative.
func TestBundledEngineMetricsReset(t *testing.T) {
	base := startEngine(t, "metrics-reset=2")
	complete(t, base, 4)
	mid := fetchUntil(t, base, func(s *Snapshot) bool {
		h, _ := Diff(nil, s, nil, Filter{}).Hist(EngineTTFT)
		return h.Count >= 1
	})
	complete(t, base, 4) // the second response triggers the reset
	after := fetchUntil(t, base, func(s *Snapshot) bool {
		h, ok := Diff(nil, s, nil, Filter{}).Hist(EngineTTFT)
		return !ok || h.Count < 1
	})
	d := Diff(mid, after, nil, Filter{})
	if h, ok := d.Hist(EngineTTFT); ok {
		t.Errorf("TTFT across a reset reported: %+v", h)
	}
	if v, ok := d.Counter(EngineGenerationTokens); ok {
		t.Errorf("generation tokens across a reset reported: %g", v)
	}
	w := strings.Join(d.Warnings(), "\n")
	t.Logf("warnings across the reset:\n%s", w)
	if !strings.Contains(w, "engine.ttft") || !(strings.Contains(w, "counter reset") || strings.Contains(w, "disappeared")) {
		t.Errorf("warnings %q should say engine.ttft was reset", w)
	}
}
