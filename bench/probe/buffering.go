package probe

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/scrape"
)

// defaultBufferingTokens is the buffering probe's output length: enough
// gaps to see a pattern, short on any server.
const defaultBufferingTokens = 128

// Burst thresholds: bench/result's, so the probe and a run's stutter
// group arrivals alike. Events less than JoinFraction of the reference
// inter-token latency apart arrived "together"; a stream is buffered when
// at least BufferedShare of its tokens arrived in groups of BurstTokens or
// more. One token per event at the engine's pace gives groups of 1 (2 or 3
// now and then from scheduling noise); a proxy that flushes every N tokens
// gives groups of N.
const (
	JoinFraction  = result.JoinFraction
	BurstTokens   = result.BurstTokens
	BufferedShare = result.BurstyShare
)

// Bursts is how a stream's tokens were grouped on arrival.
type Bursts struct {
	Ref           time.Duration // reference inter-token latency the grouping used
	Events        int
	Tokens        int
	Groups        int     // arrival groups (result.Events.Arrivals against Ref)
	MeanGroup     float64 // tokens per group
	MaxGroup      int
	InBursts      int           // tokens in groups of BurstTokens or more
	MedianGap     time.Duration // between consecutive events
	MaxGap        time.Duration
	ClientPace    time.Duration // (last - first event) / (tokens - 1)
	Buffered      bool
	BurstInterval time.Duration // mean time between the starts of groups of BurstTokens or more
}

// AnalyzeBursts groups events by arrival against ref (the engine's
// inter-token latency; 0: the client's own average pace) and decides
// whether the stream was buffered. It needs at least two events.
func AnalyzeBursts(events []client.Event, ref time.Duration) Bursts {
	b := Bursts{Events: len(events)}
	evs := make(result.Events, len(events))
	for i, ev := range events {
		b.Tokens += max(ev.Tokens, 1)
		evs[i] = [2]float64{ev.At.Seconds(), float64(ev.Tokens)}
	}
	if len(events) < 2 {
		return b
	}
	span := events[len(events)-1].At - events[0].At
	if b.Tokens > 1 {
		b.ClientPace = span / time.Duration(b.Tokens-1)
	}
	if ref <= 0 {
		ref = b.ClientPace
	}
	b.Ref = ref
	var burstStarts []float64
	evs.Arrivals(ref.Seconds(), func(firstS, _ float64, tokens int) {
		b.Groups++
		b.MaxGroup = max(b.MaxGroup, tokens)
		if tokens >= BurstTokens {
			b.InBursts += tokens
			burstStarts = append(burstStarts, firstS)
		}
	})
	gaps := make([]float64, 0, len(events)-1)
	for i := 1; i < len(events); i++ {
		gap := events[i].At - events[i-1].At
		gaps = append(gaps, float64(gap))
		b.MaxGap = max(b.MaxGap, gap)
	}
	b.MeanGroup = float64(b.Tokens) / float64(b.Groups)
	if s := stats.Summarize(gaps); s != nil {
		b.MedianGap = time.Duration(s.Median)
	}
	if n := len(burstStarts); n > 1 {
		b.BurstInterval = time.Duration((burstStarts[n-1] - burstStarts[0]) / float64(n-1) * 1e9)
	}
	b.Buffered = float64(b.InBursts) >= BufferedShare*float64(b.Tokens)
	return b
}

// bufferingAttempts bounds the requests the buffering probe sends. A stream
// is called buffered only when no attempt streams token by token: a proxy
// buffers every stream alike, while a client or machine that stalls once
// (CPU contention) makes one stream look bursty, rarely several in a row.
const bufferingAttempts = 3

// buffering streams exact-length requests and compares their arrival
// pattern with the engine's inter-token latency from /metrics.
//
// Across attempts: any attempt that streams token by token passes; else a
// bursty attempt whose long gaps the probe's own stalls do not explain
// fails; else the last attempt (inconclusive) is the answer.
func (e *env) buffering(ctx context.Context) *Result {
	var r, failed *Result
	for i := 1; i <= bufferingAttempts; i++ {
		r = e.bufferingOnce(ctx)
		r.add("attempts", i, fmt.Sprintf("%d (stops at the first that streams token by token)", i))
		if r.Verdict == Pass {
			return r
		}
		if r.Verdict == Fail && failed == nil {
			failed = r
		}
	}
	if failed != nil {
		failed.add("attempts_made", bufferingAttempts, fmt.Sprintf("%d, none streamed token by token; evidence from the first that showed bursts", bufferingAttempts))
		return failed
	}
	return r
}

