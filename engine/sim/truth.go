package sim

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// RequestRecord is the engine's own account of one finished request, for
// checking a harness's figures against ground truth rather than against
// /metrics alone. Times are on the engine clock, in seconds since the
// engine was created (after --speedup, like every time the engine
// reports); a stage the request never reached is null.
type RequestRecord struct {
	ID           string   `json:"id"`
	Index        int      `json:"index"`         // the choice it answered (n > 1)
	Arrival      float64  `json:"arrival_s"`     // reached the API server
	Queued       float64  `json:"queued_s"`      // joined the engine's waiting queue
	Scheduled    *float64 `json:"scheduled_s"`   // first scheduled: its prefill started
	FirstToken   *float64 `json:"first_token_s"` // first output token
	Finished     float64  `json:"finished_s"`
	PromptTokens int      `json:"prompt_tokens"`
	CachedTokens int      `json:"cached_tokens"` // prompt tokens found in the prefix cache when first scheduled
	OutputTokens int      `json:"output_tokens"`
	// ReasoningTokens: of OutputTokens, the thinking (--reasoning-parser).
	ReasoningTokens int    `json:"reasoning_tokens"`
	Preemptions     int    `json:"preemptions"`
	FinishReason    string `json:"finish_reason"` // stop, length, abort or error
}

// maxRecords bounds the records kept: the oldest are dropped beyond it.
const maxRecords = 100_000

// truth keeps the records while Options.DebugRequests is on.
type truth struct {
	mu   sync.Mutex
	recs []RequestRecord
}

func (t *truth) add(r RequestRecord) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.recs) >= 2*maxRecords {
		t.recs = append(t.recs[:0], t.recs[len(t.recs)-maxRecords:]...)
	}
	t.recs = append(t.recs, r)
}

// Requests returns the records of the requests finished so far, in the
// order they finished (the latest 100,000), or nil unless
// Options.DebugRequests is on. GET /debug/requests serves the same.
func (e *Engine) Requests() []RequestRecord {
	if !e.opts.DebugRequests {
		return nil
	}
	e.truth.mu.Lock()
	defer e.truth.mu.Unlock()
	recs := e.truth.recs
	if len(recs) > maxRecords {
		recs = recs[len(recs)-maxRecords:]
	}
	return append([]RequestRecord{}, recs...)
}

// record keeps r's record, finished at now (scheduler goroutine).
func (e *Engine) record(r *request, now int64) {
	sec := func(ns int64) float64 { return float64(ns) / 1e9 }
	at := func(ns int64) *float64 {
		if ns == 0 {
			return nil
		}
		v := sec(ns)
		return &v
	}
	e.truth.add(RequestRecord{ID: r.id, Index: r.index, Arrival: sec(r.arrival), Queued: sec(r.queued),
		Scheduled: at(r.scheduledAt), FirstToken: at(r.firstAt), Finished: sec(now),
		PromptTokens: r.prompt, CachedTokens: max(r.cached, 0), OutputTokens: r.output,
		ReasoningTokens: r.thinking.reasoningTokens(r.output),
		Preemptions:     r.preemptions, FinishReason: r.reason})
}

func (e *Engine) handleDebugRequests(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": e.Requests()})
}

// statsEvery is vLLM's VLLM_LOG_STATS_INTERVAL default: the stats line's
// period unless Options.LogStatsInterval says otherwise.
const statsEvery = 10 * time.Second

// loopStats is what the engine loop publishes for the stats log line.
type loopStats struct {
	promptTokens, genTokens atomic.Int64
	running, waiting        atomic.Int64
	usedBlocks              atomic.Int64
}

// logStats prints vLLM V1's periodic stats line (LoggingStatLogger.log,
// vllm/v1/metrics/loggers.py) every LogStatsInterval until ctx is done.
// Throughputs are per second of wall time, after --speedup, like every
// time the engine reports. An idle engine (no tokens this period or the
// last) prints nothing: vLLM logs that line at DEBUG.
func (e *Engine) logStats(ctx context.Context) {
	every := e.opts.LogStatsInterval
	if every <= 0 {
		every = statsEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	s := e.sched
	last := time.Now()
	var lastPrompt, lastGen int64
	var lastPT, lastGT float64
	var lastSpec specTotals
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			el := now.Sub(last).Seconds()
			p, g := s.stats.promptTokens.Load(), s.stats.genTokens.Load()
			pt, gt := float64(p-lastPrompt)/el, float64(g-lastGen)/el
			if pt != 0 || gt != 0 || lastPT != 0 || lastGT != 0 {
				e.logf(apiPrefix, "loggers.py", 127, "Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%",
					pt, gt, s.stats.running.Load(), s.stats.waiting.Load(),
					100*float64(s.stats.usedBlocks.Load())/float64(len(s.pool.blocks)), 100*s.cacheWin.rate())
			}
			e.logSpec(&lastSpec, el)
			last, lastPrompt, lastGen, lastPT, lastGT = now, p, g, pt, gt
		}
	}
}
