package store

import (
	"fmt"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// EngineAcc gathers the engine's per-request timings (Record.Engine) of a
// run's successful requests: five float64 per request.
type EngineAcc struct {
	ttft, e2e, queue, prefill, decode []float64
}

func (a *EngineAcc) Add(rec *result.Record) {
	e := rec.Engine
	if e == nil || rec.Error != "" {
		return
	}
	a.ttft = append(a.ttft, e.TTFTS())
	a.e2e = append(a.e2e, e.TotalS)
	a.queue = append(a.queue, e.QueueS())
	a.prefill = append(a.prefill, e.PromptEvalS)
	a.decode = append(a.decode, e.EvalS)
}

// exactHist is a Hist of samples: mean and quantiles are the samples' own
// (the _est names are kept for the shape /metrics fills).
func exactHist(xs []float64) *result.Hist {
	s := stats.Summarize(xs)
	if s == nil {
		return nil
	}
	return &result.Hist{Mean: s.Mean, Count: float64(s.N), P50Est: s.Median, P90Est: s.P90, P99Est: s.P99}
}

// Fill sets run.Engine from the per-request timings (source "ollama"):
// TTFT = load + prompt eval, E2E = total, prefill = prompt eval, decode =
// eval, queue = the rest of total. The reconciliation counts the requests
// that came with timings against those that succeeded (rec, from
// reconciliation).
func (a *EngineAcc) Fill(run *result.Run, rec *result.Reconciliation) {
	rec.EngineCount = float64(len(a.e2e))
	run.Engine = result.EngineStats{Reconciliation: rec, Source: &result.EngineSource{Kind: result.SourceOllama}}
	if len(a.e2e) < run.OK {
		rec.Note = fmt.Sprintf("%d of %d successful requests came without the engine's timings", run.OK-len(a.e2e), run.OK)
	}
	if len(a.e2e) == 0 {
		run.Warnings = append(run.Warnings, "engine figures absent: no answer carried Ollama's timings")
		return
	}
	run.Engine.TTFTS, run.Engine.E2ES, run.Engine.QueueS = exactHist(a.ttft), exactHist(a.e2e), exactHist(a.queue)
	run.Engine.PrefillS, run.Engine.DecodeS = exactHist(a.prefill), exactHist(a.decode)
}
