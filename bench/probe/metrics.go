package probe

import (
	"context"
	"errors"
	"time"

	"github.com/servebench/servebench/scrape"
)

// watcher reads the engine's /metrics relative to a first snapshot.
type watcher struct {
	e       *env
	dialect *scrape.Dialect
	filter  scrape.Filter
	before  *scrape.Snapshot
}

// reading is what /metrics said at one moment, relative to the watcher's
// first snapshot.
type reading struct {
	at          time.Time
	delta       *scrape.Delta
	gen         float64 // generated tokens since the first snapshot
	genOK       bool
	finished    float64 // finished requests since the first snapshot
	finishedOK  bool
	running     float64 // requests running now
	runningOK   bool
	resetWarned []string
}

// watch takes the first snapshot and detects the server's dialect. The
// error says why /metrics cannot be used; probes then report inconclusive
// (or fall back) rather than fail.
func (e *env) watch(ctx context.Context) (*watcher, error) {
	w := &watcher{e: e}
	if e.o.Model != "" {
		w.filter.Model = e.o.Model // the user named the model: ignore other models' series
	}
	s, err := w.fetch(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := scrape.Detect(s)
	if !ok {
		return nil, errors.New("/metrics has no metric family of a known server (vLLM, SGLang, TGI, llama.cpp)")
	}
	w.dialect, w.before = d, s
	return w, nil
}

func (w *watcher) fetch(ctx context.Context) (*scrape.Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return scrape.FetchAll(ctx, w.e.o.HTTP, w.e.o.MetricsURLs)
}

// runningBefore is the running gauge in the first snapshot.
func (w *watcher) runningBefore() (float64, bool) {
	return w.before.Gauge(w.dialect, w.filter, scrape.EngineRunning)
}

// read takes a snapshot now and compares it with the first.
func (w *watcher) read(ctx context.Context) (reading, error) {
	s, err := w.fetch(ctx)
	if err != nil {
		return reading{}, err
	}
	d := scrape.Diff(w.before, s, w.dialect, w.filter)
	r := reading{at: s.At, delta: d, resetWarned: d.Warnings()}
	r.gen, r.genOK = d.Counter(scrape.EngineGenerationTokens)
	r.finished, r.finishedOK = d.Counter(scrape.EngineRequests)
	r.running, r.runningOK = s.Gauge(w.dialect, w.filter, scrape.EngineRunning)
	return r, nil
}
