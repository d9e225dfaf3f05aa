package compare

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// DefaultAlpha is the significance level used when Options.Alpha is 0.
const DefaultAlpha = 0.05

// approxMinN is the sample size per side from which the normal
// approximation to the U distribution is commonly taken as adequate
// (Mann & Whitney 1947 tabulated exact values up to 8).
const approxMinN = 8

// MinSamples is how many successful measured requests each side of a run
// needs to be judged at alpha: at least approxMinN for the normal
// approximation, and at least enough that the most extreme outcome could
// reach significance (4 per side at alpha 0.05, 8 at 0.001).
func MinSamples(alpha float64) int { return max(approxMinN, stats.MannWhitneyMinN(alpha)) }

// Options control a comparison.
type Options struct {
	Alpha      float64     // significance level; 0 means DefaultAlpha
	Thresholds []Threshold // laid over DefaultThresholds by key; Off removes one
	Force      bool        // compare runs whose workloads differ (the differences are reported)
	// Test is TestAuto (""; run-level) or TestRequests (per-request, as
	// before run-level statistics).
	Test string
	// Clock is the time both sides are compared in (result.ClockNames):
	// each side converted with its own speed-up; "" is modelled when
	// either side was recorded in modelled time, else wall.
	Clock string
}

// Diff is one field that differs between the two sides.
type Diff struct {
	Field string `json:"field"`
	Base  string `json:"base"`
	New   string `json:"new"`
}

func (d Diff) String() string { return fmt.Sprintf("%s: %s -> %s", d.Field, d.Base, d.New) }

// MismatchError is returned when a run's workloads differ and Options.Force
// is not set. It wraps ErrMismatch.
type MismatchError struct {
	Run   string
	Diffs []Diff
}

func (e *MismatchError) Error() string {
	parts := make([]string, len(e.Diffs))
	for i, d := range e.Diffs {
		parts[i] = d.String()
	}
	return fmt.Sprintf("run %q: workloads differ (%s); refusing to compare (use --force to compare anyway)", e.Run, strings.Join(parts, "; "))
}

// Unwrap makes errors.Is(err, ErrMismatch) true.
func (e *MismatchError) Unwrap() error { return ErrMismatch }

// InvalidRunError says why one side cannot be judged. It wraps ErrInvalidRun.
type InvalidRunError struct {
	Side   string // "base" or "new"
	Path   string
	Run    string // "" when about the whole side
	Reason string
}

