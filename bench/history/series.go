package history

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/servebench/servebench/bench/stats"
)

// Series is one statistic over comparable runs (one workload on one
// server, one run name), oldest first, with the change points found in it.
type Series struct {
	Key        string // QUANTITY.STAT
	Run        string
	WorkloadFP string
	ServerFP   string
	Entries    []Entry
	Values     []float64
	Changes    []Change
}

// Change is a change point of a series: the run Before it and the first
// run After it, and the step between the segments on either side.
type Change struct {
	Index         int // of After in the series
	Before, After *Entry
	P             float64 // the permutation test's p-value
	// Step compares the segment after the change with the one before it
	// (up to the neighbouring change points): the difference of the
	// segments' means and its confidence interval (Welch's t across runs).
	Step stats.RunTest
}

// ResolveKey turns a --quantity into the key entries use: QUANTITY.STAT
// as given, or a bare QUANTITY's headline (median for client figures,
// mean for engine figures, output_tokens_per_s for throughput).
func ResolveKey(q string, es []Entry) string {
	for _, e := range es {
		if _, ok := e.Stats[q]; ok {
			return q
		}
	}
	for _, stat := range []string{"median", "mean", "output_tokens_per_s", "rate", "attainment"} {
		for _, e := range es {
			if _, ok := e.Stats[q+"."+stat]; ok {
				return q + "." + stat
			}
		}
	}
	return q
}

// Analyze splits entries into series of comparable runs that have key and
// finds each one's change points by E-divisive means (stats.EDivisive),
// the steps' intervals at level. A change point whose step is smaller than
// minStep (relative, e.g. 0.01 for 1%) is left out of Changes: over runs
// this steady a 0.2% shift is detectable yet nothing to act on, and it would
// crowd out the step that is. Series come longest first.
func Analyze(entries []Entry, key string, o stats.EDivisiveOptions, level, minStep float64) []Series {
	groups := map[string]*Series{}
	var order []string
	for _, e := range entries {
		v, ok := e.Stats[key]
		if !ok {
			continue
		}
		id := e.WorkloadFP + "/" + e.ServerFP + "/" + e.Run
		s, ok := groups[id]
		if !ok {
			s = &Series{Key: key, Run: e.Run, WorkloadFP: e.WorkloadFP, ServerFP: e.ServerFP}
			groups[id] = s
			order = append(order, id)
		}
		s.Entries, s.Values = append(s.Entries, e), append(s.Values, v)
	}
	out := make([]Series, 0, len(order))
	for _, id := range order {
		s := groups[id]
		sort.SliceStable(s.Entries, func(i, j int) bool { return s.Entries[i].StartedAt.Before(s.Entries[j].StartedAt) })
		for i := range s.Entries {
			s.Values[i] = s.Entries[i].Stats[key]
		}
		s.Changes = changes(s, stats.EDivisive(s.Values, o), level, minStep)
		out = append(out, *s)
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].Entries) > len(out[j].Entries) })
	return out
}

// changes measures each change point's step between its neighbouring
// change points and keeps those of at least minStep (a step of unknown
// size, over a zero mean, is kept).
func changes(s *Series, cps []stats.ChangePoint, level, minStep float64) []Change {
	edges := []int{0}
	for _, cp := range cps {
		edges = append(edges, cp.Index)
	}
	edges = append(edges, len(s.Values))
	var out []Change
	for i, cp := range cps {
		before, after := s.Values[edges[i]:edges[i+1]], s.Values[edges[i+1]:edges[i+2]]
		step, _ := stats.CompareRuns(before, after, level) // both sides hold at least MinSize >= 2 runs
		if math.Abs(step.Change) < minStep {
			continue
		}
		out = append(out, Change{Index: cp.Index, Before: &s.Entries[cp.Index-1], After: &s.Entries[cp.Index], P: cp.P, Step: step})
	}
	return out
}

// Name names an entry for a reader: its commit (short) or, without one,
// its start time, then its labels.
func (e *Entry) Name() string {
	var parts []string
	if c := e.Build.Commit; c != "" {
		parts = append(parts, "commit "+short(c))
	} else {
		parts = append(parts, e.StartedAt.UTC().Format("2006-01-02 15:04:05"))
	}
	if l := e.LabelText(); l != "" {
		parts = append(parts, l)
	}
	return strings.Join(parts, ", ")
}

// LabelText is the entry's labels as k=v, sorted, space-separated.
func (e *Entry) LabelText() string {
	keys := make([]string, 0, len(e.Labels))
	for k := range e.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + e.Labels[k]
	}
	return strings.Join(keys, " ")
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// String describes the change in one line.
func (c Change) String() string {
	return fmt.Sprintf("between run %d (%s) and run %d (%s): %s, change point p=%.3g (E-divisive means, permutation test)",
		c.Before.ID, c.Before.Name(), c.After.ID, c.After.Name(), c.Step, c.P)
}
