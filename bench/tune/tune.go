package tune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/option"
)

// DefaultRepeats is --repeats' default: the fewest runs that give an
// interval with some width to it (two would, at a t of 12.7).
const DefaultRepeats = 3

// Options are a tune: the session every unit runs (its server before the
// grid applies, its runs or search, its limits), the grid, the repeats.
type Options struct {
	// Session is what each unit runs; its Dir is the tune's directory, and
	// each unit's session gets its own directory below it.
	Session bench.Config
	Grid    Grid
	Repeats int
	// Seed shuffles the order and seeds each repeat's workload (and the
	// bundled engine): repeat r of a tune with seed S runs with seed
	// S*1000+r, so another --seed gives other draws throughout.
	Seed int64
	// Resume continues the tune in Session.Dir: finished units are kept,
	// the one a kill interrupted runs again from scratch.
	Resume bool
	// GPUs counts the GPUs one server uses (0: the bundled engine's tensor
	// x pipeline parallel sizes, else 1).
	GPUs int
	// GPUHourPrice in USD per GPU-hour prices each treatment's output
	// tokens (0: no cost).
	GPUHourPrice float64
	Log          io.Writer
	// Warn gets what the tune warns of as it goes (also when Log is nil:
	// quiet); each warning is kept in tune.json too.
	Warn io.Writer
	// Execute runs one unit's session (nil: bench.Execute).
	Execute func(context.Context, bench.Config) (*result.Results, []result.Record, error)
}

// Check refuses options that cannot run, before anything starts.
func (o *Options) Check() error {
	if o.Repeats < 1 || o.Repeats > 100 {
		return option.Errorf("Repeats", o.Repeats, "expected 1-100 runs per treatment")
	}
	if o.GPUs < 0 {
		return option.Errorf("GPUs", o.GPUs, "expected a count >= 0 (0: from the profile)")
	}
	if o.GPUHourPrice < 0 {
		return option.Errorf("GPUHourPrice", o.GPUHourPrice, "expected USD >= 0")
	}
	if so := o.Session.Server; so.BaseURL != "" && so.ServerCmd == "" && so.Preset == "" {
		return option.Errorf("BaseURL", nil, "tune {BaseURL} alone: tune starts a fresh server for every treatment; give {ServerCmd} or {Preset} (or neither: the bundled engine)")
	}
	if len(o.Session.Runs) == 0 && o.Session.Search == nil {
		return option.Errorf("Concurrencies", nil, "tune: no load: expected {Concurrencies}, {Rates} or {Search}")
	}
	return o.Grid.Check(o.Session.Server)
}

// Run runs every unit not yet done, in order, rewriting tune.json after
// each, then summarises the repeats into the answer. A unit whose server
// failed to start or whose runs were invalid is recorded with its error
// and the tune goes on; an interrupt saves the state and returns an error
// wrapping bench.ErrInterrupted (resume with Options.Resume).
func Run(ctx context.Context, o Options) (*result.Tune, error) {
	if err := o.Check(); err != nil {
		return nil, fmt.Errorf("%w: %w", bench.ErrUsage, err)
	}
	if o.Execute == nil {
		o.Execute = bench.Execute
	}
	dir := o.Session.Dir
	t, err := o.state(dir)
	if err != nil {
		return nil, err
	}
	done := 0
	for _, u := range t.Units {
		if u.Done {
			done++
		}
	}
	if done > 0 {
		o.logf("tune: resuming %s: %d of %d units done\n", dir, done, len(t.Units))
	}
	for i := range t.Units {
		u := &t.Units[i]
		if u.Done {
			continue
		}
		o.logf("tune: unit %d/%d: %s, repeat %d\n", i+1, len(t.Units), t.Treatments[u.Treatment].Name, u.Repeat)
		err := o.runUnit(ctx, t, u)
		if werr := writeTune(dir, t); werr != nil {
			return t, errors.Join(err, werr)
		}
		if err != nil {
			return t, err
		}
	}
	o.summarize(t)
	t.Incomplete = false
	return t, writeTune(dir, t)
}

