package launch

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/engine/option"
)

// Defaults for the zero values of Spec.
const (
	DefaultPollInterval = 100 * time.Millisecond
	DefaultReadyTimeout = 15 * time.Minute
	DefaultHealthPath   = "/health"
	// DefaultBaseURL is where a --server-cmd server is reached unless told
	// otherwise: vLLM's default port, which the bundled engine also uses.
	DefaultBaseURL = "http://127.0.0.1:8000"
	// DefaultStopGrace bounds each of Stop's waits (after SIGINT, after SIGTERM).
	DefaultStopGrace = 10 * time.Second
)

// Spec says how to start a server and how to tell it is ready.
type Spec struct {
	Command []string // argv; Command[0] is looked up in PATH
	Preset  string   // informational: the preset the spec came from, if any
	// BaseURL is where the server answers. Empty: learned from the server's
	// log ("Starting vLLM API server 0 on URL", uvicorn's "Uvicorn running on
	// URL", llama.cpp's "server is listening on URL"), as for a port-0 bundled engine.
	BaseURL    string
	HealthPath string        // default DefaultHealthPath
	Dir        string        // working directory; "" = servebench's
	Env        []string      // "K=V" added to (and overriding) servebench's own environment
	LogPath    string        // stdout+stderr go here (created/truncated); "" = kept only in memory (LogTail)
	Model      string        // model to wait for in /v1/models; "" = the first one listed
	APIKey     string        // sent as a Bearer token on the readiness probes; never logged
	StopGrace  time.Duration // each of Stop's waits; default DefaultStopGrace
	// PollInterval is the readiness polling interval, and so the resolution of
	// every phase time (reported as poll_interval_s). Default DefaultPollInterval.
	PollInterval time.Duration
	ReadyTimeout time.Duration // default DefaultReadyTimeout
	// Prepare, if set, runs once the health probe has passed and before the
	// model is looked for, with the server's base URL (Ollama: create the
	// model). Its error ends the start-up.
	Prepare func(ctx context.Context, baseURL string) error
}

// withDefaults returns spec with zero values replaced by defaults.
func (spec Spec) withDefaults() Spec {
	if spec.HealthPath == "" {
		spec.HealthPath = DefaultHealthPath
	}
	if spec.PollInterval <= 0 {
		spec.PollInterval = DefaultPollInterval
	}
	if spec.ReadyTimeout <= 0 {
		spec.ReadyTimeout = DefaultReadyTimeout
	}
	if spec.StopGrace <= 0 {
		spec.StopGrace = DefaultStopGrace
	}
	return spec
}

// Validate checks the spec and names the bad value.
func (spec Spec) Validate() error {
	if len(spec.Command) == 0 || spec.Command[0] == "" {
		return errors.New("server command is empty: expected a program and its arguments")
	}
	if spec.BaseURL != "" {
		if _, err := ParseBaseURL(spec.BaseURL); err != nil {
			return err
		}
	}
	if spec.HealthPath != "" && !strings.HasPrefix(spec.HealthPath, "/") {
		return fmt.Errorf("health path %q: expected a path starting with /", spec.HealthPath)
	}
	if spec.Dir != "" {
		if fi, err := os.Stat(spec.Dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("server working directory %q: expected an existing directory", spec.Dir)
		}
	}
	for _, kv := range spec.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("environment entry %q: expected KEY=VALUE", kv)
		}
	}
	return nil
}

// envPrefixes and envNames are the environment variables that change how
// fast or how a server serves (batch slots, attention backends, visible
// GPUs): a started server's are recorded beside its results (Environment).
var (
	envPrefixes = []string{"OLLAMA_", "VLLM_"}
	envNames    = []string{"CUDA_VISIBLE_DEVICES"}
)