// bufferingOnce measures one streaming request.
func (e *env) bufferingOnce(ctx context.Context) *Result {
	r := &Result{Probe: "buffering"}
	n := e.o.MaxTokens
	if n == 0 {
		n = defaultBufferingTokens
	}
	w, werr := e.watch(ctx)
	if werr != nil {
		r.warn("engine figures absent (%v): comparing with the client's own pace", werr)
	}
	meter := startStallMeter()
	tr := e.c.Do(ctx, e.request(probePrompt, n, true, true))
	stalls := meter.stop()
	if !tr.OK() {
		r.Verdict, r.Summary = Inconclusive, fmt.Sprintf("the streaming request failed (%s): %s", tr.Error, tr.ErrorText)
		return r
	}
	var itl, ttft time.Duration
	if w != nil {
		itl, ttft = e.engineTimes(ctx, w, r)
	}
	b := AnalyzeBursts(tr.Events, itl)
	if b.Events < 8 {
		r.Verdict, r.Summary = Inconclusive, fmt.Sprintf("only %d token events arrived: too few to judge", b.Events)
		return r
	}
	e.burstEvidence(r, &tr, b, itl, ttft)
	// The wait from the response headers to the first token counts too: a
	// stall (or a proxy) there can hold the whole answer in one burst.
	lead := append([]client.Event{{At: tr.FirstByte}}, tr.Events...)
	long, stalled := StalledGaps(lead, tr.Start, b.Ref, stalls)
	r.add("long_gaps_client_stalled", stalled, fmt.Sprintf("%d of %d gaps over %gx the reference coincide with the probe's own process stalling", stalled, long, longGap))
	switch {
	case b.Buffered && long > 0 && 2*stalled >= long:
		r.Verdict, r.Summary = Inconclusive, fmt.Sprintf("bursty, but %d of %d long gaps coincide with this probe's own process stalling (CPU contention on the client): rerun on a quiet machine", stalled, long)
	case b.Buffered:
		r.Verdict, r.Summary = Fail, fmt.Sprintf("buffered: %d of %d tokens arrived in bursts (up to %d tokens at once, gaps up to %s vs %s per token)%s",
			b.InBursts, b.Tokens, b.MaxGroup, ms(b.MaxGap), ms(b.Ref), lostWhere(&tr, ttft))
	default:
		r.Verdict, r.Summary = Pass, fmt.Sprintf("streams token by token (%.1f tokens per arrival, median gap %s vs %s per token)",
			b.MeanGroup, ms(b.MedianGap), ms(b.Ref))
	}
	return r
}

