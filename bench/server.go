package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine/gguf"
	"github.com/servebench/servebench/engine/launch"
	"github.com/servebench/servebench/engine/option"
	"github.com/servebench/servebench/engine/perf"
	"github.com/servebench/servebench/engine/sim"
)

// PresetBundled is engine/launch's preset for servebench's bundled engine.
const PresetBundled = "bundled"

// PresetPD is the bundled engine as a disaggregated prefill/decode
// deployment (engine/pd): ServerOptions.Prefill and Decode instances behind
// servebench's own router. results.json records it as the bundled engine,
// its command holding --pd-prefill and --pd-decode.
const PresetPD = "pd"

// Presets lists the --server names bench knows: engine/launch's presets and
// PresetPD.
func Presets() []string { return append(slices.Clone(launch.Presets), PresetPD) }

// DefaultServerCmdURL is where a --server-cmd server is reached without
// --base-url: vLLM's default port, which the bundled engine also uses.
const DefaultServerCmdURL = "http://127.0.0.1:8000"

// ServerOptions says which server to benchmark. At most one of BaseURL
// (without ServerCmd: already running), ServerCmd and Preset is the source;
// none means the bundled engine on its default profile.
type ServerOptions struct {
	BaseURL     string   // already running server, or where ServerCmd's server listens
	ServerCmd   string   // shell command line that starts a server
	ServerDir   string   // working directory of a server servebench starts ("" = servebench's)
	Preset      string   // engine/launch preset: vllm, sglang, tgi, llamacpp, bundled; or pd (PresetPD)
	Self        string   // path of the servebench binary, for the bundled preset
	EngineArgs  []string // extra arguments for the bundled engine (e.g. --speedup 10)
	Speedup     float64  // bundled engine --speedup (0: the engine's default, 1)
	Dir         string   // results directory: server.log goes there
	MetricsURLs []string // default: BaseURL + "/metrics", or a P/D router's instances (pdPasses)
	Model       string   // default: the first model /v1/models lists
	APIKey      string
	APIKeyEnv   string // where APIKey came from, named in errors
	// ReadyTimeout bounds start-up (0: the launcher's default, 15 min).
	ReadyTimeout time.Duration
	// ServerBin replaces the preset's program (--server-bin; ollama: found
	// on PATH when empty).
	ServerBin string
	// Ollama: the model file to create the model from (--gguf) and where
	// the server keeps its models (--ollama-models; default: ollama-models
	// in the results directory, so a run leaves ~/.ollama alone).
	GGUF, OllamaModels string
	// PresetPD: the instances of each pool, at least one each.
	Prefill, Decode int
	// What a started server serves (servebench startup's --gpu and
	// --model): the bundled engine's GPU and model profiles, or for
	// another preset ServeModel replaces the model in its command. Model
	// is the one asked for, not this.
	GPU, ServeModel string
	// Env is "NAME=VALUE" set in a started server's environment, after
	// (so overriding) the preset's own (tune --env-grid).
	Env []string
	// Phase is told each start-up phase as it passes (progress); may be nil.
	Phase func(phase string, at time.Duration)
}

// Bundled reports whether the server is the bundled engine: --server
// bundled or pd, or no source given at all.
func (o ServerOptions) Bundled() bool {
	return o.ServerCmd == "" && (o.Preset == PresetBundled || o.Preset == PresetPD || o.Preset == "" && o.BaseURL == "")
}

// CheckPD checks a P/D deployment's pool sizes (--prefill, --decode).
func CheckPD(prefill, decode int) error {
	if prefill < 1 || decode < 1 {
		return option.Errorf("Prefill", nil, "{Prefill} %d {Decode} %d: want at least one instance of each", prefill, decode)
	}
	return nil
}

// Server is the server under test, started by servebench or not.
type Server struct {
	BaseURL     string
	MetricsURLs []string
	Model       string
	MaxModelLen int // the model's context length from /v1/models; 0: unknown
	// Passes is how many of MetricsURLs' engines finish each request: 2
	// for a P/D deployment (a prefill and a decode instance), else 0 (one).
	Passes int
	Info   result.Server
	proc   *launch.Server // nil when servebench did not start it
}

// Exited is closed when a server servebench started exits; nil otherwise
// (a nil channel never fires).
func (s *Server) Exited() <-chan struct{} {
	if s.proc == nil {
		return nil
	}
	return s.proc.Exited()
}

