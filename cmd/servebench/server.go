package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine/launch"
	"github.com/servebench/servebench/engine/sim"
)

// serverFlags say which server to use and how to start it: the flags
// table, run, sweep, probe and startup share. Their names, defaults and
// meaning are the same in every command.
type serverFlags struct {
	baseURL, serverCmd, serverDir, preset string
	serverBin, gguf, ollamaModels         string
	speedup                               float64
	engineArgs                            []string
	apiKeyEnv                             string
	readyTimeout                          time.Duration
	prefill, decode                       int // --server pd: instances of each pool
}

func (s *serverFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&s.baseURL, "base-url", "", "an already running server (with --server-cmd: where it listens; default "+bench.DefaultServerCmdURL+")")
	fs.StringVar(&s.serverCmd, "server-cmd", "", `start this server command (e.g. "vllm serve MODEL --port 8000") and stop it at the end`)
	fs.StringVar(&s.serverDir, "server-dir", "", "working directory of the server servebench starts (default: the current one)")
	fs.StringVar(&s.preset, "server", "", "start a preset server: "+strings.Join(bench.Presets(), ", ")+
		" (bundled prefill and decode instances behind servebench's router, an emulation: --prefill N --decode M) (default: the bundled engine)")
	fs.IntVar(&s.prefill, "prefill", 1, "with --server pd: prefill instances (bundled engines with --kv-role producer)")
	fs.IntVar(&s.decode, "decode", 1, "with --server pd: decode instances (bundled engines with --kv-role consumer)")
	fs.StringVar(&s.serverBin, "server-bin", "", "--server ollama: the ollama binary (default: ollama on PATH; .ci/install-ollama builds one)")
	fs.StringVar(&s.gguf, "gguf", "", "--server ollama: create the model from this GGUF file (e.g. from servebench model tiny) and serve it")
	fs.StringVar(&s.ollamaModels, "ollama-models", "", "--server ollama: OLLAMA_MODELS, where the server keeps models (default: ollama-models in the results directory)")
	fs.Float64Var(&s.speedup, "speedup", 0, "bundled engine only: divide every modelled duration by this factor")
	fs.StringArrayVar(&s.engineArgs, "engine-arg", nil, "bundled engine only: extra argument for the engine command (repeatable, e.g. --engine-arg=--max-num-seqs=4)")
	fs.StringVar(&s.apiKeyEnv, "api-key-env", client.DefaultAPIKeyEnv, "environment variable holding the API key (never written anywhere)")
	fs.DurationVar(&s.readyTimeout, "ready-timeout", launch.DefaultReadyTimeout, "give up on a server servebench starts that is not ready after this long")
}

// check validates what bench.CheckServer does not: the ready timeout, and
// --speedup against the bundled engine's own range.
func (s *serverFlags) check(fs *pflag.FlagSet) error {
	if s.readyTimeout <= 0 {
		return fmt.Errorf("--ready-timeout %v: expected a duration > 0", s.readyTimeout)
	}
	if s.preset != bench.PresetPD && (fs.Changed("prefill") || fs.Changed("decode")) {
		return errors.New("--prefill and --decode: only with --server pd")
	}
	return checkSpeedup(s.speedup, fs.Changed("speedup"))
}

// bundled reports whether the server is the bundled engine.
func (s *serverFlags) bundled() bool {
	return bench.ServerOptions{BaseURL: s.baseURL, ServerCmd: s.serverCmd, Preset: s.preset}.Bundled()
}

// options are the flags as bench's ServerOptions; the caller adds the
// metrics URLs and the model.
func (s *serverFlags) options() (bench.ServerOptions, error) {
	so := bench.ServerOptions{BaseURL: s.baseURL, ServerCmd: s.serverCmd, ServerDir: s.serverDir, Preset: s.preset,
		Speedup: s.speedup, EngineArgs: s.engineArgs, APIKey: client.APIKeyFromEnv(s.apiKeyEnv), APIKeyEnv: s.apiKeyEnv,
		ReadyTimeout: s.readyTimeout, ServerBin: s.serverBin, GGUF: s.gguf, OllamaModels: s.ollamaModels,
		Prefill: s.prefill, Decode: s.decode}
	if s.bundled() {
		var err error
		if so.Self, err = selfBinary(); err != nil {
			return so, err
		}
	}
	return so, nil
}

// selfBinary is the servebench binary, whose `engine` command is the
// bundled engine.
func selfBinary() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the servebench binary for the bundled engine: %w", err)
	}
	return self, nil
}

// checkSpeedup checks --speedup against the bundled engine's own range
// (sim.SpeedupOK), so a value the engine would refuse is a usage error here
// and not a server that "exited". 0 is the default (the engine's own speed)
// unless given explicitly.
func checkSpeedup(v float64, given bool) error {
	if v == 0 && !given || sim.SpeedupOK(v) {
		return nil
	}
	return fmt.Errorf("--speedup %g: expected a factor > 0, at most 1e6 (leave it out for the engine's own speed)", v)
}