// Environment is the part of the server's environment spec gives it that
// says how it runs: OLLAMA_*, VLLM_* and CUDA_VISIBLE_DEVICES from environ
// (servebench's own, os.Environ()) overridden by spec.Env, the value of a
// name holding TOKEN, KEY, SECRET or PASSWORD as REDACTED (RedactArgs'
// rule). nil when there are none.
func (spec Spec) Environment(environ []string) map[string]string {
	var env map[string]string
	for _, kv := range append(slices.Clone(environ), spec.Env...) {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !(slices.Contains(envNames, k) || slices.ContainsFunc(envPrefixes, func(p string) bool { return strings.HasPrefix(k, p) })) {
			continue
		}
		if env == nil {
			env = map[string]string{}
		}
		_, env[k], _ = strings.Cut(RedactArgs([]string{kv})[0], "=")
	}
	return env
}

// ParseBaseURL checks that s is an http(s) URL with a host and port (the
// port is needed for the TCP readiness probe; http and https defaults are filled in).
func ParseBaseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, fmt.Errorf("base URL %q: expected http://HOST:PORT", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
			return nil, fmt.Errorf("base URL %q: port %q is not in 1-65535", s, p)
		}
	}
	return u, nil
}

// PresetOptions adjust a preset's command line.
type PresetOptions struct {
	Model   string   // replaces the preset's model (bundled: --model, a profile name)
	GPU     string   // bundled only: --gpu
	Speedup float64  // bundled only: --speedup (0 = the engine's default)
	Args    []string // appended to the command
	Bin     string   // replaces the preset's program (--server-bin)
	Ollama  OllamaOptions
}

// preset is the data behind PresetSpecFor.
type preset struct {
	argv       []string
	modelAt    int    // index in argv of the model value; -1 = none
	baseURL    string // "" = from the log
	healthPath string
}

// Presets lists the names PresetSpecFor knows, for help texts and errors.
var Presets = []string{"bundled", "vllm", "sglang", "tgi", "llamacpp", PresetOllama}

var presets = map[string]preset{
	// The seed lesson's server.
	"vllm": {argv: []string{"vllm", "serve", "Qwen/Qwen2.5-7B-Instruct-AWQ", "--quantization", "awq_marlin",
		"--max-model-len", "4096", "--gpu-memory-utilization", "0.9", "--port", "8011"},
		modelAt: 2, baseURL: "http://127.0.0.1:8011", healthPath: "/health"},
	"sglang": {argv: []string{"python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen2.5-7B-Instruct-AWQ",
		"--port", "30000"}, modelAt: 4, baseURL: "http://127.0.0.1:30000", healthPath: "/health"},
	"tgi": {argv: []string{"text-generation-launcher", "--model-id", "Qwen/Qwen2.5-7B-Instruct-AWQ", "--port", "8080"},
		modelAt: 2, baseURL: "http://127.0.0.1:8080", healthPath: "/health"},
	// llama-server answers /health with 503 while the model loads.
	"llamacpp": {argv: []string{"llama-server", "-m", "model.gguf", "--port", "8080", "--metrics"},
		modelAt: 2, baseURL: "http://127.0.0.1:8080", healthPath: "/health"},
	// Ollama on a free port (ollamaSpec); its /api/version answers once it listens.
	PresetOllama: {argv: []string{"ollama", "serve"}, modelAt: -1, healthPath: "/api/version"},
	// The bundled engine picks a free port and names it in its log.
	"bundled": {argv: []string{"", "engine", "--port", "0"}, modelAt: -1, healthPath: "/health"},
}

