package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/bench/history"
	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/compare"
)

func newHistoryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Keep results across runs in a database: add saved results, show trends and change points",
		Long: `history keeps each run's summary, its run-level statistics (median, p90, p99 of the
client figures, the engine's, throughput, errors) and where it came from (--label pairs,
commit, branch, CI run, server version and flags, the bundled engine's facts, the
workload's fingerprint, the machine) in a database: an SQLite file (the default, created
on first use) or PostgreSQL (a postgres:// URL). run, table and sweep store into it with
--history DB; --baseline history:DB judges a new run against it.

Runs are comparable when their workload fingerprint (everything compare checks) and
server fingerprint (model, preset, dialect; the bundled engine's GPU, model, speed-up and
parallelism) match. The server's version and flags are recorded but not matched: they
are the build a history follows from commit to commit.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newHistoryAddCmd(), newHistoryShowCmd())
	return cmd
}

// historyAddOptions are `history add`'s flags.
type historyAddOptions struct {
	labels []string
	dirs   []string
}

func newHistoryAddCmd() *cobra.Command {
	var o historyAddOptions
	cmd := &cobra.Command{
		Use:   "add DB DIR...",
		Short: "Store saved results (results directories, vLLM bench result JSONs) in a history",
		Long: `add stores every run of each results directory (or results.json, or the JSON of
'vllm bench serve --save-result --save-detailed', as compare reads it) in the history
DB, all of them in one transaction. A directory's labels and build (results.json's
manifest) are kept; --label adds to them (a key given both ways takes --label's value).`,
		Example: `  servebench history add history.db servebench-results/*/
  servebench history add --label commit=abc123 postgres://ci@db/bench nightly/
  servebench history add history.db vllm-results/bench.json`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dirs = args[1:]
			return runHistoryAdd(cmd, args[0], &o)
		},
	}
	cmd.Flags().StringArrayVar(&o.labels, "label", nil, "KEY=VALUE added to every run stored (repeatable)")
	return cmd
}

func runHistoryAdd(cmd *cobra.Command, db string, o *historyAddOptions) error {
	labels, err := parseLabels(o.labels, "--label")
	if err != nil {
		return usageErr(err)
	}
	var entries []history.Entry
	for _, d := range o.dirs {
		side, err := compare.Load(d)
		if err != nil {
			return usageErr(err)
		}
		es := history.FromResults(side.Results, side.Records, d)
		if side.Foreign != "" && len(es) > 0 {
			for i := range es {
				es[i].Tool = side.Foreign
			}
		}
		for i := range es {
			es[i].Labels = mergeLabels(es[i].Labels, labels)
		}
		entries = append(entries, es...)
	}
	st, err := history.Open(cmd.Context(), db, false)
	if err != nil {
		return usageErr(err)
	}
	defer st.Close()
	if err := st.Add(cmd.Context(), entries); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "history: %d runs of %d result sets stored in %s\n", len(entries), len(o.dirs), st)
	return nil
}