// engineTimes reads the engine's mean inter-token latency and TTFT over the
// probe request from /metrics; zero when absent.
func (e *env) engineTimes(ctx context.Context, w *watcher, r *Result) (itl, ttft time.Duration) {
	// The engine may observe the last token just after the client saw
	// [DONE]: give its counters a moment (bounded) to include it.
	var rd reading
	for i := 0; i < 20; i++ {
		var err error
		if rd, err = w.read(ctx); err != nil {
			r.warn("engine figures absent: /metrics after the request: %v", err)
			return 0, 0
		}
		if rd.finishedOK && rd.finished >= 1 {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	r.Warnings = append(r.Warnings, rd.resetWarned...)
	if h, ok := rd.delta.Hist(scrape.EngineITL); ok && h.Count > 0 {
		itl = time.Duration(h.Mean() * 1e9)
	} else {
		r.warn("the server exports no inter-token latency histogram: comparing with the client's own pace")
	}
	if h, ok := rd.delta.Hist(scrape.EngineTTFT); ok && h.Count > 0 {
		ttft = time.Duration(h.Mean() * 1e9)
	}
	if rd.finishedOK && rd.finished > 1 {
		r.warn("the engine finished %.0f requests during the probe: other traffic mixes into its figures", rd.finished)
	}
	return itl, ttft
}

func (e *env) burstEvidence(r *Result, tr *client.Trace, b Bursts, itl, ttft time.Duration) {
	if itl > 0 {
		r.add("engine_itl_mean_s", secs(itl), ms(itl)+" (engine, mean over the request)")
	}
	r.add("client_pace_s", secs(b.ClientPace), ms(b.ClientPace)+" per token (client, first to last event)")
	r.add("client_gap_median_s", secs(b.MedianGap), ms(b.MedianGap)+" between events (client, median)")
	r.add("client_gap_max_s", secs(b.MaxGap), ms(b.MaxGap))
	r.add("tokens", b.Tokens, fmt.Sprintf("%d in %d events, %d arrival groups", b.Tokens, b.Events, b.Groups))
	r.add("tokens_per_arrival_mean", round2(b.MeanGroup), fmt.Sprintf("%.2f (max %d)", b.MeanGroup, b.MaxGroup))
	r.add("tokens_in_bursts", b.InBursts, fmt.Sprintf("%d of %d in groups of >= %d", b.InBursts, b.Tokens, BurstTokens))
	if b.BurstInterval > 0 {
		r.add("burst_interval_s", secs(b.BurstInterval), ms(b.BurstInterval)+" between bursts")
	}
	if ttft > 0 {
		r.add("engine_ttft_mean_s", secs(ttft), ms(ttft)+" (engine clock)")
	}
	r.add("client_first_visible_s", secs(tr.FirstVisible), ms(tr.FirstVisible)+" (client clock)")
	r.add("client_ttfb_s", secs(tr.FirstByte), ms(tr.FirstByte)+" (client clock)")
}

// lostWhere says where the time to first visible output went, comparing
// the two clocks at the order-of-magnitude level only.
func lostWhere(tr *client.Trace, ttft time.Duration) string {
	if ttft <= 0 {
		return ""
	}
	held := tr.FirstVisible - ttft
	if held <= 0 || float64(tr.FirstVisible) < 2*float64(ttft) {
		return fmt.Sprintf("; first visible output at %s, close to the engine's TTFT %s: the time is lost after the first token", ms(tr.FirstVisible), ms(ttft))
	}
	return fmt.Sprintf("; the engine had its first token at %s (TTFT) but the client saw it at %s: ~%s held between engine and client",
		ms(ttft), ms(tr.FirstVisible), ms(held))
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// longGap is how many reference inter-token latencies make a gap "long".
const longGap = 2.0

// Span is an interval of wall time.
type Span struct{ From, To time.Time }

// StalledGaps counts the gaps between events longer than longGap*ref, and
// how many of them overlap a span in which the probe's own process did not
// run for at least half the gap (stalls from a stallMeter): those are the
// client's doing, not the server's or a proxy's.
func StalledGaps(events []client.Event, start time.Time, ref time.Duration, stalls []Span) (long, stalled int) {
	for i := 1; i < len(events); i++ {
		from, to := start.Add(events[i-1].At), start.Add(events[i].At)
		gap := to.Sub(from)
		if ref <= 0 || float64(gap) < longGap*float64(ref) {
			continue
		}
		long++
		for _, s := range stalls {
			lo, hi := maxTime(from, s.From), minTime(to, s.To)
			if hi.Sub(lo) >= gap/2 {
				stalled++
				break
			}
		}
	}
	return long, stalled
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// stallMeter notices when the probe's own process does not get to run: a
// goroutine that wakes every meterPeriod records every wake-up that came
// more than meterLate late. It keeps at most maxStalls spans.
type stallMeter struct {
	done   chan struct{}
	result chan []Span
}

const (
	meterPeriod = time.Millisecond
	meterLate   = 2 * time.Millisecond
	maxStalls   = 4096
)

func startStallMeter() *stallMeter {
	m := &stallMeter{done: make(chan struct{}), result: make(chan []Span, 1)}
	go func() {
		var spans []Span
		t := time.NewTicker(meterPeriod)
		defer t.Stop()
		prev := time.Now()
		for {
			select {
			case <-m.done:
				m.result <- spans
				return
			case <-t.C:
				now := time.Now()
				if now.Sub(prev) > meterPeriod+meterLate && len(spans) < maxStalls {
					spans = append(spans, Span{From: prev, To: now})
				}
				prev = now
			}
		}
	}()
	return m
}

// stop ends the meter and returns the stalls it saw.
func (m *stallMeter) stop() []Span {
	close(m.done)
	return <-m.result
}
