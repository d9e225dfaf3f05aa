package store

import (
	"fmt"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// EngineAcc gathers the engine's per-request timings (Record.Engine) of a
// run's successful requests as five columns: 8 bytes per request each in
// memory, or, spilled for a bounded run (Spill), on disk like the client's
// samples (Tally), so that an Ollama run's memory does not grow with its
// length either.
type EngineAcc struct {
	ttft, e2e, queue, prefill, decode Column
}

func (a *EngineAcc) columns() columns {
	return columns{&a.ttft, &a.e2e, &a.queue, &a.prefill, &a.decode}
}

// Spill sends a's timings to files in dir ("": the system's temporary
// directory) as they come; Close releases them. a must be empty. On
// failure a keeps them in memory and the error says why.
func (a *EngineAcc) Spill(dir string) error {
	if err := a.columns().spill(dir); err != nil {
		return fmt.Errorf("engine timings: %w (kept in memory)", err)
	}
	return nil
}

// Close closes (and, where they kept a name, removes) a's sample files.
func (a *EngineAcc) Close() { a.columns().close() }

// SpillErr is the first error writing or reading back spilled timings.
func (a *EngineAcc) SpillErr() error { return a.columns().err() }

// WriteErr is the first error writing spilled timings (see Tally.WriteErr).
func (a *EngineAcc) WriteErr() error { return a.columns().writeErr() }

func (a *EngineAcc) Add(rec *result.Record) {
	e := rec.Engine
	if e == nil || rec.Error != "" {
		return
	}
	a.ttft.Add(e.TTFTS())
	a.e2e.Add(e.TotalS)
	a.queue.Add(e.QueueS())
	a.prefill.Add(e.PromptEvalS)
	a.decode.Add(e.EvalS)
}

// exactHist is a Hist of a column's samples: mean and quantiles are the
// samples' own (the _est names are kept for the shape /metrics fills).
func exactHist(c *Column, sel *stats.Selector) *result.Hist {
	s := c.Summary(sel)
	if s == nil {
		return nil
	}
	return &result.Hist{Mean: s.Mean, Count: float64(s.N), P50Est: s.Median, P90Est: s.P90, P99Est: s.P99, Exact: true}
}

// Fill sets run.Engine from the per-request timings (source "ollama"):
// TTFT = load + prompt eval, E2E = total, prefill = prompt eval, decode =
// eval, queue = the rest of total. The reconciliation counts the requests
// that came with timings against those that succeeded (rec, from
// reconciliation).
func (a *EngineAcc) Fill(run *result.Run, rec *result.Reconciliation) {
	n := a.e2e.N
	rec.EngineCount = float64(n)
	run.Engine = result.EngineStats{Reconciliation: rec, Source: &result.EngineSource{Kind: result.SourceOllama}}
	if n < run.OK {
		rec.Note = fmt.Sprintf("%d of %d successful requests came without the engine's timings", run.OK-n, run.OK)
	}
	if n == 0 {
		run.Warnings = append(run.Warnings, "engine figures absent: no answer carried Ollama's timings")
		return
	}
	sel := stats.Selector{Limit: selectLimit}
	run.Engine.TTFTS, run.Engine.E2ES, run.Engine.QueueS = exactHist(&a.ttft, &sel), exactHist(&a.e2e, &sel), exactHist(&a.queue, &sel)
	run.Engine.PrefillS, run.Engine.DecodeS = exactHist(&a.prefill, &sel), exactHist(&a.decode, &sel)
	if err := a.SpillErr(); err != nil {
		run.Warnings = append(run.Warnings, fmt.Sprintf("engine figures missing: %v", err))
	}
}