func (e *InvalidRunError) Error() string {
	if e.Run == "" {
		return fmt.Sprintf("%s (%s): %s", e.Side, e.Path, e.Reason)
	}
	return fmt.Sprintf("%s (%s) run %q: %s", e.Side, e.Path, e.Run, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidRun) true.
func (e *InvalidRunError) Unwrap() error { return ErrInvalidRun }

// Compare compares cur (the new side) against base run by run (runs are matched by name).
// It returns an error wrapping ErrMismatch when workloads differ (unless
// opts.Force), ErrInvalidRun when a side cannot be judged, ErrInput when
// the two have no run in common. The Report says whether anything
// regressed; a regression is not an error.
func Compare(base, cur *Side, opts Options) (*Report, error) {
	alpha := opts.Alpha
	if alpha == 0 {
		alpha = DefaultAlpha
	}
	if !(alpha > 0 && alpha < 1) {
		return nil, fmt.Errorf("%w: alpha %v is not in (0, 1)", ErrInput, alpha)
	}
	if err := errors.Join(noRuns(base, "base"), noRuns(cur, "new")); err != nil {
		return nil, err
	}
	clock := opts.Clock
	if clock == "" {
		clock = defaultClock(base, cur)
	}
	base, cur = sideIn(base, clock), sideIn(cur, clock)
	nb, nn := len(base.repeats()), len(cur.repeats())
	mode, err := pickMode(opts.Test, nb, nn)
	if err != nil {
		return nil, err
	}
	rep := &Report{
		Clock:      clockCaption(base, cur, clock),
		Alpha:      alpha,
		MinSamples: MinSamples(alpha),
		Test:       testDescription(mode, nb, nn),
		Mode:       mode, RunsBase: nb, RunsNew: nn,
		Base:   sideInfo(base),
		New:    sideInfo(cur),
		Forced: opts.Force,
	}
	th := activeThresholds(opts.Thresholds)
	if foreign(base, cur) != "" {
		foreignThresholds(th, opts.Thresholds)
	}
	rep.Thresholds = sortedThresholds(th)
	rep.ServerDiffs = serverDiffs(base.Results, cur.Results)
	pairs, err := matchRuns(base, cur, rep)
	if err != nil {
		return nil, err
	}
	var errs []error
	for i := range pairs {
		p := &pairs[i]
		if foreign(base, cur) != "" {
			p.baseForeign = base.Foreign != ""
			p.diffs, p.unchecked = foreignDiffs(base, cur, p.b, p.n)
		} else {
			p.diffs = workloadDiffs(p.b, p.n)
		}
		if len(p.diffs) > 0 && !opts.Force {
			errs = append(errs, &MismatchError{Run: p.b.Name, Diffs: p.diffs})
		}
		if !opts.Force {
			errs = append(errs, repeatsDiffer(base, "base", p.b), repeatsDiffer(cur, "new", p.n))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i := range pairs {
		p := &pairs[i]
		slo, note := commonSLO(p.b, p.n)
		p.sloNote = note
		p.slo = slo
		p.sb = samplesOf(pooled(base), p.b.Name, p.b.Workload.OpenLoop(), slo)
		p.sn = samplesOf(pooled(cur), p.n.Name, p.n.Workload.OpenLoop(), slo)
		p.pvals = map[string]*float64{}
		errs = append(errs, checkSide(base, "base", p.b, p.sb, rep.MinSamples, alpha), checkSide(cur, "new", p.n, p.sn, rep.MinSamples, alpha))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, p := range pairs {
		rr := compareRun(p, th, alpha, rep.MinSamples)
		if mode != ModeRequests {
			rejudge(&rr, mode, repRuns(base, p.b.Name, p.slo), repRuns(cur, p.n.Name, p.slo), th, alpha)
		}
		rep.Runs = append(rep.Runs, rr)
	}
	if mode == ModeRuns || mode == ModeHistory {
		judgeFamily(rep, alpha)
	}
	return rep, nil
}

type runPair struct {
	b, n   *result.Run
	sb, sn *runSamples
	diffs  []Diff
	// unchecked: workload fields a foreign side does not record.
	unchecked   []string
	baseForeign bool                // the base side is not servebench's: the report shows the new side's run
	pvals       map[string]*float64 // test's memo, by quantity
	sloNote     string              // goodput rows: which SLO judged both sides, when they differ
	slo         *result.SLO         // the SLO both sides are judged against
}

func noRuns(s *Side, label string) error {
	if s.Results != nil && len(s.Results.Runs) > 0 {
		return nil
	}
	reason := "no runs: the server failed or the benchmark stopped before any run finished"
	if s.Results != nil && len(s.Results.Warnings) > 0 {
		reason += " (warnings: " + strings.Join(s.Results.Warnings, "; ") + ")"
	}
	return &InvalidRunError{Side: label, Path: s.Path, Reason: reason}
}

// matchRuns pairs runs by name in base order and notes the unmatched.
func matchRuns(base, cur *Side, rep *Report) ([]runPair, error) {
	byName := map[string]*result.Run{}
	for i := range cur.Results.Runs {
		byName[cur.Results.Runs[i].Name] = &cur.Results.Runs[i]
	}
	var pairs []runPair
	seen := map[string]bool{}
	for i := range base.Results.Runs {
		b := &base.Results.Runs[i]
		seen[b.Name] = true
		if n, ok := byName[b.Name]; ok {
			pairs = append(pairs, runPair{b: b, n: n})
		} else {
			rep.OnlyInBase = append(rep.OnlyInBase, b.Name)
		}
	}
	for _, r := range cur.Results.Runs {
		if !seen[r.Name] {
			rep.OnlyInNew = append(rep.OnlyInNew, r.Name)
		}
	}
	if b, n, ok := matchForeign(base, cur); len(pairs) == 0 && ok {
		pairs = append(pairs, runPair{b: b, n: n})
		rep.OnlyInBase = slices.DeleteFunc(rep.OnlyInBase, func(s string) bool { return s == b.Name })
		rep.OnlyInNew = slices.DeleteFunc(rep.OnlyInNew, func(s string) bool { return s == n.Name })
	}
	if len(pairs) == 0 {
		hint := ""
		if foreign(base, cur) != "" {
			hint = " (" + errNoForeignMatch.Error() + ")"
		}
		return nil, fmt.Errorf("%w: no run in common: base %s has %s, new %s has %s%s", ErrInput,
			base.Path, runNames(base.Results.Runs), cur.Path, runNames(cur.Results.Runs), hint)
	}
	return pairs, nil
}

func runNames(runs []result.Run) string {
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = strconv.Quote(r.Name)
	}
	return "[" + strings.Join(names, " ") + "]"
}

// acceptEncoding is the Accept-Encoding res's runs sent ("" when none
// recorded one).
func acceptEncoding(res *result.Results) string {
	for _, r := range res.Runs {
		if r.Workload.AcceptEncoding != "" {
			return r.Workload.AcceptEncoding
		}
	}
	return ""
}

// serverDiffs lists server-side and harness differences: what a
// comparison is for, so they are shown and never refused.
func serverDiffs(b, n *result.Results) []Diff {
	var d []Diff
	add := func(field, x, y string) {
		if x != y {
			d = append(d, Diff{Field: field, Base: orNone(x), New: orNone(y)})
		}
	}
	add("servebench_version", b.Manifest.Version, n.Manifest.Version)
	add("server.version", b.Server.Version, n.Server.Version)
	add("server.command", b.Server.Command, n.Server.Command)
	add("server.preset", b.Server.Preset, n.Server.Preset)
	add("server.model", b.Server.Model, n.Server.Model)
	add("server.dialect", b.Server.Dialect, n.Server.Dialect)
	// How the client asked: a compressing proxy holds a gzip client's stream
	// and streams an identity client's (results before gzip sent none).
	add("client.accept_encoding", acceptEncoding(b), acceptEncoding(n))
	bb, nb := bundledFields(b.Server.Bundled), bundledFields(n.Server.Bundled)
	for i := range bb {
		add("bundled."+bundledNames[i], bb[i], nb[i])
	}
	add("host.cpus", strconv.Itoa(b.Manifest.Host.CPUs), strconv.Itoa(n.Manifest.Host.CPUs))
	add("host.go_version", b.Manifest.Host.GoVersion, n.Manifest.Host.GoVersion)
	add("host.os_arch", b.Manifest.Host.OS+"/"+b.Manifest.Host.Arch, n.Manifest.Host.OS+"/"+n.Manifest.Host.Arch)
	return d
}

var bundledNames = []string{"gpu", "model", "speedup", "seed", "args"}

func bundledFields(b *result.Bundled) []string {
	if b == nil {
		return make([]string, len(bundledNames))
	}
	return []string{b.GPU, b.Model, fmtFloat(b.Speedup), strconv.FormatInt(b.Seed, 10), strings.Join(b.Args, " ")}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// checkSide refuses a run side that cannot be judged.
func checkSide(s *Side, label string, r *result.Run, smp *runSamples, minN int, alpha float64) error {
	bad := func(reason string) error {
		return &InvalidRunError{Side: label, Path: s.Path, Run: r.Name, Reason: reason}
	}
	switch {
	case smp.measured == 0 && r.Requests > 0:
		return &InputError{Path: requestsPath(s.Path),
			Err: fmt.Errorf("no measured requests for run %q, though results.json counts %d", r.Name, r.Requests)}
	case smp.measured == 0:
		return bad("no measured requests")
	case smp.ok() == 0:
		return bad(fmt.Sprintf("every one of the %d measured requests failed (%s)", smp.measured, result.ErrorCounts(r.Errors)))
	case smp.ok() < minN:
		return bad(fmt.Sprintf("only %d successful measured requests; at least %d per side are needed to judge (Mann-Whitney normal approximation; at alpha %g it cannot reach significance below %d): run more requests",
			smp.ok(), minN, alpha, stats.MannWhitneyMinN(alpha)))
	}
	return nil
}

// requestsPath is where requests.jsonl of a side loaded from path lives.
func requestsPath(path string) string {
	if strings.HasSuffix(path, ".json") {
		path = filepath.Dir(path)
	}
	return filepath.Join(path, result.RequestsFile)
}

func sortedThresholds(m map[string]Threshold) []Threshold {
	out := make([]Threshold, 0, len(m))
	for _, q := range quantities {
		for _, s := range q.Stats {
			if t, ok := m[q.Name+"."+s]; ok {
				out = append(out, t)
			}
		}
	}
	return out
}

// relChange is (cur - base) / |base|, or nil when base is 0 and cur is not.
func relChange(base, cur float64) *float64 {
	if math.IsNaN(base) || math.IsNaN(cur) || (base == 0 && cur != 0) {
		return nil
	}
	if base == cur {
		c := 0.0
		return &c
	}
	c := (cur - base) / math.Abs(base)
	return &c
}

// defaultClock is modelled when either side was recorded in modelled time.
func defaultClock(sides ...*Side) string {
	for _, s := range sides {
		if result.ClockOf(s.Results).Modelled() {
			return result.ClockModelled
		}
	}
	return result.ClockWall
}

// sideIn is s with its figures and records in the clock name, converted
// with s's own speed-up, and so each of its repeats with its own (the
// run-level test reads them): s itself when that changes nothing.
func sideIn(s *Side, name string) *Side {
	c := result.ClockAs(s.Results, name)
	if !c.Modelled() && len(s.Repeats) == 0 {
		return s
	}
	out := *s
	if c.Modelled() {
		out.Results = c.View(s.Results)
		out.Records = c.ViewRecords(s.Records, s.Results.Runs)
	}
	if len(s.Repeats) > 0 {
		out.Repeats = make([]*Side, len(s.Repeats))
		for i, r := range s.Repeats {
			out.Repeats[i] = sideIn(r, name)
		}
	}
	return &out
}

// clockCaption says which clock a comparison is in; "" when neither side
// was sped up.
func clockCaption(base, cur *Side, name string) string {
	b, n := result.ClockAs(base.Results, name), result.ClockAs(cur.Results, name)
	switch {
	case b.Caption() == "" && n.Caption() == "":
		return ""
	case name == result.ClockModelled:
		return fmt.Sprintf("Clock: modelled, the emulated hardware's time (base sped up %sx, new %sx, each converted).", result.FormatFactor(b.Speedup), result.FormatFactor(n.Speedup))
	}
	return fmt.Sprintf("Clock: wall, this machine's time (base sped up %sx, new %sx).", result.FormatFactor(b.Speedup), result.FormatFactor(n.Speedup))
}
