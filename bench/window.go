package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/scrape/promql"
)

// windower splits one run into --interval windows (issue 13). Every
// measured record is assigned, as it is kept, to the window open at that
// moment and added to that window's tally (spilled to files, as the run's,
// in a bounded run: a window's memory does not grow with --interval times
// the rate either); at each boundary a goroutine
// closes the window: its client figures from the tally, its engine deltas
// from a /metrics scrape against the previous boundary's, and the run so
// far goes to onWindow (the session's checkpoint and progress line). The last window closes with the run's after-run scrape, so the
// windows' engine deltas add up to the run's. With Prometheus another
// goroutine (promLoop) reads each closed window's engine deltas once
// Prometheus has scraped past its end, and reports the run again, so a
// checkpoint carries them about a scrape interval after the boundary.
// assign is safe for concurrent use with both goroutines.
type windower struct {
	windowing
	duration time.Duration // --duration; 0: none
	start    time.Time
	partial  result.Run // the run's facts known at its start

	mu      sync.Mutex
	index   int // the open window, 1-based
	cur     store.Tally
	from    time.Time       // the open window's start
	windows []result.Window // closed
	cuts    []time.Time     // the boundaries closing windows[:len(cuts)]

	reportMu sync.Mutex // onWindow is called by one goroutine at a time

	// With Prometheus: the windows' reader, owned by promLoop until it
	// has stopped, and the windows it read, in order (under mu).
	prom     *promql.Windows
	promRead []*promql.Window
	promKick chan struct{} // a window closed
	promStop context.CancelFunc
	promDone chan struct{}

	// Owned by the boundary goroutine, then by finish.
	prev *scrape.Snapshot // the last boundary's scrape; nil: no engine windows
	// Since the run's start (or the last reset seen): the engine's
	// finished-request count and the client's successes, which it cannot
	// fall below unless its counters went back.
	engineDone float64
	clientOK   int
	spillErr   error // the first window whose samples stayed in memory, and why
	quit       chan struct{}
	done       chan struct{}
}

// windowing is what a windower takes from the run's settings.
type windowing struct {
	interval time.Duration // 0: one window-less run; only the start is reported
	// metrics, when a source scrapes /metrics (scrapeFrom), is scraped at
	// each boundary.
	metrics *Metrics
	// bounded spills each window's samples to spillDir, as the run's.
	bounded  bool
	spillDir string
	onWindow func(partial *result.Run) // nil: not reported
}

// newWindower opens the first window at start; the run's engine source
// then wires in its engine figures per window (engineSource.start:
// scrapeFrom or readProm) before begin starts the windows.
func newWindower(run *result.Run, start time.Time, wg windowing) *windower {
	w := &windower{windowing: wg, start: start, partial: *run, index: 1, from: start,
		duration: time.Duration(run.Workload.DurationS * float64(time.Second)),
		quit:     make(chan struct{}), done: make(chan struct{})}
	if w.interval > 0 {
		w.cur = w.newTally(1)
	}
	return w
}

// scrapeFrom gives each window the engine's deltas between /metrics
// scrapes at its boundaries (metrics), the first against base, the
// run's before-scrape (nil: no engine windows). Call it before begin.
func (w *windower) scrapeFrom(m *Metrics, base *scrape.Snapshot) {
	w.metrics, w.prev = m, base
}

// readProm reads each closed window's engine deltas from Prometheus (ws)
// while the run goes on (promLoop), with an interval; the run's end reads
// the rest (promWindows). Call it before begin.
func (w *windower) readProm(ws func() *promql.Windows) {
	if w.interval <= 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.prom, w.promStop = ws(), cancel
	w.promKick, w.promDone = make(chan struct{}, 1), make(chan struct{})
	go w.promLoop(ctx)
}

// begin reports the run's start to onWindow and, with an interval, starts
// the boundary goroutine.
func (w *windower) begin() {
	w.report()
	if w.interval <= 0 {
		close(w.done)
		return
	}
	go w.loop()
}

