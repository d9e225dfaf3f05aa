package launch

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSplitCommand(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  string // substring of the error; "" = no error
	}{
		// plain words, runs of blanks and tabs
		{"vllm serve  Qwen/Qwen2.5-7B\t--port 8011", []string{"vllm", "serve", "Qwen/Qwen2.5-7B", "--port", "8011"}, ""},
		// single quotes keep everything, backslashes included
		{`sh -c 'echo $HOME \n'`, []string{"sh", "-c", `echo $HOME \n`}, ""},
		// double quotes keep blanks; \" and \\ are escapes, \n is not
		{`a "b c" "d\"e" "f\\g" "h\n"`, []string{"a", "b c", `d"e`, `f\g`, `h\n`}, ""},
		// backslash outside quotes escapes a blank
		{`a b\ c`, []string{"a", "b c"}, ""},
		// quotes join with adjacent text; empty quotes make an empty argument
		{`--arg="x y"z ''`, []string{"--arg=x yz", ""}, ""},
		// backslash-newline continues the line, as in a pasted shell command
		{"vllm serve m \\\n  --port 1", []string{"vllm", "serve", "m", "--port", "1"}, ""},
		// JSON arguments survive single quotes
		{`srv --cfg '{"a": [1, 2]}'`, []string{"srv", "--cfg", `{"a": [1, 2]}`}, ""},
		{`a 'b`, nil, "unterminated ' quote"},
		{`a "b`, nil, `unterminated " quote`},
		{`a b\`, nil, "lone backslash"},
		{"   ", nil, "expected a program"},
	}
	for _, c := range cases {
		got, err := SplitCommand(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("SplitCommand(%q) err = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestPresetSpec(t *testing.T) {
	v, err := PresetSpecFor("vllm", "", PresetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The seed lesson's exact command line and port.
	if got := strings.Join(v.Command, " "); got != "vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ --quantization awq_marlin --max-model-len 4096 --gpu-memory-utilization 0.9 --port 8011" {
		t.Errorf("vllm command = %s", got)
	}
	if v.BaseURL != "http://127.0.0.1:8011" || v.HealthPath != "/health" || v.Preset != "vllm" {
		t.Errorf("vllm spec = %+v", v)
	}
	b, err := PresetSpecFor("bundled", "/bin/servebench", PresetOptions{GPU: "h100-80gb", Speedup: 20, Args: []string{"--health-during-load", "503"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(b.Command, " "); got != "/bin/servebench engine --port 0 --gpu h100-80gb --speedup 20 --health-during-load 503" {
		t.Errorf("bundled command = %s", got)
	}
	if b.BaseURL != "" {
		t.Errorf("bundled BaseURL = %q, want empty (learned from the log)", b.BaseURL)
	}
	l, _ := PresetSpecFor("llamacpp", "", PresetOptions{Model: "/models/q.gguf"})
	if !slices.Contains(l.Command, "/models/q.gguf") || !slices.Contains(l.Command, "--metrics") {
		t.Errorf("llamacpp command = %q", l.Command)
	}
	for _, name := range []string{"sglang", "tgi"} {
		p, err := PresetSpecFor(name, "", PresetOptions{Model: "my/model"})
		if err != nil || !slices.Contains(p.Command, "my/model") || p.BaseURL == "" {
			t.Errorf("%s: %+v, %v", name, p, err)
		}
	}
	if _, err := PresetSpecFor("bogus", "", PresetOptions{}); err == nil || !strings.Contains(err.Error(), `"bogus"`) || !strings.Contains(err.Error(), "bundled, vllm") {
		t.Errorf("unknown preset: %v", err)
	}
	if _, err := PresetSpecFor("vllm", "", PresetOptions{Speedup: 10}); err == nil {
		t.Error("--speedup accepted for a real server")
	}
	if _, err := PresetSpecFor("bundled", "", PresetOptions{}); err == nil {
		t.Error("bundled without a binary path accepted")
	}
}

func TestSpecDefaults(t *testing.T) {
	s := Spec{Command: []string{"x"}}.withDefaults()
	if s.PollInterval != 100*time.Millisecond || s.ReadyTimeout != 15*time.Minute || s.HealthPath != "/health" || s.StopGrace != DefaultStopGrace {
		t.Errorf("defaults = %+v", s)
	}
	for _, bad := range []string{"ftp://x:1", "http://:80", "http://h:99999", "not a url"} {
		if _, err := ParseBaseURL(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseBaseURL(%q) err = %v", bad, err)
		}
	}
	if err := (Spec{Command: []string{"x"}, HealthPath: "health"}).Validate(); err == nil {
		t.Error("health path without / accepted")
	}
}

// TestEnvironment: a started server's recorded environment keeps the
// variables that change how it serves (OLLAMA_*, VLLM_*,
// CUDA_VISIBLE_DEVICES), what servebench sets overriding its own, and
// never a secret's value.
func TestEnvironment(t *testing.T) {
	spec := Spec{Env: []string{"OLLAMA_HOST=127.0.0.1:0", "OLLAMA_NUM_PARALLEL=4"}}
	got := spec.Environment([]string{"PATH=/usr/bin", "OLLAMA_NUM_PARALLEL=1", "VLLM_ATTENTION_BACKEND=FLASHINFER",
		"CUDA_VISIBLE_DEVICES=0,1", "VLLM_API_KEY=sk-secret-value", "HF_TOKEN=hf_abcdef"})
	want := map[string]string{"OLLAMA_HOST": "127.0.0.1:0", "OLLAMA_NUM_PARALLEL": "4", "VLLM_ATTENTION_BACKEND": "FLASHINFER",
		"CUDA_VISIBLE_DEVICES": "0,1", "VLLM_API_KEY": Redacted}
	if !maps.Equal(got, want) {
		t.Errorf("Environment = %v, want %v", got, want)
	}
	if env := (Spec{}).Environment([]string{"PATH=/usr/bin"}); env != nil {
		t.Errorf("nothing relevant: %v, want nil", env)
	}
}
