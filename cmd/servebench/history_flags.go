package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/bench/history"
	"github.com/servebench/servebench/bench/result"
)

// historyFlags are run's, table's and sweep's --label and --history.
type historyFlags struct {
	labelArgs []string
	labels    map[string]string // parsed from labelArgs by sessionOptions.load
	history   string
	// histBase is --baseline history:DB, taken by loadHistoryBaseline;
	// histJudged says the gate found enough history to judge a run.
	histBase   *history.Baseline
	histJudged bool
}

func (h *historyFlags) add(fs *pflag.FlagSet) {
	fs.StringArrayVar(&h.labelArgs, "label", nil, "KEY=VALUE recorded with the results (results.json, report, history), e.g. commit=abc123 or flavour=nightly (repeatable)")
	fs.StringVar(&h.history, "history", "", "after the runs, store each run's summary, statistics and metadata in this history: an SQLite file (created) or a postgres:// URL")
}

// parseLabels reads KEY=VALUE pairs, refusing an empty key or a key given
// twice; nil when there are none.
func parseLabels(args []string, flag string) (map[string]string, error) {
	if len(args) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: expected KEY=VALUE", flag, a)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("%s %q: key %q given twice", flag, a, k)
		}
		m[k] = v
	}
	return m, nil
}

// build is the commit, branch and CI job the run belongs to, from the
// CI's environment or the working directory's git.
func (h *historyFlags) build(ctx context.Context) *result.Build {
	wd, _ := os.Getwd()
	return history.DetectBuild(ctx, os.Getenv, wd)
}

// historyBaseline parses --baseline history:DB[?...], refused with
// --repeats.
func (o *sessionOptions) historyBaseline() (history.Baseline, error) {
	b, err := history.ParseBaseline(o.baseline)
	if err != nil {
		return b, fmt.Errorf("--baseline %q: %w", o.baseline, err)
	}
	if o.repeats > 1 {
		return b, fmt.Errorf("--baseline %q with --repeats: the history gate judges one run against the history; store repeats with --history and judge them apart", o.baseline)
	}
	return b, nil
}

// loadHistoryBaseline takes --baseline history:DB[?...] and, unless
// validating, opens the history so that a wrong path or URL fails before
// the run. A missing SQLite file is refused unless --history names it
// too: a nightly's first run starts its history. --max-regression and
// --limits-from (o.thresholds, loaded) become floors a change must pass
// too (compare's defaults do not: the history's noise is the gate).
func (o *sessionOptions) loadHistoryBaseline(fs *pflag.FlagSet) error {
	b, err := o.historyBaseline()
	if err != nil {
		return err
	}
	if !validating(fs) {
		st, err := history.Open(context.Background(), b.DSN, b.DSN != o.history)
		if err != nil {
			return fmt.Errorf("--baseline %q: %w", o.baseline, err)
		}
		st.Close()
	}
	for _, th := range o.thresholds { // --max-regression, --limits-from: floors
		if !th.Off {
			if b.Floors == nil {
				b.Floors = map[string]history.Floor{}
			}
			b.Floors[th.Key()] = history.Floor{Rel: th.Rel, Abs: th.Abs}
		}
	}
	o.histBase = &b
	return nil
}
