package launch

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/launch/launchtest"
)

// The seed lesson's figures for the default profile (RTX 3060, Qwen2.5-7B AWQ).
const (
	seedWeightsS   = 23.4
	seedHealthS    = 90.0
	seedKVTokens   = 77744
	seedMaxConc    = 18.98
	bundledSpeedup = 20
)

// logNumber reads a number from the server log with a pattern of its own, as
// an independent check of the parser's reading.
func logNumber(t *testing.T, log, pattern string) float64 {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("log has no match for %q", pattern)
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestBundledEngine starts `servebench engine --port 0 --speedup 20` in both
// health modes and checks phases, the port learned from the log, and the
// facts against the engine's own log lines and the seed's figures.
func TestBundledEngine(t *testing.T) {
	bin := launchtest.Servebench(t)
	for _, mode := range []string{"refuse", "503"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			spec, err := PresetSpecFor("bundled", bin, PresetOptions{Speedup: bundledSpeedup, Args: []string{"--health-during-load", mode}})
			if err != nil {
				t.Fatal(err)
			}
			spec.LogPath = filepath.Join(t.TempDir(), "server.log")
			spec.PollInterval = 50 * time.Millisecond
			spec.ReadyTimeout = time.Minute
			s, err := Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Stop() })
			var rec phaseRecorder
			st, err := s.WaitReady(context.Background(), rec.record)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(s.BaseURL(), "http://127.0.0.1:") || strings.HasSuffix(s.BaseURL(), ":0") {
				t.Errorf("base URL %q: want the real port from the log", s.BaseURL())
			}
			if len(rec.phases) != len(eagerPhases()) {
				t.Errorf("phases %v, want all of %v", rec.phases, eagerPhases())
			}
			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
			assertGone(t, s)
			b, err := os.ReadFile(spec.LogPath)
			if err != nil {
				t.Fatal(err)
			}
			log := string(b)

			// Parsed facts equal what the engine printed...
			kv := logNumber(t, log, `GPU KV cache size: ([0-9,]+) tokens`)
			conc := logNumber(t, log, `Maximum concurrency for [0-9,]+ tokens per request: ([0-9.]+)x`)
			weights := logNumber(t, log, `Loading weights took ([0-9.]+) seconds`)
			if st.KVCacheTokens == nil || float64(*st.KVCacheTokens) != kv || st.MaxConcurrency == nil || *st.MaxConcurrency != conc ||
				st.WeightsLoadS == nil || *st.WeightsLoadS != weights || st.MaxConcurrencyTokens == nil || *st.MaxConcurrencyTokens != 4096 {
				t.Errorf("parsed kv %v conc %v weights %v tokens %v; log says %v, %v, %v",
					st.KVCacheTokens, st.MaxConcurrency, st.WeightsLoadS, st.MaxConcurrencyTokens, kv, conc, weights)
			}
			// ...and those are the seed's (the engine is calibrated to it).
			if math.Abs(kv-seedKVTokens)/seedKVTokens > 0.005 || math.Abs(conc-seedMaxConc) > 0.02 {
				t.Errorf("KV cache %v tokens, %vx: want the seed's %d and %.2fx", kv, conc, seedKVTokens, seedMaxConc)
			}
			// Durations are the seed's divided by the speedup; the engine
			// sleeps in real time, so a busy machine only makes them longer.
			if want := seedWeightsS / bundledSpeedup; weights < 0.95*want || weights > 1.5*want {
				t.Errorf("weights_load_s = %.3f, want about %.3f (23.4 s / %d)", weights, want, bundledSpeedup)
			}
			if want := seedHealthS / bundledSpeedup; *st.HealthOKS < 0.9*want || *st.HealthOKS > 1.5*want {
				t.Errorf("health_ok_s = %.3f, want about %.3f (90 s / %d)", *st.HealthOKS, want, bundledSpeedup)
			}
			loaded, port, health := *st.WeightsLoadedAtS, *st.PortOpenS, *st.HealthOKS
			switch mode {
			case "refuse": // vLLM: nothing listens until the engine is ready
				if !(loaded < port && health-port < 0.5) {
					t.Errorf("refuse: weights %.2f, port %.2f, health %.2f: want the port to open late, with health right after", loaded, port, health)
				}
			case "503": // llama.cpp style: listening at once, 503 until ready
				if !(port < loaded && loaded < health) {
					t.Errorf("503: want port (%.2f) < weights (%.2f) < health (%.2f)", port, loaded, health)
				}
			}
		})
	}
}
