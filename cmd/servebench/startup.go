package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine/launch"
	"github.com/servebench/servebench/engine/perf"
)

// startupFormats are --format's values for startup.
var startupFormats = []string{"text", "json"}

// startupOptions is `servebench startup`'s parsed flags.
type startupOptions struct {
	serverFlags
	healthPath           string
	pollInterval         time.Duration
	repeat               int
	out, format, fromLog string
	gpu, model           string
	quiet                bool
}

func newStartupCmd() *cobra.Command {
	o := &startupOptions{}
	cmd := &cobra.Command{
		Use:   "startup",
		Short: "Measure a server's start-up: spawn -> weights loaded -> port open -> /health OK -> model listed -> first token",
		Long: `startup starts a server (the bundled engine by default, a preset, or --server-cmd),
polls it until it answers a first 1-token completion, stops it, and prints when each
phase passed (seconds since spawn, to the poll interval's resolution) with the facts
the server logged: weights load time, model memory, KV cache tokens, max concurrency.
--repeat N does N cold starts and shows min/median/max.

--server-cmd is split into words like a shell does ('single' and "double" quotes,
backslash escapes) but not run by one: no variables, globs, pipes or redirections
(use --server-cmd "sh -c '...'" for those). The server gets servebench's environment.

Exit status 3 when the server exits or is not ready in --ready-timeout (the error
shows the last 40 lines of its log); 2 on bad flags; 4 when interrupted.`,
		Example: `  servebench startup                          # bundled engine, default profile (~90 s)
  servebench startup --speedup 10 --repeat 3
  servebench startup --server vllm --out results/vllm-startup
  servebench startup --server pd --prefill 1 --decode 2 --speedup 10
  servebench startup --server-cmd "llama-server -m q.gguf --port 8080" --base-url http://127.0.0.1:8080
  servebench startup --from-log server.log`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStartup(cmd, o)
		},
	}
	f := cmd.Flags()
	o.serverFlags.add(f)
	// startup starts every server it measures: no running one to point at.
	f.Lookup("base-url").Usage = "where the --server-cmd server listens (default " + launch.DefaultBaseURL + ")"
	f.StringVar(&o.healthPath, "health-path", "", "readiness path (default: the preset's, "+launch.DefaultHealthPath+")")
	f.DurationVar(&o.pollInterval, "poll-interval", launch.DefaultPollInterval, "readiness polling interval: the resolution of every phase time")
	f.IntVar(&o.repeat, "repeat", 1, "cold starts to measure")
	f.StringVar(&o.out, "out", "", "write results.json (server.startup) and server.log here")
	f.StringVar(&o.format, "format", "text", "output: "+strings.Join(startupFormats, ", "))
	f.StringVar(&o.fromLog, "from-log", "", "print the start-up facts in this saved server log and exit (starts nothing)")
	f.StringVar(&o.gpu, "gpu", "", "bundled engine only: GPU profile")
	f.StringVar(&o.model, "model", "", "bundled engine: model profile; a preset: the model to serve")
	f.BoolVar(&o.quiet, "quiet", false, "no progress on stderr")
	return cmd
}

// spec validates the flags and builds the launch spec (without LogPath)
// through bench, as run does.
func (o *startupOptions) spec() (launch.Spec, error) {
	if err := o.checkValues(); err != nil {
		return launch.Spec{}, err
	}
	if err := o.checkSource(); err != nil {
		return launch.Spec{}, err
	}
	so, err := o.options()
	if err != nil {
		return launch.Spec{}, err
	}
	so.GPU, so.ServeModel = o.gpu, o.model
	spec, err := bench.LaunchSpec(so)
	if err != nil {
		return spec, err
	}
	if o.healthPath != "" { // else the preset's (Ollama: /api/version)
		spec.HealthPath = o.healthPath
	}
	spec.PollInterval = o.pollInterval
	return spec, spec.Validate()
}

// checkValues checks the flags that stand alone (--server-cmd with
// --server is bench.LaunchSpec's to refuse, as it is run's).
func (o *startupOptions) checkValues() error {
	switch {
	case o.repeat < 1:
		return fmt.Errorf("--repeat %d: expected 1 or more", o.repeat)
	case !slices.Contains(startupFormats, o.format):
		return fmt.Errorf("--format %q: expected one of %s", o.format, strings.Join(startupFormats, ", "))
	case o.pollInterval <= 0:
		return fmt.Errorf("--poll-interval %v: expected a duration > 0", o.pollInterval)
	}
	return nil
}