// state is a new tune for o, or with Resume the one dir holds, checked to
// be the same grid, repeats and seed.
func (o *Options) state(dir string) (*result.Tune, error) {
	path := filepath.Join(dir, result.TuneFile)
	if o.Resume {
		t, err := ReadTune(dir)
		if err != nil {
			return nil, &option.FieldError{Field: "Resume", Reason: "{Resume} %s", Args: []any{dir}, Err: err}
		}
		if !slices.EqualFunc(t.Grid, o.Grid, factorEqual) || t.Repeats != o.Repeats || t.Seed != o.Seed {
			grid, args := gridFormat(t.Grid)
			return nil, fmt.Errorf("%w: %w", bench.ErrUsage, option.Errorf("Resume", nil, "{Resume} %s: the tune there has another grid, {Repeats} or {Seed} ("+grid+"); give the same flags as the first invocation",
				append([]any{dir}, args...)...))
		}
		t.Incomplete = true
		return t, nil
	}
	if _, err := os.Stat(path); err == nil {
		return nil, fmt.Errorf("%w: %w", bench.ErrUsage, option.Errorf("Resume", nil, "%s already holds a tune: continue it with {Resume} %s, or choose another {Dir}", dir, dir))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, &option.FieldError{Field: "Dir", Reason: "results directory ({Dir})", Err: err}
	}
	t := &result.Tune{Schema: result.TuneSchema, Manifest: bench.NewManifest(o.Session.Version, o.Session.Args),
		Grid: o.Grid, Repeats: o.Repeats, Seed: o.Seed, Treatments: o.Grid.Treatments(), GPUHourPriceUSD: o.GPUHourPrice,
		Warnings: []string{}, Incomplete: true}
	if o.Session.Search != nil {
		t.SLO, t.Target = o.Session.Search.Base.SLO.String(), o.Session.Search.Target
	} else if len(o.Session.Runs) > 0 {
		t.SLO = o.Session.Runs[0].SLO.String()
	}
	t.Units = Order(len(t.Treatments), o.Repeats, o.Seed)
	return t, writeTune(dir, t)
}

// Order is the units of n treatments x repeats: one block per repeat,
// every treatment once in it, shuffled within the block (seeded), so drift
// over the tune's hours spreads across the treatments.
func Order(n, repeats int, seed int64) []result.TuneUnit {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7e4e)) //nolint:gosec // an experiment's order, not security
	units := make([]result.TuneUnit, 0, n*repeats)
	for r := 1; r <= repeats; r++ {
		perm := rng.Perm(n)
		for _, t := range perm {
			units = append(units, result.TuneUnit{Treatment: t, Repeat: r,
				Dir: filepath.Join("units", fmt.Sprintf("t%d-r%d", t+1, r))})
		}
	}
	return units
}

// runUnit runs one unit's session in its own directory (emptied first: a
// killed unit starts over).
func (o *Options) runUnit(ctx context.Context, t *result.Tune, u *result.TuneUnit) error {
	cfg := o.unitConfig(t, u)
	if err := os.RemoveAll(cfg.Dir); err != nil {
		return err
	}
	start := time.Now()
	res, _, err := o.Execute(ctx, cfg)
	u.WallS = time.Since(start).Seconds()
	switch {
	case errors.Is(err, bench.ErrInterrupted) || ctx.Err() != nil:
		return fmt.Errorf("%w: tune stopped during %s (continue with --resume %s)", bench.ErrInterrupted, u.Dir, o.Session.Dir)
	case errors.Is(err, bench.ErrUsage):
		return err
	case err != nil:
		u.Error = err.Error()
		o.logf("tune: %s: %v\n", u.Dir, err)
	case res == nil:
		u.Error = "no results"
	}
	if res != nil {
		o.warnSameSeed(t, res)
	}
	u.Done = true
	return nil
}