// mergeLabels is base with extra laid over it, as a new map.
func mergeLabels(base, extra map[string]string) map[string]string {
	if len(extra) == 0 {
		return base
	}
	m := make(map[string]string, len(base)+len(extra))
	for k, v := range base {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// historyShowOptions are `history show`'s flags.
type historyShowOptions struct {
	workload, quantity, since, branch, run, out string
	labels                                      []string
	alpha, minStep                              float64
	permutations                                int
}

func newHistoryShowCmd() *cobra.Command {
	var o historyShowOptions
	cmd := &cobra.Command{
		Use:   "show DB",
		Short: "Show a statistic's trend over stored runs, with its change points",
		Long: `show prints, for each series of comparable runs (one workload on one server, one run
name), a statistic run after run, oldest first, and the change points in it, and writes
history.png and history.html (one self-contained page whose chart points link to their
runs' rows, commits and CI runs) into --out.

Change points are found by E-divisive means (Matteson and James, 2014; the method Apache
Otava, formerly Hunter, applies to nightly performance results): the split where the
runs before and after differ most in distribution, kept when a permutation test finds it
significant at --alpha, then again within each part. Each is printed with the run before
and after it and the step between the segments either side: the difference of their
means with its 95% interval (Welch's t-test across runs; each run one observation).`,
		Example: `  servebench history show history.db
  servebench history show history.db --quantity client.tpot --since 30d --label flavour=nightly
  servebench history show postgres://ci@db/bench --workload 3fa2 --quantity client.e2e.p90 --out site/`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runHistoryShow(cmd, args[0], &o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.workload, "workload", "", "only runs of this workload fingerprint (or a prefix of at least 4 characters of it)")
	f.StringVar(&o.quantity, "quantity", "client.e2e.median", "the statistic: QUANTITY.STAT (e.g. client.e2e.p90, engine.ttft.mean) or a QUANTITY, meaning its headline statistic")
	f.StringVar(&o.since, "since", "", "only runs started within this age, e.g. 30d, 12h")
	f.StringArrayVar(&o.labels, "label", nil, "only runs with this label KEY=VALUE (repeatable: all must match)")
	f.StringVar(&o.branch, "branch", "", "only runs of this branch")
	f.StringVar(&o.run, "run", "", "only runs of this name (e.g. streaming, c=8)")
	f.StringVar(&o.out, "out", ".", "directory for history.png and history.html")
	f.Float64Var(&o.alpha, "alpha", 0.05, "significance level of the change points' permutation test")
	f.Float64Var(&o.minStep, "min-step", 0.01, "leave out change points whose step is smaller than this fraction of the mean before (0.01: 1%; 0 keeps every significant one)")
	f.IntVar(&o.permutations, "permutations", 199, "permutations per change-point test (the smallest p-value is 1/(N+1))")
	return cmd
}

func (o *historyShowOptions) filter(now time.Time) (history.Filter, error) {
	f := history.Filter{WorkloadFP: o.workload, Branch: o.branch, Run: o.run}
	if o.workload != "" && len(o.workload) < 4 {
		return f, fmt.Errorf("--workload %q: expected a fingerprint or a prefix of at least 4 characters", o.workload)
	}
	var err error
	if f.Labels, err = parseLabels(o.labels, "--label"); err != nil {
		return f, err
	}
	if o.since != "" {
		age, err := history.ParseAge(o.since)
		if err != nil {
			return f, fmt.Errorf("--since %q: %w", o.since, err)
		}
		f.Since = now.Add(-age)
	}
	if !(o.alpha > 0 && o.alpha < 1) {
		return f, fmt.Errorf("--alpha %v: expected a significance level in (0, 1)", o.alpha)
	}
	if !(o.minStep >= 0 && o.minStep < 1) {
		return f, fmt.Errorf("--min-step %v: expected a fraction in [0, 1), e.g. 0.01 for 1%%", o.minStep)
	}
	if o.permutations < 19 {
		return f, fmt.Errorf("--permutations %d: expected at least 19 (a p-value of 0.05 needs 19)", o.permutations)
	}
	return f, nil
}

func runHistoryShow(cmd *cobra.Command, db string, o *historyShowOptions) error {
	f, err := o.filter(time.Now())
	if err != nil {
		return usageErr(err)
	}
	st, err := history.Open(cmd.Context(), db, true)
	if err != nil {
		return usageErr(err)
	}
	defer st.Close()
	entries, err := st.Query(cmd.Context(), f)
	if err != nil {
		return err
	}
	key := history.ResolveKey(o.quantity, entries)
	ss := history.Analyze(entries, key, stats.EDivisiveOptions{Alpha: o.alpha, Permutations: o.permutations, Seed: 1}, stats.DefaultLevel, o.minStep)
	if len(ss) == 0 {
		return usageErr(fmt.Errorf("%s: no stored run has %s (of %d runs selected)", st, key, len(entries)))
	}
	if err := report.WriteHistoryText(cmd.OutOrStdout(), ss); err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	if err := report.WriteHistory(o.out, "servebench history: "+key, ss); err != nil {
		return fmt.Errorf("history.png/html: %w", err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "history: %s and %s in %s\n", report.HistoryPNG, report.HistoryHTML, o.out)
	return nil
}

// record stores the session's runs in --history, with the gate's verdict
// (gateErr: nil passed, a regression failed; judged only with a
// --baseline), and returns gateErr, joined with a failure to store.
func (o *sessionOptions) record(cmd *cobra.Command, dir string, res *result.Results, gateErr error) error {
	if o.history == "" {
		return gateErr
	}
	verdict := ""
	switch {
	case o.base == nil && !(o.histBase != nil && o.histJudged): // not judged
	case gateErr == nil:
		verdict = history.GatePass
	case exitCode(gateErr) == exitRegression:
		verdict = history.GateFail
	}
	entries := history.FromResults(res, nil, dir)
	for i := range entries {
		entries[i].Gate = verdict
	}
	if err := storeEntries(cmd.Context(), o.history, entries); err != nil {
		return errors.Join(gateErr, usageErr(fmt.Errorf("--history: %w", err)))
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "history: %d runs stored in %s\n", len(entries), history.Redact(o.history))
	return gateErr
}

// storeRepeat stores one repeat of --repeats in --history, not gated
// (the gate judges the repeats together, after the last).
func (o *sessionOptions) storeRepeat(cmd *cobra.Command, dir string, res *result.Results) error {
	if o.history == "" {
		return nil
	}
	entries := history.FromResults(res, nil, dir)
	if err := storeEntries(cmd.Context(), o.history, entries); err != nil {
		return usageErr(fmt.Errorf("--history: %w", err))
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "history: %d runs stored in %s\n", len(entries), history.Redact(o.history))
	return nil
}

func storeEntries(ctx context.Context, dsn string, es []history.Entry) error {
	st, err := history.Open(ctx, dsn, false)
	if err != nil {
		return err
	}
	defer st.Close()
	return st.Add(ctx, es)
}

// gateAny is the session's gate: against a history, or (gate) a
// results directory.
func (o *sessionOptions) gateAny(cmd *cobra.Command, dir string, res *result.Results, recs []result.Record) error {
	if o.histBase != nil {
		return o.historyGate(cmd, dir, res)
	}
	return o.gate(cmd.OutOrStdout(), dir, res, recs)
}

// historyGate judges the session's runs against --baseline history:DB.
func (o *sessionOptions) historyGate(cmd *cobra.Command, dir string, res *result.Results) error {
	w := cmd.OutOrStdout()
	ctx := cmd.Context()
	st, err := history.Open(ctx, o.histBase.DSN, o.histBase.DSN != o.history)
	if err != nil {
		return usageErr(fmt.Errorf("--baseline %q: %w", o.baseline, err))
	}
	defer st.Close()
	js, err := o.histBase.Judge(ctx, st, history.FromResults(res, nil, dir), time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := history.WriteJudgements(w, *o.histBase, js); err != nil {
		return err
	}
	var regressed []string
	for _, j := range js {
		o.histJudged = o.histJudged || j.Judged()
		if j.Regressed() {
			regressed = append(regressed, j.Run)
		}
	}
	if len(regressed) > 0 {
		return withExit(exitRegression, fmt.Errorf("regression against the history %s: run %v outside the run-to-run noise of its last %d comparable runs",
			filepath.Base(history.Redact(o.histBase.DSN)), regressed, o.histBase.Last))
	}
	return nil
}
