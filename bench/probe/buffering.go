package probe

import (
	"context"
	"fmt"
	"math"
	"strings"
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

// bufferingAttempts bounds the requests the buffering probe sends per
// encoding. A stream is called buffered only when no attempt streams token
// by token: a proxy buffers every stream alike, while a client or machine
// that stalls once (CPU contention) makes one stream look bursty, rarely
// several in a row.
const bufferingAttempts = 3

// buffering streams exact-length requests and compares their arrival
// pattern with the engine's inter-token latency and TTFT from /metrics,
// twice: asking for gzip, as the OpenAI SDKs and browsers do (the answer
// decompressed as it arrives), then for no compression. A path that holds
// only the compressed stream is named compression; the summary suggests
// the fix for what was seen.
func (e *env) buffering(ctx context.Context) *Result {
	gz := e.bufferingWith(ctx, e.c)
	id := client.New(client.Options{BaseURL: e.o.BaseURL, APIKey: e.o.APIKey, MaxConns: 4,
		RequestTimeout: e.o.RequestTimeout, AcceptEncoding: client.EncodingIdentity})
	defer id.Close()
	plain := e.bufferingWith(ctx, id)
	r := gz.Result
	r.add("accept_encoding", client.EncodingGzip, "gzip, as the OpenAI SDKs and browsers ask (the figures above); "+
		"the answer came "+orNone(gz.encoding, "uncompressed"))
	r.add("identity_verdict", string(plain.Verdict), "asking for no compression: "+strings.ToUpper(string(plain.Verdict))+": "+plain.Summary)
	switch {
	case gz.Verdict == Fail && plain.Verdict == Pass && gz.encoding != "":
		r.Summary = "compression holds the stream: " + r.Summary + "; asked for no compression it streams token by token"
		r.fix(fixCompression)
	case gz.Verdict == Pass && plain.Verdict == Fail:
		// Real clients stream; still, a path that holds identity streams
		// holds servebench's --accept-encoding identity runs and curl's.
		r.Verdict, r.Summary = Fail, "asked for no compression the stream is held ("+plain.Summary+"); asked for gzip it streams token by token"
		r.fix(plain.fix)
	case gz.Verdict == Fail && gz.fix == "":
		r.fix(plain.fix)
	case gz.Verdict == Fail:
		r.fix(gz.fix)
	}
	return r
}

// Fixes the buffering probe suggests for what it saw.
const (
	fixBuffered = "nginx: proxy_buffering off and proxy_http_version 1.1 in the location (its defaults, HTTP/1.0 to the upstream " +
		"with buffering on, clump the stream), or have the server send the X-Accel-Buffering: no response header; " +
		"HAProxy: option http-no-delay"
	fixHeldStart = "something holds the start of the stream until enough bytes accumulate (a gateway's or proxy's buffer, " +
		"nginx's postpone_output or proxy_buffer_size): have it flush each event (nginx: proxy_buffering off, " +
		"X-Accel-Buffering: no)"
	fixCompression = "do not compress text/event-stream (nginx: leave it out of gzip_types; HAProxy: out of compression type), " +
		"or flush each chunk of it (nginx: proxy_buffering off with proxy_http_version 1.1)"
)

// fix adds the suggested fix to r (nothing when fix is "").
func (r *Result) fix(fix string) {
	if fix != "" {
		r.add("fix", fix, "")
	}
}

// encodingResult is one encoding's outcome: its result, the fix for what
// it saw, and the answer's Content-Encoding.
type encodingResult struct {
	*Result
	fix      string
	encoding string
}

// bufferingWith runs the attempts with c. Across attempts: any attempt that
// streams token by token passes; else a bursty attempt whose long gaps the
// probe's own stalls do not explain fails; else the last attempt
// (inconclusive) is the answer. One evidence line says how many attempts
// were made and which one the figures are from.
func (e *env) bufferingWith(ctx context.Context, c *client.Client) encodingResult {
	var r, failed encodingResult
	made, failedAt := 0, 0
	for i := 1; i <= bufferingAttempts; i++ {
		made = i
		r = e.bufferingOnce(ctx, c)
		if r.Verdict == Pass {
			break
		}
		if r.Verdict == Fail && failed.Result == nil {
			failed, failedAt = r, i
		}
	}
	from := made
	if r.Verdict != Pass && failed.Result != nil {
		r, from = failed, failedAt
	}
	r.add("attempts", made, fmt.Sprintf("%d of at most %d (stops at the first that streams token by token); figures from attempt %d",
		made, bufferingAttempts, from))
	return r
}

// bufferingOnce measures one streaming request with c.
func (e *env) bufferingOnce(ctx context.Context, c *client.Client) encodingResult {
	r := &Result{Probe: "buffering"}
	out := encodingResult{Result: r}
	n := e.o.MaxTokens
	if n == 0 {
		n = defaultBufferingTokens
	}
	w, werr := e.watch(ctx)
	if werr != nil {
		r.warn("engine figures absent (%v): comparing with the client's own pace", werr)
	}
	meter := startStallMeter()
	tr := c.Do(ctx, e.request(probePrompt, n, true, true))
	stalls := meter.stop()
	out.encoding = tr.Encoding
	if !tr.OK() {
		r.Verdict, r.Summary = Inconclusive, fmt.Sprintf("the streaming request failed (%s): %s", tr.Error, tr.ErrorText)
		return out
	}
	var itl, ttft time.Duration
	if w != nil {
		itl, ttft = e.engineTimes(ctx, w, r)
	}
	evs := tr.Events.List()
	b := AnalyzeBursts(evs, itl)
	if b.Events < 8 {
		r.Verdict, r.Summary = Inconclusive, fmt.Sprintf("only %d token events arrived: too few to judge", b.Events)
		return out
	}
	e.burstEvidence(r, &tr, b, itl, ttft)
	// The wait from the response headers to the first token counts too: a
	// stall (or a proxy) there can hold the whole answer in one burst.
	lead := append([]client.Event{{At: tr.FirstByte}}, evs...)
	long, stalled := StalledGaps(lead, tr.Start, b.Ref, stalls)
	r.add("long_gaps_client_stalled", stalled, fmt.Sprintf("%d of %d gaps over %gx the reference coincide with the probe's own process stalling", stalled, long, longGap))
	held, rest := heldStart(&tr, b, ttft)
	switch {
	case (b.Buffered || held) && long > 0 && 2*stalled >= long:
		r.Verdict, r.Summary = Inconclusive, fmt.Sprintf("bursty, but %d of %d long gaps coincide with this probe's own process stalling (CPU contention on the client): rerun on a quiet machine", stalled, long)
	case held:
		r.Verdict, r.Summary = Fail, fmt.Sprintf("held start: the engine had its first token at %s (TTFT) but the client saw it at %s, "+
			"%d tokens at once; then tokens flowed (%.1f per arrival)", ms(ttft), ms(tr.FirstVisible), rest.first, rest.mean)
		out.fix = fixHeldStart
	case b.Buffered:
		r.Verdict, r.Summary = Fail, fmt.Sprintf("buffered: %d of %d tokens arrived in bursts (up to %d tokens at once, gaps up to %s vs %s per token)%s",
			b.InBursts, b.Tokens, b.MaxGroup, ms(b.MaxGap), ms(b.Ref), lostWhere(&tr, ttft))
		out.fix = fixBuffered
	default:
		r.Verdict, r.Summary = Pass, fmt.Sprintf("streams token by token (%.1f tokens per arrival, median gap %s vs %s per token)",
			b.MeanGroup, ms(b.MedianGap), ms(b.Ref))
	}
	if tr.Encoding != "" && out.fix != "" {
		out.fix = fixCompression + "; " + out.fix
	}
	return out
}

// afterFirst is how the tokens after a stream's first arrival came.
type afterFirst struct {
	first int     // tokens of the first arrival
	mean  float64 // tokens per arrival after it
}

// heldStart reports a held start: the first visible token came far past
// the engine's TTFT (longGap x more, and at least heldStartArrivals
// arrivals' worth of the stream's pace) in one arrival of several tokens,
// while the tokens after that arrival came token by token. Without the
// engine's TTFT it cannot tell.
func heldStart(tr *client.Trace, b Bursts, ttft time.Duration) (bool, afterFirst) {
	var a afterFirst
	if ttft <= 0 || tr.Events.Len() < 2 || float64(tr.FirstVisible) < longGap*float64(ttft) ||
		tr.FirstVisible-ttft < heldStartArrivals*b.Ref {
		return false, a
	}
	evs := result.Events(tr.Events.Pairs())
	first, arrivals, tokens := -1, 0, 0
	evs.Arrivals(b.Ref.Seconds(), func(_, _ float64, k int) {
		if first < 0 {
			first = k
			return
		}
		arrivals++
		tokens += k
	})
	if arrivals == 0 || first < BurstTokens {
		return false, a
	}
	a.first, a.mean = first, float64(tokens)/float64(arrivals)
	return a.mean < BurstTokens/2.0, a
}

// heldStartArrivals is how many per-token latencies past the engine's TTFT
// the first token must come to count as held.
const heldStartArrivals = 8

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s + "-compressed"
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
		r.addDuration("engine_itl_mean_s", itl, " (engine, mean over the request)")
	}
	r.addDuration("client_pace_s", b.ClientPace, " per token (client, first to last event)")
	r.addDuration("client_gap_median_s", b.MedianGap, " between events (client, median)")
	r.addDuration("client_gap_max_s", b.MaxGap, "")
	r.add("tokens", b.Tokens, fmt.Sprintf("%d in %d events, %d arrival groups", b.Tokens, b.Events, b.Groups))
	r.add("tokens_per_arrival_mean", round2(b.MeanGroup), fmt.Sprintf("%.2f (max %d)", b.MeanGroup, b.MaxGroup))
	r.add("tokens_in_bursts", b.InBursts, fmt.Sprintf("%d of %d in groups of >= %d", b.InBursts, b.Tokens, BurstTokens))
	if b.BurstInterval > 0 {
		r.addDuration("burst_interval_s", b.BurstInterval, " between bursts")
	}
	if ttft > 0 {
		r.addDuration("engine_ttft_mean_s", ttft, " (engine clock)")
	}
	r.addDuration("client_first_visible_s", tr.FirstVisible, " (client clock)")
	r.addDuration("client_ttfb_s", tr.FirstByte, " (client clock)")
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