// loop closes a window at every boundary start + k*interval until stopped.
// A boundary at or past --duration is not one: the last window takes the
// requests still in flight when sending stopped, rather than leaving them
// a sliver of a window of their own (which --drift would take for the
// run's last state).
func (w *windower) loop() {
	defer close(w.done)
	t := time.NewTimer(w.interval)
	defer t.Stop()
	for k := 2; w.duration <= 0 || time.Duration(k-1)*w.interval < w.duration; k++ {
		select {
		case <-w.quit:
			return
		case <-t.C:
		}
		w.close(time.Now(), nil, true)
		t.Reset(time.Until(w.start.Add(time.Duration(k) * w.interval)))
	}
}

// assign puts rec in the open window (rec.Window) and counts it there.
func (w *windower) assign(rec *result.Record) {
	if w == nil || w.interval <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if rec.Warmup {
		return
	}
	rec.Window = w.index
	w.cur.Add(rec)
}

// close ends the open window at end: its client figures, and its engine
// deltas from snap (nil: scrape now). open says whether a next window
// starts.
func (w *windower) close(end time.Time, snap *scrape.Snapshot, open bool) {
	var next store.Tally
	if open {
		next = w.newTally(w.index + 1)
	}
	w.mu.Lock()
	t, idx, from := w.cur, w.index, w.from
	w.cur = next
	if open {
		w.index++
		w.from = end
	}
	w.mu.Unlock()

	win := result.Window{Index: idx, StartS: from.Sub(w.start).Seconds(), EndS: end.Sub(w.start).Seconds()}
	store.SetWindowClient(&win, &t)
	if err := t.SpillErr(); err != nil && w.spillErr == nil {
		w.spillErr = fmt.Errorf("window %d: figures missing: %w", idx, err)
	}
	t.Close()
	if w.prev != nil {
		if snap == nil {
			if s := w.metrics.snapshot(context.Background()); s.err == nil {
				snap = s.snap
			}
		}
		if snap != nil {
			win.Engine = windowEngine(w.metrics, w.prev, snap)
			w.prev = snap
		}
	}
	w.reconcile(&win)
	w.mu.Lock()
	w.windows = append(w.windows, win)
	if open {
		w.cuts = append(w.cuts, end)
	}
	w.mu.Unlock()
	if open {
		w.report()
		if w.prom != nil {
			select {
			case w.promKick <- struct{}{}:
			default: // promLoop has a kick pending: it reads every window closed by then
			}
		}
	}
}

// promLoop reads the engine deltas of each window closed, in order, from
// Prometheus (promql.Windows.Next: after a scrape newer than the window's
// end, bounded by --prometheus-wait) until stopped, and reports the run
// with them. A failed read is tried again at the next boundary; what is
// left when the run ends, promWindows reads.
func (w *windower) promLoop(ctx context.Context) {
	defer close(w.promDone)
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.promKick:
		}
		for {
			w.mu.Lock()
			i := w.prom.Read()
			if i >= len(w.cuts) {
				w.mu.Unlock()
				break
			}
			cut := w.cuts[i]
			w.mu.Unlock()
			pw, err := w.prom.Next(ctx, cut)
			if err != nil {
				break
			}
			w.mu.Lock()
			w.promRead = append(w.promRead, pw)
			if pw.Total != nil {
				w.windows[i].Engine = promWindowEngine(pw)
			}
			w.mu.Unlock()
			w.report()
		}
	}
}

// newTally is an empty tally for window idx: spilled in a bounded run (on
// failure kept in memory, and the run warns).
func (w *windower) newTally(idx int) store.Tally {
	var t store.Tally
	if !w.bounded {
		return t
	}
	if err := t.Spill(w.spillDir); err != nil && w.spillErr == nil {
		w.spillErr = fmt.Errorf("window %d: %w", idx, err)
	}
	return t
}

