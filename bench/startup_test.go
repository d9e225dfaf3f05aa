package bench

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/launch"
)

func fp(v float64) *float64 { return &v }
func ip(v int64) *int64     { return &v }

// run builds a measurement: port, health, model, first token, weights-loaded-at.
func run(port, health, model, first, loaded float64, kv int64) *launch.Measurement {
	return &launch.Measurement{
		Startup: &launch.Startup{PortOpenS: fp(port), HealthOKS: fp(health), ModelListedS: fp(model), FirstTokenS: fp(first),
			WeightsLoadedAtS: fp(loaded), KVCacheTokens: ip(kv), PollIntervalS: fp(0.1)},
		Facts:   launch.Facts{Engine: "vllm", KVCacheTokens: &launch.Fact{Value: float64(kv)}, WeightsLoad: &launch.Fact{Value: loaded - 1}},
		BaseURL: "http://127.0.0.1:1", Model: "m",
	}
}

func TestSummarizeStartupsAndMedian(t *testing.T) {
	var runs []*result.Startup
	for _, m := range []*launch.Measurement{run(90, 90.1, 90.2, 90.3, 34, 77744), run(92, 92.1, 92.2, 92.3, 35, 77744),
		run(97, 97.1, 97.2, 97.3, 36, 77744)} {
		runs = append(runs, (*result.Startup)(m.Startup))
	}
	runs[2].ModelListedS = nil // a server without /v1/models on one run
	sum := SummarizeStartups(runs)
	if s := sum["port_open_s"]; s == nil || s.Min != 90 || s.Median != 92 || s.Max != 97 || s.N != 3 {
		t.Errorf("port_open_s summary = %+v", s)
	}
	if s := sum["model_listed_s"]; s == nil || s.N != 2 || s.Median != 91.2 {
		t.Errorf("model_listed_s summary = %+v: want the two runs that have it", s)
	}
	if _, ok := sum["init_engine_s"]; ok {
		t.Error("a key no run has is in the summary")
	}
	med := MedianStartup(runs)
	if *med.HealthOKS != 92.1 || *med.KVCacheTokens != 77744 || med.InitEngineS != nil || *med.PollIntervalS != 0.1 {
		t.Errorf("MedianStartup = %+v", med)
	}
}

func TestWriteStartupText(t *testing.T) {
	var b strings.Builder
	// llama.cpp style: the port opens before the weights are loaded.
	if err := WriteStartupText(&b, []*launch.Measurement{run(0.1, 5, 5.1, 5.2, 3, 1234567)}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	order := []string{"spawned", "port open", "weights loaded", "health OK", "model listed", "first token"}
	last := -1
	for _, p := range order {
		i := strings.Index(out, "\n"+p+" ")
		if i < last {
			t.Errorf("%q out of time order:\n%s", p, out)
		}
		last = i
	}
	for _, want := range []string{"weights loaded              3.00       2.90", "1,234,567 tokens", "resolution of 0.100 s", "vllm format"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}

	b.Reset()
	if err := WriteStartupText(&b, []*launch.Measurement{run(90, 90.1, 90.2, 90.3, 34, 7), run(97, 97.1, 97.2, 97.3, 36, 9)}); err != nil {
		t.Fatal(err)
	}
	out = b.String()
	for _, want := range []string{"min   median      max", "port open           90.00    93.50    97.00", "8 (min 7, max 9, n=2) tokens"} {
		if !strings.Contains(out, want) {
			t.Errorf("repeat text lacks %q:\n%s", want, out)
		}
	}
	if err := WriteStartupText(&b, nil); err == nil {
		t.Error("no runs: want an error")
	}
}
