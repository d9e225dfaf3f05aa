package bench

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/bench/workload"
)

// collector is what accumulates one run (or its direct side): every
// attempt's record goes, as it completes, to requests.jsonl, the run's
// figures (store.RunAcc), its window, the steady-state test, the send lags
// (open loop) and the reporter; the run's client figures are read from it
// once sending is over (clientFigures). keep is safe for concurrent use by
// the workers.
type collector struct {
	spec     *RunSpec
	records  *store.RecordWriter // nil: records only returned
	bounded  bool                // no record kept in memory (Runner.Bounded)
	onRecord func(result.Record) // Reporter.Record; nil: not told
	// stop stops the run at once when the results folder takes no more
	// writes (runState.stopOnWriteFailure).
	stop func()
	// Set once the measured part starts (the warm-up has neither).
	win    *windower
	steady *steadyTracker

	mu    sync.Mutex
	recs  []result.Record // nil when bounded
	acc   store.RunAcc    // the run's figures
	lags  store.Column    // open loop: start - intended, seconds (spilled with acc)
	first time.Time       // the measured part's start
	last  time.Time       // latest send
}

// keep writes rec to requests.jsonl and the run's memory. Both follow
// completion order, but records completing together may be in different
// orders in the two: the write is not under c.mu. firstOpenLoop says rec
// is an open-loop send's first attempt, sent lag after its intended time.
func (c *collector) keep(rec result.Record, firstOpenLoop bool, lag time.Duration) {
	c.win.assign(&rec)
	if c.records.Write(&rec) != nil { // a write failed: the file keeps what came before
		c.stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acc.Add(&rec, c.spec.exactTokens(), c.spec.SLO)
	c.steady.add(&rec)
	if c.bounded && (c.acc.WriteErr() != nil || c.lags.WriteErr != nil) {
		c.stop() // the samples are kept in memory, the folder takes no more
	}
	if !c.bounded {
		c.recs = append(c.recs, rec)
	}
	if firstOpenLoop {
		c.lags.Add(lag.Seconds())
		if s := rec.Start; s.After(c.last) {
			c.last = s
		}
	}
	if c.onRecord != nil {
		c.onRecord(rec)
	}
}

// keepDirect keeps a direct side's record: in requests.jsonl (a failed
// write is the path's to stop the run on) and the side's figures.
func (c *collector) keepDirect(rec result.Record) {
	_ = c.records.Write(&rec)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acc.Add(&rec, c.spec.exactTokens(), c.spec.SLO)
	if !c.bounded {
		c.recs = append(c.recs, rec)
	}
}

// spill sends a bounded run's samples, send lags and, where the answers
// carry them (ollama-chat), the engine's timings to temporary files in
// dir, saying in run's warnings what stays in memory.
func (c *collector) spill(dir string, run *result.Run) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.acc.Tally.Spill(dir); err != nil {
		run.Warnings = append(run.Warnings, err.Error())
		return
	}
	if err := c.lags.Spill(dir); err != nil {
		run.Warnings = append(run.Warnings, fmt.Sprintf("send lags: %v (kept in memory)", err))
		return
	}
	if c.spec.Request.Endpoint == EndpointOllamaChat {
		if err := c.acc.Engine.Spill(dir); err != nil {
			run.Warnings = append(run.Warnings, err.Error())
		}
	}
}

// close removes a bounded run's spilled files.
func (c *collector) close() {
	c.acc.Engine.Close()
	c.lags.Close()
	c.acc.Tally.Close()
}

// writeErr is the first error writing the spilled samples or send lags.
func (c *collector) writeErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.acc.WriteErr(); err != nil {
		return err
	}
	return c.lags.WriteErr
}

// rateStats says how well an open-loop run kept its schedule: the achieved
// send rate over the send phase and the sends that started more than 1 ms
// after their intended time.
func (c *collector) rateStats(target float64) *result.RateStats {
	return store.RateStatsOf(&c.lags, c.first, c.last, target)
}

// clientFigures fills the run's client side once in-flight requests are
// done (no record is kept any more): counts, summaries, throughput,
// goodput, the schedule kept (open loop), and the warnings about them. It
// returns the run's commonest error text (store.Failures.Commonest).
func clientFigures(run *result.Run, st *runState) (commonest string) {
	spec, c := st.spec, st.coll
	acc := &c.acc
	run.Retries = int(st.retries.Load())
	acc.Fill(run, spec.SLO)
	run.Steady, run.Saturation = c.steady.finish()
	if s := run.Saturation; s != nil && s.StoppedAtS > 0 {
		run.Warnings = append(run.Warnings, fmt.Sprintf("saturated: the wait for a first token grew without bound (slope test, t = %.1f, the last quarter's wait %.1fx the first's): sending stopped early (runs[].saturation)",
			s.T, s.WaitLastS/max(s.WaitFirstS, 1e-9)))
	}
	if m := spec.Workload.Mode; m == workload.ModeRate || m == workload.ModeTrace {
		run.Rate = c.rateStats(scheduleRate(spec, run))
		if w := store.LateWarning(run.Rate, &run.Workload); w != "" {
			run.Warnings = append(run.Warnings, w)
		}
	}
	if err := errors.Join(acc.Tally.SpillErr(), c.lags.Err); err != nil {
		run.Warnings = append(run.Warnings, fmt.Sprintf("figures missing: %v", err))
	}
	run.Warnings = append(run.Warnings, sourceWarnings(st)...)
	if spec.Request.ExactLength {
		if w := acc.Exact.Warning(spec.Request.MaxTokens); w != "" {
			run.Warnings = append(run.Warnings, w)
		}
	}
	return acc.Fails.Commonest()
}

// scheduleRate is the send rate an open-loop run (this shard's part of it)
// was asked to keep: --rate, or a trace's over its span.
func scheduleRate(spec *RunSpec, run *result.Run) float64 {
	target := spec.Workload.Rate
	if spec.Workload.Mode == workload.ModeTrace && run.Workload.Trace != nil && run.Workload.Trace.SpanS > 0 {
		target = float64(run.Workload.Trace.Entries-1) / run.Workload.Trace.SpanS
	}
	if spec.Shard.sharded() { // this shard's part of the schedule
		target /= float64(spec.Shard.Count)
	}
	return target
}

// sourceWarnings says what a source changed or could not send.
func sourceWarnings(st *runState) []string {
	var ws []string
	if n := st.clipped.Load(); n > 0 {
		ws = append(ws, fmt.Sprintf("%d requests' drawn prompt or output lengths were clipped to the server's max_model_len %d", n, st.spec.Request.MaxModelLen))
	}
	if n := st.cut.Load(); n > 0 {
		ws = append(ws, fmt.Sprintf("%d sessions stopped at a failed turn (no answer to continue from)", n))
	}
	return ws
}