// ExitErr is why a started server exited (nil while it runs).
func (s *Server) ExitErr() error {
	if s.proc == nil {
		return nil
	}
	return s.proc.ExitErr()
}

// LogTail returns the last n lines of a started server's log.
func (s *Server) LogTail(n int) []string {
	if s.proc == nil {
		return nil
	}
	return s.proc.LogTail(n)
}

// Stop stops a server servebench started; it is a no-op otherwise.
func (s *Server) Stop() error {
	if s == nil || s.proc == nil {
		return nil
	}
	return s.proc.Stop()
}

// StartServer starts (or connects to) the server opts describes, waits until
// it is ready, and learns its model and version. A server that fails to
// start returns an error wrapping launch.ErrExited or launch.ErrNotReady,
// and a stopped Server whose Info holds what its start-up measured.
func StartServer(ctx context.Context, opts ServerOptions) (*Server, error) {
	spec, started, err := serverSpec(opts)
	if err != nil {
		return nil, err
	}
	s := &Server{}
	if !started {
		s.BaseURL = strings.TrimRight(opts.BaseURL, "/")
		s.Info.BaseURL = launch.RedactURL(s.BaseURL)
	} else {
		proc, err := launch.Start(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("starting the server: %w", err)
		}
		s.proc = proc
		st, err := proc.WaitReady(ctx, opts.Phase)
		s.BaseURL = strings.TrimRight(proc.BaseURL(), "/")
		args := launch.RedactArgs(spec.Command)
		s.Info = result.Server{BaseURL: launch.RedactURL(s.BaseURL), Command: strings.Join(args, " "),
			Preset: opts.Preset, Startup: (*result.Startup)(st), Environment: spec.Environment(os.Environ())}
		if spec.Preset == launch.PresetOllama {
			s.Info.Engine = result.EngineOllama
		}
		if opts.Bundled() {
			s.Info.Preset = PresetBundled
			s.Info.Bundled = &result.Bundled{Args: bundledArgs(args)}
		}
		if err != nil {
			_ = proc.Stop()
			s.Info.Model = spec.Model // the one asked for (for --gguf, the one created)
			return s, fmt.Errorf("waiting for the server to be ready: %w", err)
		}
		if opts.Model == "" && spec.Preset == launch.PresetOllama {
			opts.Model = spec.Model // the one --gguf created, not whatever else OLLAMA_MODELS holds
		}
	}
	// A P/D deployment's instances, as replicas, each request counted by
	// two. A preset servebench started (vllm, sglang, ...) is no router:
	// no request for it.
	ask := !started || opts.ServerCmd != "" || opts.Bundled()
	s.MetricsURLs, s.Passes = pdPasses(ctx, s.BaseURL, opts.MetricsURLs, ask)
	s.Info.EnginePasses = s.Passes
	if len(s.MetricsURLs) == 0 {
		s.MetricsURLs = []string{s.BaseURL + "/metrics"}
	}
	s.Info.MetricsURL = make([]string, len(s.MetricsURLs))
	for i, u := range s.MetricsURLs {
		s.Info.MetricsURL[i] = launch.RedactURL(u)
	}
	if err := s.learn(ctx, opts); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// CheckServer reports what is wrong with opts before anything starts: the
// checks StartServer would make, without starting a server, the files it
// names included (ServerDir, GGUF, the ollama binary).
func CheckServer(opts ServerOptions) error {
	_, _, err := serverSpec(opts)
	return err
}

// CheckServerOptions is CheckServer from the options alone: it touches no
// file, so a ServerDir that is missing passes, and the ollama preset's
// settings, whose check starts by finding its binary, are left to
// CheckServer whole (so its errors keep their order).
func CheckServerOptions(opts ServerOptions) error {
	_, _, err := specFor(opts, false)
	return err
}

// LaunchSpec is the launch spec of the server opts has servebench start
// (servebench startup measures its cold starts); an already running server
// (BaseURL alone) has none.
func LaunchSpec(opts ServerOptions) (launch.Spec, error) {
	spec, started, err := serverSpec(opts)
	if err == nil && !started {
		err = option.Errorf("BaseURL", nil, "{BaseURL} alone names a running server: expected a server to start ({Preset} or {ServerCmd})")
	}
	return spec, err
}

// serverSpec builds the launch spec; started is false for an already
// running server (BaseURL alone). The server comes from a --server-cmd
// (commandSpec), a preset or the bundled engine (presetSpec), or a
// --base-url alone (checkBaseURL).
func serverSpec(opts ServerOptions) (launch.Spec, bool, error) {
	return specFor(opts, true)
}

// specFor is serverSpec; without files it reads no file (see
// CheckServerOptions) and the spec is for checking only.
func specFor(opts ServerOptions, files bool) (launch.Spec, bool, error) {
	var spec launch.Spec
	var err error
	switch {
	case opts.ServerCmd != "" && opts.Preset != "":
		return spec, false, option.Errorf("ServerCmd", nil, "{ServerCmd} and {Preset}: expected one of them")
	case opts.ServerCmd != "":
		spec, err = commandSpec(opts)
	case opts.Preset != "" || opts.BaseURL == "":
		spec, err = presetSpec(opts, files)
	default:
		return spec, false, checkBaseURL(opts)
	}
	if err != nil {
		return spec, false, err
	}
	spec.Dir = opts.ServerDir
	spec.Env = append(spec.Env, opts.Env...)
	if opts.Dir != "" {
		spec.LogPath = filepath.Join(opts.Dir, result.ServerLog)
	}
	if opts.ReadyTimeout > 0 {
		spec.ReadyTimeout = opts.ReadyTimeout
	}
	if spec.Model == "" {
		spec.Model = opts.Model
	}
	spec.APIKey = opts.APIKey
	if !files {
		c := spec
		c.Dir = "" // Validate's one look at the file system: the directory exists
		return spec, true, c.Validate()
	}
	return spec, true, spec.Validate()
}

// commandSpec is the spec of a --server-cmd.
func commandSpec(opts ServerOptions) (launch.Spec, error) {
	argv, err := launch.SplitCommand(opts.ServerCmd)
	if err != nil {
		return launch.Spec{}, option.Wrap("ServerCmd", opts.ServerCmd, err)
	}
	spec := launch.Spec{Command: argv, BaseURL: opts.BaseURL}
	if spec.BaseURL == "" {
		spec.BaseURL = DefaultServerCmdURL
	} else if _, err := launch.ParseBaseURL(spec.BaseURL); err != nil {
		return spec, option.Wrap("BaseURL", nil, err) // else spec.Validate's, without the field
	}
	if opts.Speedup != 0 || len(opts.EngineArgs) > 0 {
		return spec, option.Errorf("Speedup", nil, "{Speedup} and {EngineArgs}: only for the bundled engine, not with {ServerCmd}")
	}
	return spec, nil
}

// presetSpec is the spec of a --server preset, the bundled engine when
// neither --server nor --base-url is given. PresetPD is the bundled engine
// with --pd-prefill and --pd-decode before the other engine arguments.
func presetSpec(opts ServerOptions, files bool) (launch.Spec, error) {
	name, args := opts.Preset, opts.EngineArgs
	if name != "" && !slices.Contains(Presets(), name) {
		return launch.Spec{}, option.Errorf("Preset", name, "expected one of %s", strings.Join(Presets(), ", "))
	}
	switch name {
	case "":
		name = PresetBundled
	case PresetPD:
		if err := CheckPD(opts.Prefill, opts.Decode); err != nil {
			return launch.Spec{}, err
		}
		name = PresetBundled
		args = append([]string{"--pd-prefill", strconv.Itoa(opts.Prefill), "--pd-decode", strconv.Itoa(opts.Decode)}, args...)
	}
	if name != PresetBundled && (opts.Speedup != 0 || len(opts.EngineArgs) > 0) {
		return launch.Spec{}, option.Errorf("Speedup", nil, "{Speedup} and {EngineArgs}: only for the bundled engine (no {ServerCmd}, {Preset} or {BaseURL})")
	}
	po := launch.PresetOptions{Model: opts.ServeModel, GPU: opts.GPU, Speedup: opts.Speedup, Args: args, Bin: opts.ServerBin}
	var err error
	if name == PresetBundled {
		if err := checkProfiles(opts); err != nil {
			return launch.Spec{}, err
		}
	}
	switch {
	case name == launch.PresetOllama && !files:
		// Its check starts by finding the binary: left to CheckServer.
	case name == launch.PresetOllama:
		if po, err = OllamaPresetOptions(po, opts); err != nil {
			return launch.Spec{}, err
		}
	case opts.GGUF != "" || opts.OllamaModels != "":
		return launch.Spec{}, option.Errorf("GGUF", nil, "{GGUF} and {OllamaModels}: only with {Preset} ollama")
	}
	spec, err := launch.PresetSpecFor(name, opts.Self, po)
	if err != nil {
		return spec, option.Wrap("Preset", cmp.Or(opts.Preset, name), err)
	}
	if opts.BaseURL != "" {
		spec.BaseURL = opts.BaseURL
	}
	return spec, nil
}

// checkProfiles refuses an unknown GPU or ServeModel profile for the
// bundled engine, or a model that does not fit, before anything is spawned:
// the engine would exit 2 at once and the start would read as a failed
// server. EngineArgs are the engine's to check; they may change what fits
// (--gpu-memory-utilization, --max-model-len).
func checkProfiles(opts ServerOptions) error {
	if opts.GPU == "" && opts.ServeModel == "" {
		return nil // the engine's defaults, which fit
	}
	if opts.GPU != "" {
		if _, err := perf.LookupGPU(opts.GPU); err != nil {
			return option.Wrap("GPU", nil, err)
		}
	}
	if opts.ServeModel != "" {
		if _, err := perf.LookupModel(opts.ServeModel); err != nil {
			return option.Wrap("ServeModel", nil, err)
		}
	}
	if len(opts.EngineArgs) > 0 {
		return nil
	}
	so := sim.DefaultOptions()
	so.GPU, so.Model = cmp.Or(opts.GPU, so.GPU), cmp.Or(opts.ServeModel, so.Model)
	if opts.Speedup > 0 {
		so.Speedup = opts.Speedup
	}
	if err := so.Validate(); err != nil {
		return &option.FieldError{Field: "GPU", Reason: "{GPU} %s {ServeModel} %s", Args: []any{so.GPU, so.Model}, Err: err}
	}
	return nil
}

// checkBaseURL checks the options of an already running server (--base-url
// alone).
func checkBaseURL(opts ServerOptions) error {
	if _, err := launch.ParseBaseURL(opts.BaseURL); err != nil {
		return option.Wrap("BaseURL", nil, err)
	}
	if opts.Speedup != 0 || len(opts.EngineArgs) > 0 {
		return option.Errorf("Speedup", nil, "{Speedup} and {EngineArgs}: only for the bundled engine, not with {BaseURL}")
	}
	return nil
}

// OllamaPresetOptions adds opts' Ollama settings to po: it finds the ollama
// binary and checks --gguf, both bad input when wrong, before anything starts.
func OllamaPresetOptions(po launch.PresetOptions, opts ServerOptions) (launch.PresetOptions, error) {
	bin, err := launch.FindOllama(opts.ServerBin)
	if err != nil {
		return po, err
	}
	po.Bin, po.Model = bin, cmp.Or(opts.Model, opts.ServeModel)
	if opts.GGUF == "" && po.Model == "" {
		// Waiting would not make a model appear: Ollama lists only what it holds.
		return po, option.Errorf("GGUF", nil, "{Preset} ollama: expected {GGUF} FILE (a model to create, e.g. from servebench model tiny) or {Model} NAME (one {OllamaModels} holds)")
	}
	if opts.GGUF != "" {
		if err := gguf.CheckFile(opts.GGUF); err != nil {
			return po, option.Wrap("GGUF", nil, err)
		}
	}
	po.Ollama = launch.OllamaOptions{GGUF: opts.GGUF, Models: opts.OllamaModels}
	if po.Ollama.Models == "" && opts.Dir != "" {
		po.Ollama.Models = OllamaModelsDir(opts.Dir)
	}
	return po, nil
}

// OllamaModelsDir is where an Ollama servebench starts keeps its models
// when --ollama-models is not given: ollama-models in dir, the results
// directory, so that a run leaves ~/.ollama alone. The path is absolute:
// Ollama runs in --server-dir, where a relative results directory would
// name another folder.
func OllamaModelsDir(dir string) string {
	p := filepath.Join(dir, "ollama-models")
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// bundledArgs is the bundled engine's arguments: what follows "engine" on
// its command line. What they amount to (profiles, speedup, seed) is read
// from the engine's /version, not from these.
func bundledArgs(cmd []string) []string {
	if i := slices.Index(cmd, "engine"); i >= 0 {
		return slices.Clone(cmd[i+1:])
	}
	return nil
}

// learn asks the server for its model (unless given), its context length
// and its version. A --model the server's /v1/models does not list is bad
// input (every request would fail); a server without a usable /v1/models is
// taken at its word when --model is given.
func (s *Server) learn(ctx context.Context, opts ServerOptions) error {
	s.Model = opts.Model
	c := client.New(client.Options{BaseURL: s.BaseURL, APIKey: opts.APIKey, RequestTimeout: 30 * time.Second})
	defer c.Close()
	ms, err := c.Models(ctx)
	switch {
	case s.Model != "":
		if err != nil || len(ms) == 0 {
			break
		}
		var ids []string
		for _, m := range ms {
			ids = append(ids, m.ID)
			if m.ID == s.Model {
				s.MaxModelLen = m.MaxModelLen
			}
		}
		if !slices.Contains(ids, s.Model) {
			return fmt.Errorf("%w: %w", ErrUsage, option.Errorf("Model", s.Model, "not served by this server (%s/v1/models lists %s)",
				s.Info.BaseURL, strings.Join(ids, ", ")))
		}
	case err != nil:
		hint := "pass --model to skip"
		var se *client.StatusError
		if errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden) {
			hint = launch.APIKeyHint(opts.APIKey != "", opts.APIKeyEnv)
		}
		// The client's error already names the URL.
		return fmt.Errorf("%w (%s)", err, hint)
	case len(ms) == 0:
		return option.Errorf("Model", nil, "%s/v1/models lists no model: pass {Model}", s.Info.BaseURL)
	default:
		s.Model, s.MaxModelLen = ms[0].ID, ms[0].MaxModelLen
	}
	s.Info.Model = s.Model
	v := serverVersion(ctx, s.BaseURL)
	s.Info.Version = v.Version
	if v.ollama {
		s.Info.Engine = result.EngineOllama
	}
	recordBundled(&s.Info, v.Servebench)
	return nil
}

// recordBundled writes the bundled engine's own word on what it runs (its
// /version, after every --engine-arg) into info; an engine reached by
// --base-url is named the same way. Nothing without one (bv nil).
func recordBundled(info *result.Server, bv *sim.BundledVersion) {
	if bv == nil {
		return
	}
	if info.Bundled == nil {
		info.Bundled = &result.Bundled{}
	}
	b := info.Bundled
	b.GPU, b.Model, b.Speedup, b.StartupSpeedup, b.Seed = bv.GPU, bv.Model, bv.Speedup, bv.StartupSpeedup, bv.Seed
	b.TensorParallelSize, b.PipelineParallelSize, b.KVRole = bv.TensorParallelSize, bv.PipelineParallelSize, bv.KVRole
	b.VLLMVersion = bv.VLLMVersion
}

// CheckMaxTokens refuses a run whose output alone fills the model's
// context (max_model_len from /v1/models; 0: unknown, not checked): the
// server would answer every request with 400.
func (s *Server) CheckMaxTokens(maxTokens int) error {
	if s.MaxModelLen > 0 && maxTokens >= s.MaxModelLen {
		return fmt.Errorf("%w: %w", ErrUsage, option.Errorf("MaxTokens", maxTokens, "over the server's max_model_len %d for %q (prompt and output must fit together): expected fewer",
			s.MaxModelLen, s.Model))
	}
	return nil
}

// versionInfo is GET /version's answer: vLLM's "version", and the bundled
// engine's "servebench" object naming what it runs.
type versionInfo struct {
	Version    string              `json:"version"`
	Servebench *sim.BundledVersion `json:"servebench"`
	ollama     bool                // the answer of Ollama's /api/version
}

// getJSON decodes the JSON answer of GET url (at most 64 KiB, within 5 s)
// into v, reporting whether there was one with status 200.
func getJSON(ctx context.Context, url string, v any) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(v) == nil
}

// serverVersion returns GET /version's answer (vLLM, the bundled engine),
// else GET /api/version's (Ollama), or the zero value when the server has neither.
func serverVersion(ctx context.Context, base string) versionInfo {
	if v := getVersion(ctx, base+"/version"); v.Version != "" {
		return v
	}
	v := getVersion(ctx, base+"/api/version")
	v.ollama = v.Version != ""
	return v
}

func getVersion(ctx context.Context, url string) versionInfo {
	var v versionInfo
	if !getJSON(ctx, url, &v) {
		return versionInfo{}
	}
	if v.Servebench != nil && (v.Servebench.GPU == "" || v.Servebench.Model == "") {
		v.Servebench = nil // not the bundled engine's answer
	}
	return v
}