// warnSameSeed warns, once, when the server command starts the bundled
// engine (its /version says so) without SeedPlaceholder: every repeat's
// engine then draws from the same seed, so the repeats are not independent
// runs and the intervals understate the noise. Only the bundled engine's
// seed is known to matter.
func (o *Options) warnSameSeed(t *result.Tune, res *result.Results) {
	cmd, bd := o.Session.Server.ServerCmd, res.Server.Bundled
	if cmd == "" || strings.Contains(cmd, SeedPlaceholder) || bd == nil {
		return
	}
	w := fmt.Sprintf("the server command starts the bundled engine without %s: every repeat runs the same engine seed (%d), so the repeats share the engine's draws and the intervals understate the noise; add --seed %s to the command",
		SeedPlaceholder, bd.Seed, SeedPlaceholder)
	if slices.Contains(t.Warnings, w) {
		return
	}
	t.Warnings = append(t.Warnings, w)
	if o.Warn != nil {
		fmt.Fprintf(o.Warn, "tune: warning: %s\n", w)
	}
}

// unitConfig is the session of unit u: the treatment's server, each run
// (or the search) reseeded for the repeat, the unit's directory.
func (o *Options) unitConfig(t *result.Tune, u *result.TuneUnit) bench.Config {
	cfg := o.Session
	cfg.Dir = filepath.Join(o.Session.Dir, u.Dir)
	seed := o.Seed*1000 + int64(u.Repeat)
	cfg.Server = o.Grid.Apply(o.Session.Server, t.Treatments[u.Treatment].Settings, seed)
	if cfg.Server.Bundled() && !slices.ContainsFunc(cfg.Server.EngineArgs, isSeedArg) {
		cfg.Server.EngineArgs = append(cfg.Server.EngineArgs, "--seed="+strconv.FormatInt(seed, 10))
	}
	// One warm-up per server: the first run's; the later levels find it warm.
	cfg.Runs = slices.Clone(o.Session.Runs)
	for i := range cfg.Runs {
		reseed(&cfg.Runs[i], seed, u.Repeat)
		if i > 0 {
			cfg.Runs[i].Workload.Warmup = 0
		}
	}
	if o.Session.Search != nil {
		s := *o.Session.Search
		reseed(&s.Base, seed, u.Repeat)
		s.WarmupOnce = true
		cfg.Search = &s
	}
	return cfg
}

func isSeedArg(a string) bool { return a == "--seed" || len(a) > 7 && a[:7] == "--seed=" }

// repeatStride separates the repeats' conversations (Workload.Offset),
// past what a sweep's levels and a search's steps use.
const repeatStride = 1 << 40

func reseed(spec *bench.RunSpec, seed int64, repeat int) {
	spec.Workload.Seed = seed
	spec.Workload.Offset += repeat * repeatStride
}

func (o *Options) logf(format string, a ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format, a...)
	}
}

func factorEqual(a, b result.TuneFactor) bool {
	return a.Name == b.Name && a.Kind == b.Kind && slices.Equal(a.Values, b.Values)
}

// gridFormat is g as a reason's format ("{EngineGrid} %s=%v; ...") and
// its operands, so that each list is named as the option it came from.
func gridFormat(g Grid) (string, []any) {
	var s string
	var args []any
	for i, f := range g {
		if i > 0 {
			s += "; "
		}
		s += "{" + fieldOf[f.Kind] + "} %s=%v"
		args = append(args, f.Name, f.Values)
	}
	return s, args
}

// ReadTune reads dir's tune.json.
func ReadTune(dir string) (*result.Tune, error) {
	b, err := os.ReadFile(filepath.Join(dir, result.TuneFile))
	if err != nil {
		return nil, err
	}
	var t result.Tune
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, result.TuneFile), err)
	}
	if t.Schema != result.TuneSchema {
		return nil, fmt.Errorf("%s: schema %q: expected %s", filepath.Join(dir, result.TuneFile), t.Schema, result.TuneSchema)
	}
	return &t, nil
}

// writeTune writes t to dir/tune.json atomically (a temporary file renamed
// over it), so kill -9 leaves the old state or the new one, as the soak's
// checkpoint.json (no fsync: a process kill, not a power cut).
func writeTune(dir string, t *result.Tune) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+result.TuneFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("writing %s: %w", result.TuneFile, err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, result.TuneFile))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", result.TuneFile, err)
	}
	return nil
}
