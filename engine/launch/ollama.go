package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/servebench/servebench/engine/option"
)

// PresetOllama is the preset name of `ollama serve`.
const PresetOllama = "ollama"

// OllamaOptions adjust the ollama preset.
type OllamaOptions struct {
	// Models is OLLAMA_MODELS, where the server keeps its models ("": its
	// default, ~/.ollama/models).
	Models string
	// GGUF is a model file to create the model from once the server
	// answers (`ollama create`), named after the file; "" = serve a model
	// Models already holds.
	GGUF string
}

// ErrNoOllama is wrapped when no ollama binary is found.
var ErrNoOllama = errors.New("no ollama binary")

// FindOllama returns the path of bin ("" = ollama on PATH).
func FindOllama(bin string) (string, error) {
	name := bin
	if name == "" {
		name = "ollama"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoOllama, option.Errorf("Bin", nil, "%q not found (%v): build one with .ci/install-ollama (it prints its path), or install Ollama, and put it on PATH or pass {Bin}", name, err))
	}
	return p, nil
}

// OllamaModelName is the model name a GGUF file is created under: its base
// name without .gguf, with characters Ollama refuses replaced by '-'.
func OllamaModelName(gguf string) string {
	n := strings.TrimSuffix(filepath.Base(gguf), filepath.Ext(gguf))
	n = regexp.MustCompile(`[^A-Za-z0-9_.-]`).ReplaceAllString(n, "-")
	return strings.ToLower(strings.Trim(n, "-.")) + ":latest"
}

// ollamaSpec fills spec for `ollama serve`: a free loopback port
// (OLLAMA_HOST port 0, learned from its "Listening on" line), readiness on
// /api/version, and the model created from o.GGUF once the server answers.
func ollamaSpec(spec *Spec, model string, o OllamaOptions) error {
	spec.Env = append(spec.Env, "OLLAMA_HOST=127.0.0.1:0")
	if o.Models != "" {
		abs, err := filepath.Abs(o.Models)
		if err != nil {
			return err
		}
		spec.Env = append(spec.Env, "OLLAMA_MODELS="+abs)
	}
	spec.Model = model
	if spec.Model != "" && !strings.Contains(spec.Model, ":") {
		spec.Model += ":latest" // how /v1/models lists it
	}
	if o.GGUF != "" {
		name := OllamaModelName(o.GGUF)
		if spec.Model == "" {
			spec.Model = name
		}
		bin, gguf := spec.Command[0], o.GGUF
		spec.Prepare = func(ctx context.Context, base string) error {
			return ollamaCreate(ctx, bin, base, strings.TrimSuffix(spec.Model, ":latest"), gguf)
		}
	}
	return nil
}

// ollamaCreate runs `ollama create NAME -f MODELFILE` against the server at
// base. The Modelfile is the one beside the GGUF when it names that file
// (`servebench model tiny` writes one), else a bare "FROM <file>".
func ollamaCreate(ctx context.Context, bin, base, name, gguf string) error {
	abs, err := filepath.Abs(gguf)
	if err != nil {
		return err
	}
	mf := filepath.Join(filepath.Dir(abs), "Modelfile")
	if b, err := os.ReadFile(mf); err != nil || !modelfileNames(string(b), filepath.Base(abs)) {
		tmp, err := os.CreateTemp("", "servebench-Modelfile-")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		fmt.Fprintf(tmp, "FROM %s\n", abs)
		tmp.Close()
		mf = tmp.Name()
	}
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "create", name, "-f", mf)
	cmd.Env = append(os.Environ(), "OLLAMA_HOST="+u.Host)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ollama create %s from %s: %v: %s", name, gguf, err, ollamaError(out))
	}
	return nil
}

// modelfileNames reports whether a Modelfile's FROM line names file (beside it).
func modelfileNames(mf, file string) bool {
	for _, l := range strings.Split(mf, "\n") {
		if from, ok := strings.CutPrefix(strings.TrimSpace(l), "FROM "); ok {
			from = strings.TrimSpace(from)
			return from == file || from == "./"+file
		}
	}
	return false
}

// ollamaError picks Ollama's own message out of a command's output (its
// "Error: ..." line; else the last line), without terminal control codes.
func ollamaError(out []byte) string {
	s := regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`).ReplaceAllString(string(out), "")
	var last string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if strings.HasPrefix(l, "Error:") {
			return l
		}
		last = l
	}
	if last == "" {
		return "(no output)"
	}
	return last
}

// ollamaFirstToken is the first-token probe on Ollama: a 1-token
// /api/generate, whose answer says how long the lazy model load took
// (load_duration, ns). Ollama loads a model on its first request, so
// between "model listed" and "first token" the server is alive, lists the
// model, and is still not ready.
func (w *waiter) ollamaFirstToken(ctx context.Context) (bool, error) {
	const what = "POST /api/generate"
	sent := w.since()
	status, body, err := w.do(ctx, http.MethodPost, "/api/generate", map[string]any{"model": w.model, "prompt": "Hello",
		"stream": false, "options": map[string]any{"num_predict": 1}}, completionTimeout)
	if w.pending(what, status, err) && (err != nil || status == http.StatusServiceUnavailable) {
		return false, nil
	}
	var r struct {
		LoadDuration int64  `json:"load_duration"`
		Error        string `json:"error"`
	}
	if status != http.StatusOK || json.Unmarshal(bytes.TrimSpace(body), &r) != nil {
		// Ollama answers a model it cannot load with 500 and its reason:
		// waiting will not fix it.
		return false, w.final(what+" (the model's first load)", status, body)
	}
	if r.LoadDuration > 0 {
		load := time.Duration(r.LoadDuration)
		w.st.ModelLoadS = secondsPtr(load)
		w.st.ModelLoadedAtS = secondsPtr(sent + load)
		w.report(PhaseModelLoaded, sent+load)
	}
	return true, nil
}
