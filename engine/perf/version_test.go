package perf

import (
	"strings"
	"testing"
	"time"
)

func TestParseVLLMVersion(t *testing.T) {
	for in, want := range map[string]vllmVersion{
		"0.20.1": {0, 20, 1}, "v0.14.0": {0, 14, 0}, "0.6.4.post1": {0, 6, 4}, "0.23": {0, 23, 0},
		"0.11.0rc2": {0, 11, 0}, "1.0.0+cu129": {1, 0, 0},
	} {
		got, err := parseVLLMVersion(in)
		if err != nil || got != want {
			t.Errorf("parseVLLMVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "latest", "0", "0.x.1", "V1", "0.14rc1.0"} {
		if _, err := parseVLLMVersion(in); err == nil {
			t.Errorf("parseVLLMVersion(%q): no error", in)
		}
	}
	for in, want := range map[string]string{
		"0.20.1": "0.20.1", "0.15.1 (vllm/vllm-openai:latest, WSL2 + Docker Desktop)": "0.15.1",
		"not stated (pip install vllm before 2024-09-20, so before 0.6.2)": "", "V1 (version not stated in the seed)": "",
	} {
		if got := statedVersion(in); got != want {
			t.Errorf("statedVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAsyncSchedulingStep: from vLLM 0.14.0 a step no longer pays
// StepOverhead beside its GPU work; before it, and with no version (the
// seed's), it pays it as before; before 0.8.0 (V0) each decoding sequence
// adds V0SeqOverhead.
func TestAsyncSchedulingStep(t *testing.T) {
	g, err := LookupGPU("a100-40gb")
	if err != nil {
		t.Fatal(err)
	}
	m, err := LookupModel("qwen2.5-7b-instruct")
	if err != nil {
		t.Fatal(err)
	}
	at := func(version string) *Perf {
		cfg := DefaultConfig()
		cfg.VLLMVersion = version
		p, err := New(g, m, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	seed, before, after := at(""), at("0.13.0"), at("0.14.0")
	decode := Step{DecodeSeqs: 4, ContextTokens: 4 * 500}
	if a, b := seed.StepTime(decode), before.StepTime(decode); a != b {
		t.Errorf("0.13.0 decode step %v, seed's %v: want the same", b, a)
	}
	if a, b := seed.StepTime(decode), after.StepTime(decode); a-b != StepOverhead {
		t.Errorf("0.14.0 decode step %v, seed's %v: want StepOverhead (%v) less", b, a, StepOverhead)
	}
	if b := after.Breakdown(decode); b.Overhead != time.Duration(m.Layers)*LayerOverhead {
		t.Errorf("0.14.0 step overhead %v, want the layers' %v alone", b.Overhead, time.Duration(m.Layers)*LayerOverhead)
	}
	// A step shorter than two StepOverheads still takes one, and its
	// parts add up to that.
	short := Breakdown{Overhead: StepOverhead + 100*time.Microsecond, Weights: 200 * time.Microsecond}
	short.Total = short.Overhead + short.Weights
	if b := after.loop.overlap(short); b.Total != StepOverhead || b.Overhead+b.Weights != b.Total {
		t.Errorf("0.14.0 short step: total %v (want StepOverhead %v), overhead %v + weights %v", b.Total, StepOverhead, b.Overhead, b.Weights)
	}
	v0, v1 := at("0.7.3"), at("0.8.0")
	if a, b := seed.StepTime(decode), v1.StepTime(decode); a != b {
		t.Errorf("0.8.0 decode step %v, seed's %v: want the same", b, a)
	}
	if a, b := seed.StepTime(decode), v0.StepTime(decode); b-a != 4*V0SeqOverhead {
		t.Errorf("0.7.3 decode step %v, seed's %v: want 4 x V0SeqOverhead (%v) more", b, a, V0SeqOverhead)
	}
	if _, err := New(g, m, Config{GPUMemoryUtilization: 0.9, VLLMVersion: "latest"}); err == nil ||
		!strings.Contains(err.Error(), `"latest"`) {
		t.Errorf("New with VLLMVersion latest: %v, want an error naming it", err)
	}
}

// TestMemoryReleaseMatchesStatedVersion: a memory figure names its
// profile (Config.Release) apart from the release it states (VLLM), as
// Config.Release's doc says why; the two must agree where the stated
// release has a modelled profile, and a later profile needs a row of its
// release (the sorting sampler's, llm-d's table, states none).
func TestMemoryReleaseMatchesStatedVersion(t *testing.T) {
	byMinor := map[int]MemoryRelease{19: MemoryTritonSampler, 28: MemoryModelRunnerV2}
	for _, f := range fidelityFigures(t) {
		v, err := parseVLLMVersion(statedVersion(f.VLLM))
		stated, ok := byMinor[v.minor]
		switch {
		case err == nil && v.major == 0 && ok && f.Cfg.Release != stated:
			t.Errorf("%s %s %s: states vLLM %s but Cfg.Release is %d, want %d", f.GPU, f.Model, f.Config, statedVersion(f.VLLM), f.Cfg.Release, stated)
		case f.Cfg.Release > MemorySortSampler && (err != nil || !ok || stated != f.Cfg.Release):
			t.Errorf("%s %s %s: Cfg.Release %d but states vLLM %q", f.GPU, f.Model, f.Config, f.Cfg.Release, f.VLLM)
		case f.Cfg.ColdCompile && f.Cfg.Release != MemoryModelRunnerV2:
			t.Errorf("%s %s %s: ColdCompile without 0.28's profile (memory.go: it counts only there)", f.GPU, f.Model, f.Config)
		}
	}
}
