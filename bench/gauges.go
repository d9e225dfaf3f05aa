package bench

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/scrape"
)

// DefaultGaugeEvery is how often a run scrapes each of several
// --metrics-url for the replicas' KV-cache usage (Metrics.GaugeEvery).
// Once a second stays far below what a server's own stats logging costs
// (vLLM logs every 10 s) and matches the 1 s Prometheus scrape the tests
// run; Prometheus' default is 15 s.
const DefaultGaugeEvery = time.Second

// gaugeSampler reads each replica's KV-cache usage from the run's scrapes:
// the before-run snapshot, one scrape every Metrics.GaugeEvery while the
// run sends and drains, and the after-run snapshot. Over those samples it
// keeps the mean and the maximum: what the Prometheus source reads with
// avg_over_time and max_over_time over its scrapes of the run's window.
// Its goroutine owns the accumulators until stop returns.
type gaugeSampler struct {
	m      *Metrics
	dl     *scrape.Dialect // fixed at the start: m.Dialect may be set elsewhere meanwhile
	acc    []gaugeAcc      // per --metrics-url
	quit   chan struct{}
	done   chan struct{}
	stopMu sync.Once
}

// gaugeAcc is one replica's samples of one gauge.
type gaugeAcc struct {
	sum, max float64
	n        int
}

func (a *gaugeAcc) add(v float64) {
	if a.n == 0 || v > a.max {
		a.max = v
	}
	a.sum += v
	a.n++
}

// startGauges starts sampling when the run has per-replica figures
// (several --metrics-url, a known dialect, GaugeEvery > 0); nil otherwise.
// before is the run's before-run snapshot, the first sample.
func (m *Metrics) startGauges(ctx context.Context, before *scrape.Snapshot) *gaugeSampler {
	if m == nil || m.Prom != nil || len(m.URLs) < 2 || m.Dialect == nil || m.GaugeEvery <= 0 || before == nil {
		return nil
	}
	g := &gaugeSampler{m: m, dl: m.Dialect, acc: make([]gaugeAcc, len(m.URLs)), quit: make(chan struct{}), done: make(chan struct{})}
	g.sample(before)
	go g.loop(ctx)
	return g
}

func (g *gaugeSampler) loop(ctx context.Context) {
	defer close(g.done)
	// A scrape slower than the interval delays the next tick (the ticker
	// drops the ticks missed): the samples stay one at a time.
	t := time.NewTicker(g.m.GaugeEvery)
	defer t.Stop()
	for {
		select {
		case <-g.quit:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s, err := g.m.fetch(ctx); err == nil { // a missed scrape is a missing sample, as in Prometheus
			g.sample(s)
		}
	}
}

// sample adds each replica's KV-cache usage in s.
func (g *gaugeSampler) sample(s *scrape.Snapshot) {
	for i := range g.acc {
		if v, ok := s.Gauge(g.dl, scrape.Filter{Model: g.m.Filter.Model, Replica: strconv.Itoa(i)}, scrape.EngineKVUsage); ok {
			g.acc[i].add(v)
		}
	}
}

// stop ends the sampling; safe to call more than once and on nil.
func (g *gaugeSampler) stop() {
	if g == nil {
		return
	}
	g.stopMu.Do(func() { close(g.quit) })
	<-g.done
}

// fill stops the sampling, adds after (the after-run snapshot) and sets
// each replica's KV usage. reps are metricsReplicas', in URL order.
func (g *gaugeSampler) fill(reps []result.Replica, after *scrape.Snapshot) {
	if g == nil {
		return
	}
	g.stop()
	if after != nil {
		g.sample(after)
	}
	for i := range min(len(reps), len(g.acc)) {
		if a := g.acc[i]; a.n > 0 {
			reps[i].KVUsage = &result.Gauge{Mean: a.sum / float64(a.n), Max: a.max, Samples: a.n}
		}
	}
}