// checkSource refuses, in startup's words, the flags that do not go with
// the server's source: startup starts every server it measures, and its
// --gpu and --model join the bundled engine's flags.
func (o *startupOptions) checkSource() error {
	bundledOnly := o.speedup != 0 || o.gpu != "" || len(o.engineArgs) > 0
	if o.serverCmd != "" {
		if bundledOnly || o.model != "" {
			return errors.New("--speedup, --gpu, --model and --engine-arg: not with --server-cmd (put them in the command)")
		}
		return nil // --base-url is bench.LaunchSpec's to check
	}
	switch {
	case !o.bundled() && o.preset != "" && bundledOnly:
		return fmt.Errorf("--speedup, --gpu and --engine-arg: only for the bundled engine, not --server %s", o.preset)
	case o.baseURL != "" && (o.preset == "" || o.bundled()):
		return errors.New("--base-url: the bundled engine picks a free port and names it in its log; use --server-cmd to run it on a fixed one")
	}
	return nil
}

func runStartup(cmd *cobra.Command, o *startupOptions) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if o.fromLog != "" {
		return startupFromLog(stdout, o)
	}
	if err := o.serverFlags.check(cmd.Flags()); err != nil {
		return usageErr(err)
	}
	spec, err := o.spec()
	if err != nil {
		return usageErr(err)
	}
	spec.APIKey = client.APIKeyFromEnv(o.apiKeyEnv)
	logDir, err := o.logDir()
	if err != nil {
		return err
	}
	if spec.Preset == launch.PresetOllama && o.ollamaModels == "" {
		spec.Env = append(spec.Env, "OLLAMA_MODELS="+bench.OllamaModelsDir(logDir))
	}
	started := time.Now()
	runs, runErr := o.coldStarts(cmd.Context(), stderr, spec, logDir)
	if o.out == "" && runErr == nil {
		os.RemoveAll(logDir)
	}
	if len(runs) > 0 {
		if werr := o.writeRuns(stdout, spec, runs, started); werr != nil {
			runErr = errors.Join(runErr, werr)
		}
	}
	return o.startupExit(cmd.Context(), spec, runs, runErr)
}

// logDir is where the server logs go: --out, or a temporary folder kept
// only when a start fails, so the whole log can be read.
func (o *startupOptions) logDir() (string, error) {
	if o.out == "" {
		return os.MkdirTemp("", "servebench-startup-")
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return "", usageErr(fmt.Errorf("--out %s: %w", o.out, err))
	}
	return o.out, nil
}

// coldStarts starts spec's server --repeat times, or until a start fails,
// each with its own log in logDir.
func (o *startupOptions) coldStarts(ctx context.Context, stderr io.Writer, spec launch.Spec, logDir string) ([]*launch.Measurement, error) {
	var runs []*launch.Measurement
	for i := 1; i <= o.repeat; i++ {
		spec.LogPath = filepath.Join(logDir, logName(i))
		progress := func(phase string, at time.Duration) {
			if !o.quiet {
				fmt.Fprintf(stderr, "startup %d/%d: %-14s %7.2f s\n", i, o.repeat, phase, at.Seconds())
			}
		}
		m, err := launch.ColdStart(ctx, spec, progress)
		if m != nil {
			runs = append(runs, m)
		}
		if err != nil {
			return runs, err
		}
	}
	return runs, nil
}

// writeRuns prints the runs and, with --out, writes results.json.
func (o *startupOptions) writeRuns(stdout io.Writer, spec launch.Spec, runs []*launch.Measurement, started time.Time) error {
	err := writeStartup(stdout, o.format, runs)
	if o.out != "" {
		err = errors.Join(err, writeStartupResults(o.out, spec, o, runs, started))
	}
	return err
}

// startupExit maps the starts' error to the exit status.
func (o *startupOptions) startupExit(ctx context.Context, spec launch.Spec, runs []*launch.Measurement, runErr error) error {
	switch {
	case runErr == nil:
		return nil
	case spec.Preset == bench.PresetBundled && len(runs) == 0 && engineRefusedFlags(runErr):
		return engineRefusal(runErr)
	case ctx.Err() != nil:
		return withExit(exitInterrupted, fmt.Errorf("interrupted after %d of %d start(s): %w", len(runs), o.repeat, runErr))
	}
	return withExit(exitInvalidRun, fmt.Errorf("start %d of %d: %w", len(runs)+1, o.repeat, runErr))
}

// engineRefusedFlags reports whether err says a started server exited with
// status 2. The bundled engine does so only on flags it refuses (a bad
// --engine-arg): bad input, not a failed server. Callers check that the
// server was the bundled engine, and that it had not been ready yet.
func engineRefusedFlags(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == exitUsage
}

// engineRefusal is the usage error for a bundled engine that refused its
// flags: the engine's own message (its log's last "servebench: ..." lines)
// rather than the launcher's account of a failed start, which would bury it.
func engineRefusal(err error) error {
	var reason []string
	for _, l := range strings.Split(err.Error(), "\n") {
		l, ok := strings.CutPrefix(l, "  | ")
		switch {
		case !ok:
			continue
		case strings.HasPrefix(l, "servebench: "):
			reason = []string{strings.TrimPrefix(l, "servebench: ")}
		case reason != nil:
			reason = append(reason, l)
		}
	}
	if reason == nil {
		return usageErr(fmt.Errorf("the bundled engine refused its flags: %w", err))
	}
	return usageErr(fmt.Errorf("the bundled engine refused its flags (exit status 2): %s", strings.Join(reason, "\n")))
}

