package store

import (
	"slices"

	"github.com/servebench/servebench/bench/result"
)

// AdapterAcc tallies a run's measured requests per LoRA adapter
// (Record.LoRA), for Run.Adapters. Its samples stay in memory, one Tally
// per adapter (a mix names a few adapters; Spill does not reach them).
type AdapterAcc struct {
	by  map[string]*Tally
	any bool // some request went to an adapter
}

// Add counts r under its adapter ("" : the base model).
func (a *AdapterAcc) Add(r *result.Record) {
	if r.Warmup {
		return
	}
	if a.by == nil {
		a.by = map[string]*Tally{}
	}
	t := a.by[r.LoRA]
	if t == nil {
		t = &Tally{}
		a.by[r.LoRA] = t
	}
	t.Add(r)
	a.any = a.any || r.LoRA != ""
}

// Stats are the per-adapter figures, by name (the base model first), or
// nil when no request went to an adapter.
func (a *AdapterAcc) Stats() []result.AdapterStats {
	if !a.any {
		return nil
	}
	names := make([]string, 0, len(a.by))
	for n := range a.by {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]result.AdapterStats, 0, len(names))
	for _, n := range names {
		t := a.by[n]
		out = append(out, result.AdapterStats{Name: n, Requests: t.Requests, OK: t.OK, Client: t.Client()})
	}
	return out
}
