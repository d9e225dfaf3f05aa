package launch

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestOllamaListeningLine: Ollama names its port only in this line (with
// OLLAMA_HOST port 0), so the launcher learns the base URL from it.
func TestOllamaListeningLine(t *testing.T) {
	f := ParseLog(strings.NewReader(`time=2026-12-01T20:00:00.000Z level=INFO source=routes.go:1718 msg="Listening on 127.0.0.1:41235 (version 0.17.4)"
time=2026-12-01T20:00:01.000Z level=INFO source=server.go:1 msg="Server listening on 127.0.0.1:40000"
`))
	if f.URL != "http://127.0.0.1:41235" || f.Engine != "ollama" {
		t.Errorf("URL %q engine %q", f.URL, f.Engine)
	}
}

func TestOllamaPreset(t *testing.T) {
	spec, err := PresetSpecFor(PresetOllama, "", PresetOptions{Bin: "/opt/ollama", Ollama: OllamaOptions{Models: "/tmp/m", GGUF: "dir/Tiny Model.gguf"}})
	if err != nil {
		t.Fatal(err)
	}
	if spec.Command[0] != "/opt/ollama" || spec.Command[1] != "serve" || spec.HealthPath != "/api/version" || spec.BaseURL != "" {
		t.Errorf("spec %+v", spec)
	}
	env := strings.Join(spec.Env, " ")
	if !strings.Contains(env, "OLLAMA_HOST=127.0.0.1:0") || !strings.Contains(env, "OLLAMA_MODELS=/tmp/m") {
		t.Errorf("env %v", spec.Env)
	}
	if spec.Model != "tiny-model:latest" || spec.Prepare == nil {
		t.Errorf("model %q, prepare set %v", spec.Model, spec.Prepare != nil)
	}
	if _, err := PresetSpecFor("vllm", "", PresetOptions{Ollama: OllamaOptions{GGUF: "x.gguf"}}); err == nil {
		t.Error("--gguf with --server vllm: no error")
	}
	if _, err := FindOllama("/nonexistent/ollama"); !errors.Is(err, ErrNoOllama) ||
		!strings.Contains(err.Error(), ".ci/install-ollama") || !strings.Contains(err.Error(), "pass Bin") {
		t.Errorf("FindOllama(missing) = %v", err)
	}
}

func TestModelfileNames(t *testing.T) {
	for _, c := range []struct {
		mf   string
		want bool
	}{
		{"# tiny\nFROM ./tiny.gguf\nPARAMETER num_ctx 2048\n", true},
		{"FROM tiny.gguf", true},
		{"FROM ./other.gguf", false},
		{"FROM llama3", false},
	} {
		if got := modelfileNames(c.mf, "tiny.gguf"); got != c.want {
			t.Errorf("%q: %v", c.mf, got)
		}
	}
}

func TestOllamaError(t *testing.T) {
	out := "\x1b[?25lgathering model components \x1b[K\rcopying file sha256:ab 100%\nError: invalid file magic\n"
	if got := ollamaError([]byte(out)); got != "Error: invalid file magic" {
		t.Errorf("ollamaError = %q", got)
	}
}

// eagerPhases are the phases of a server that loads its model before it
// listens (all but PhaseModelLoaded, which only a lazy one passes).
func eagerPhases() []string {
	return slices.DeleteFunc(slices.Clone(Phases), func(p string) bool { return p == PhaseModelLoaded })
}