// report hands the run so far (the closed windows, their counts) to onWindow.
func (w *windower) report() {
	if w.onWindow == nil {
		return
	}
	w.reportMu.Lock()
	defer w.reportMu.Unlock()
	p := w.partial
	w.mu.Lock()
	p.Windows = append([]result.Window(nil), w.windows...)
	w.mu.Unlock()
	p.Errors = map[string]int{}
	for _, win := range p.Windows {
		p.Requests += win.Requests
		p.OK += win.OK
		for k, n := range win.Errors {
			p.Errors[k] += n
		}
	}
	if n := len(p.Windows); n > 0 {
		p.DurationS = p.Windows[n-1].EndS
	}
	p.Incomplete = true
	w.onWindow(&p)
}

// stop ends the boundary goroutine (no window closes after it returns)
// and promLoop (a read in progress is abandoned: the run's end reads it).
func (w *windower) stop() {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	<-w.done
	if w.prom != nil {
		w.promStop()
		<-w.promDone
	}
}

// finish closes the last window at the run's end (durationS after its
// start) with the run's after-run scrape and returns every window; nil
// without --interval.
func (w *windower) finish(durationS float64, after *scrape.Snapshot) []result.Window {
	w.stop()
	if w.interval <= 0 {
		return nil
	}
	if after == nil {
		w.prev = nil // no after-run scrape: the last window has no engine delta
	}
	w.close(w.start.Add(time.Duration(durationS*float64(time.Second))), after, false)
	return w.windows
}

// reconcile marks a counter reset that scrape.Diff cannot see: a server
// restarted between two boundaries whose counters climbed past their old
// values before the next scrape. The engine then has counted fewer
// finished requests since the run started than the client saw succeed.
func (w *windower) reconcile(win *result.Window) {
	w.clientOK += win.OK
	e := win.Engine
	if e == nil || e.Requests == nil {
		return
	}
	if !e.CounterReset {
		w.engineDone += *e.Requests
		if w.engineDone >= float64(w.clientOK) {
			return
		}
		e.CounterReset = true
		e.Warnings = append(e.Warnings, fmt.Sprintf("the engine counted %.0f finished requests since the run started, the client saw %d succeed: "+
			"its counters went back (a restart) and climbed past their old values; this window's deltas undercount", w.engineDone, w.clientOK))
	}
	w.engineDone = float64(w.clientOK) // count anew from the reset
}

// windowEngine is the engine's account of the window between two scrapes.
// When a counter went back (a server restart) the deltas are counted from
// zero in the later scrape, i.e. since the restart, and marked.
func windowEngine(m *Metrics, before, after *scrape.Snapshot) *result.WindowEngine {
	d := scrape.Diff(before, after, m.Dialect, m.Filter)
	we := &result.WindowEngine{}
	if ws := d.Warnings(); len(ws) > 0 {
		we.CounterReset, we.Warnings = true, ws
		d = scrape.Diff(nil, after, m.Dialect, m.Filter)
	}
	we.EngineStats = store.EngineSummary(d)
	counter := func(q scrape.Quantity) *float64 {
		if v, ok := d.Counter(q); ok {
			return &v
		}
		return nil
	}
	gauge := func(q scrape.Quantity) *float64 {
		if v, ok := after.Gauge(m.Dialect, m.Filter, q); ok {
			return &v
		}
		return nil
	}
	we.Requests, we.Preemptions = counter(scrape.EngineRequests), counter(scrape.EnginePreemptions)
	we.KVUsage, we.Running, we.Waiting = gauge(scrape.EngineKVUsage), gauge(scrape.EngineRunning), gauge(scrape.EngineWaiting)
	return we
}

// DefaultInterval is --interval when not given: one minute when a run is
// longer than ten (a soak), else none.
func DefaultInterval(runs []RunSpec) time.Duration {
	for i := range runs {
		if runs[i].Workload.Duration > 10*time.Minute {
			return time.Minute
		}
	}
	return 0
}