// logName is run i's server log: server.log, then server-2.log, ...
func logName(i int) string {
	if i == 1 {
		return result.ServerLog
	}
	return fmt.Sprintf("server-%d.log", i)
}

// startupRepeats is the list form of --repeat: every run plus min/median/max.
type startupRepeats struct {
	Runs    []*result.Startup         `json:"runs"`
	Summary map[string]*stats.Summary `json:"summary"`
}

func repeatsOf(runs []*launch.Measurement) *startupRepeats {
	r := &startupRepeats{}
	for _, m := range runs {
		r.Runs = append(r.Runs, (*result.Startup)(m.Startup))
	}
	r.Summary = bench.SummarizeStartups(r.Runs)
	return r
}

func writeStartup(w io.Writer, format string, runs []*launch.Measurement) error {
	if format == "text" {
		return bench.WriteStartupText(w, runs)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if len(runs) == 1 {
		return enc.Encode((*result.Startup)(runs[0].Startup))
	}
	return enc.Encode(repeatsOf(runs))
}

// writeStartupResults writes DIR/results.json: server.startup is the one
// run, or with --repeat the per-key median, and startup_repeats (an extra
// top-level field) every run plus the summary.
func writeStartupResults(dir string, spec launch.Spec, o *startupOptions, runs []*launch.Measurement, started time.Time) error {
	res := struct {
		result.Results
		StartupRepeats *startupRepeats `json:"startup_repeats,omitempty"`
	}{Results: result.Results{Schema: result.Schema, Runs: []result.Run{}, Warnings: []string{}}}
	res.Manifest = bench.NewManifest(version, os.Args)
	res.Manifest.StartedAt = started.UTC()
	last := runs[len(runs)-1]
	res.Server = result.Server{BaseURL: last.BaseURL, Model: last.Model, Dialect: dialectOf(last.Facts.Engine),
		Command: strings.Join(launch.RedactArgs(spec.Command), " "), Preset: spec.Preset, Startup: (*result.Startup)(runs[0].Startup)}
	if spec.Preset == bench.PresetBundled {
		b, err := bundledOf(spec.Command)
		if err != nil {
			return err
		}
		b.Args = launch.RedactArgs(o.engineArgs)
		res.Server.Bundled = b
	}
	if len(runs) > 1 {
		res.StartupRepeats = repeatsOf(runs)
		res.Server.Startup = bench.MedianStartup(res.StartupRepeats.Runs)
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+result.ResultsFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", result.ResultsFile, err)
	}
	return os.Rename(tmp, filepath.Join(dir, result.ResultsFile))
}

// dialectOf names the /metrics dialect a log format implies ("none" if unknown).
func dialectOf(engine string) string {
	if engine == "" {
		return "none"
	}
	return engine
}

func startupFromLog(w io.Writer, o *startupOptions) error {
	if !slices.Contains(startupFormats, o.format) {
		return usageErr(fmt.Errorf("--format %q: expected one of %s", o.format, strings.Join(startupFormats, ", ")))
	}
	fh, err := os.Open(o.fromLog)
	if err != nil {
		return usageErr(fmt.Errorf("--from-log: %w", err))
	}
	if fi, err := fh.Stat(); err == nil && fi.IsDir() {
		fh.Close()
		return usageErr(fmt.Errorf("--from-log %s: is a directory, expected a server log file", o.fromLog))
	}
	defer fh.Close()
	facts := launch.ParseLog(fh)
	if o.format == "json" {
		var st launch.Startup
		facts.Fill(&st)
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode((*result.Startup)(&st))
	}
	fmt.Fprintf(w, "%s:\n", o.fromLog)
	return bench.WriteStartupFacts(w, facts)
}

// bundledOf reads what a bundled engine command line runs the way the
// engine reads it: its own flag set over the arguments after "engine" (the
// last of a repeated flag wins, --gpu=X and --gpu X alike), profiles by
// their profile names. The servers that stay up answer this on /version;
// startup's are stopped before results are written.
func bundledOf(argv []string) (*result.Bundled, error) {
	i := slices.Index(argv, "engine")
	if i < 0 {
		return nil, fmt.Errorf("bundled engine command %q: no engine subcommand", strings.Join(argv, " "))
	}
	ec := newEngineCmd()
	if err := ec.ParseFlags(argv[i+1:]); err != nil {
		return nil, fmt.Errorf("bundled engine arguments: %w", err)
	}
	f := ec.Flags()
	gpu, _ := f.GetString("gpu")
	model, _ := f.GetString("model")
	g, m, err := perf.Lookup(gpu, model)
	if err != nil {
		return nil, err
	}
	b := &result.Bundled{GPU: g.Name, Model: m.Name}
	b.Speedup, _ = f.GetFloat64("speedup")
	b.Seed, _ = f.GetInt64("seed")
	return b, nil
}