// PresetSpecFor returns the spec of a preset server, its command line
// adjusted by o: vllm, sglang, tgi, llamacpp, ollama or bundled (self is
// the path of the servebench binary, which runs `self engine --port 0`).
func PresetSpecFor(name, self string, o PresetOptions) (Spec, error) {
	p, ok := presets[name]
	if !ok {
		return Spec{}, fmt.Errorf("server preset %q: expected one of %s", name, strings.Join(Presets, ", "))
	}
	argv := slices.Clone(p.argv)
	if name == "bundled" {
		if self == "" {
			return Spec{}, errors.New("bundled preset: the path of the servebench binary is empty")
		}
		argv[0] = self
		if o.Bin != "" {
			return Spec{}, option.Errorf("Bin", nil, "bundled preset: {Bin} is for other presets (the bundled engine is servebench itself)")
		}
		if o.Model != "" {
			argv = append(argv, "--model", o.Model)
		}
		if o.GPU != "" {
			argv = append(argv, "--gpu", o.GPU)
		}
		if o.Speedup != 0 {
			if o.Speedup < 0 {
				return Spec{}, fmt.Errorf("speedup %g: expected a positive number", o.Speedup)
			}
			argv = append(argv, "--speedup", strconv.FormatFloat(o.Speedup, 'g', -1, 64))
		}
	} else {
		if o.GPU != "" || o.Speedup != 0 {
			return Spec{}, option.Errorf("GPU", nil, "server preset %q: {GPU} and {Speedup} are for the bundled engine only", name)
		}
		if o.Model != "" && p.modelAt >= 0 {
			argv[p.modelAt] = o.Model
		}
	}
	if o.Bin != "" {
		argv[0] = o.Bin
	}
	argv = append(argv, o.Args...)
	spec := Spec{Command: argv, Preset: name, BaseURL: p.baseURL, HealthPath: p.healthPath}
	if name == PresetOllama {
		if err := ollamaSpec(&spec, o.Model, o.Ollama); err != nil {
			return Spec{}, err
		}
	} else if o.Ollama != (OllamaOptions{}) {
		return Spec{}, option.Errorf("GGUF", nil, "server preset %q: {GGUF} and {Models} are for {Preset} ollama only", name)
	}
	return spec, nil
}

// SplitCommand splits a --server-cmd string into argv the way a POSIX shell
// splits words: blanks separate words, 'single quotes' keep everything
// literally, "double quotes" keep blanks and honour \" \\ \$ \` escapes, and a
// backslash outside quotes escapes the next character. There is no expansion
// of variables, globs or ~, and no pipes or redirections: run `sh -c '...'`
// explicitly for those.
func SplitCommand(s string) ([]string, error) {
	var w wordSplitter
	for _, c := range s {
		w.next(c)
	}
	switch {
	case w.esc:
		return nil, fmt.Errorf("server command %q: ends with a lone backslash", s)
	case w.quote != 0:
		return nil, fmt.Errorf("server command %q: unterminated %c quote", s, w.quote)
	}
	w.endWord()
	if len(w.args) == 0 {
		return nil, fmt.Errorf("server command %q: expected a program and its arguments", s)
	}
	return w.args, nil
}

// wordSplitter is SplitCommand's state between characters.
type wordSplitter struct {
	args  []string
	cur   strings.Builder
	inArg bool // cur is a word, maybe an empty one ('')
	quote rune // 0, '\'' or '"'
	esc   bool // the last character was an unquoted or double-quoted backslash
}

// next takes one character.
func (w *wordSplitter) next(c rune) {
	switch {
	case w.esc:
		w.escaped(c)
	case w.quote == '\'':
		w.quoted(c)
	case c == '\\':
		w.esc = true
	case w.quote == '"':
		w.quoted(c)
	case c == '\'' || c == '"':
		w.quote, w.inArg = c, true
	case c == ' ' || c == '\t' || c == '\n':
		w.endWord()
	default:
		w.cur.WriteRune(c)
		w.inArg = true
	}
}

// escaped takes the character after a backslash.
func (w *wordSplitter) escaped(c rune) {
	w.esc = false
	if c == '\n' {
		return // backslash-newline is a line continuation
	}
	if w.quote == '"' && !strings.ContainsRune("\"\\$`", c) {
		w.cur.WriteRune('\\') // inside "...", \ escapes only these
	}
	w.cur.WriteRune(c)
	w.inArg = true
}

// quoted takes a character inside quotes: the closing quote ends them.
func (w *wordSplitter) quoted(c rune) {
	if c == w.quote {
		w.quote = 0
	} else {
		w.cur.WriteRune(c)
	}
}

// endWord ends the word in progress, if any.
func (w *wordSplitter) endWord() {
	if w.inArg {
		w.args = append(w.args, w.cur.String())
		w.cur.Reset()
		w.inArg = false
	}
}
