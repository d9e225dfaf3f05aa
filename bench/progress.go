package bench

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// progress shows start-up phases and a bar per run on a terminal. A nil
// writer makes every method a no-op (--quiet, or stderr not a terminal:
// cmd decides, since only it may look at the process's files).
type progress struct {
	w io.Writer
}

func newProgress(w io.Writer) *progress { return &progress{w: w} }

func (p *progress) printf(format string, a ...any) {
	if p.w != nil {
		fmt.Fprintf(p.w, format, a...)
	}
}

// phase prints one start-up phase as it passes.
func (p *progress) phase(name string, at time.Duration) {
	p.printf("  %-22s %7.2f s\n", name, at.Seconds())
}

// runBar is the bar of one run: requests done, with live medians of the
// client's first-visible output and E2E over the latest requests. Its methods are called with the
// Runner's record lock held, so they need no lock of their own beyond mu for
// finish.
type runBar struct {
	mu       sync.Mutex
	bar      *progressbar.ProgressBar
	name     string
	n, max   int64 // requests finished, and expected (-1: duration-bounded)
	fv, e2e  []float64
	failed   int
	lastDesc time.Time
	win      string // the last --interval window's figures
}

// start returns the bar for spec (a no-op bar when quiet).
func (p *progress) start(spec RunSpec) *runBar {
	if p.w == nil {
		return nil
	}
	max := int64(spec.Workload.Requests + spec.Workload.Warmup)
	if spec.Workload.Requests == 0 {
		max = -1 // duration-bounded: a spinner
	}
	b := &runBar{name: spec.Name, max: max}
	b.bar = progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(spec.Name),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(24),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }),
	)
	return b
}

// add counts one finished request (a record) on the bar. A retried attempt
// finishes no request (the bar's max counts requests), and, as in the run's
// figures, is not a failure.
func (b *runBar) add(rec result.Record) {
	if b == nil || rec.Retried {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if rec.Error != "" {
		b.failed++
	} else if !rec.Warmup {
		b.fv = appendRecent(b.fv, rec.FirstVisibleS)
		b.e2e = appendRecent(b.e2e, rec.E2ES)
	}
	if rec.Turn > 1 {
		// The bar counts sessions (as --requests does): a later turn only
		// updates the figures.
		return
	}
	b.n++
	last := b.max > 0 && b.n == b.max
	if now := time.Now(); last || now.Sub(b.lastDesc) > 250*time.Millisecond {
		b.lastDesc = now
		b.bar.Describe(b.describe())
	}
	_ = b.bar.Add(1)
}

// barRecent is how many of the latest requests (up to twice as many) the
// bar's live medians cover: a bar redrawn every 250 ms over a day's
// samples would cost memory and CPU in proportion to the run.
const barRecent = 1000

// appendRecent appends v; past 2*barRecent values it keeps the last
// barRecent (amortised: one copy per barRecent appends).
func appendRecent(xs []float64, v float64) []float64 {
	if len(xs) >= 2*barRecent {
		xs = append(xs[:0], xs[len(xs)-barRecent:]...)
	}
	return append(xs, v)
}

func (b *runBar) describe() string {
	d := b.name
	if fv, e := stats.Summarize(b.fv), stats.Summarize(b.e2e); fv != nil && e != nil {
		d += fmt.Sprintf("  first visible p50 %.3fs  e2e p50 %.3fs", fv.Median, e.Median)
	}
	if b.failed > 0 {
		d += fmt.Sprintf("  failed %d", b.failed)
	}
	return d + b.win
}

// window shows the last closed window's figures on the bar (called at
// every --interval boundary).
func (b *runBar) window(p *result.Run) {
	if b == nil || len(p.Windows) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.win = windowLine(&p.Windows[len(p.Windows)-1])
	b.bar.Describe(b.describe())
}

// windowLine is one window's figures in a few words: throughput, E2E p50,
// errors, and the engine's queue and KV usage when scraped.
func windowLine(w *result.Window) string {
	s := fmt.Sprintf("  | window %d: %.1f req/s", w.Index, w.Throughput.RequestsPerS)
	if e := w.Client.E2ES; e != nil {
		s += fmt.Sprintf(" e2e p50 %.3fs p99 %.3fs", e.Median, e.P99)
	}
	if n := w.Requests - w.OK; n > 0 {
		s += fmt.Sprintf(" errors %d", n)
	}
	if e := w.Engine; e != nil {
		if e.QueueS != nil {
			s += fmt.Sprintf(" queue %.3fs", e.QueueS.Mean)
		}
		if e.KVUsage != nil {
			s += fmt.Sprintf(" kv %.0f%%", 100**e.KVUsage)
		}
		if e.CounterReset {
			s += " counters reset"
		}
	}
	return s
}

// finish completes the bar with the final description.
func (b *runBar) finish() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar.IsFinished() { // the last request completed it (and ended the line)
		return
	}
	b.bar.Describe(b.describe())
	_ = b.bar.Finish()
}
