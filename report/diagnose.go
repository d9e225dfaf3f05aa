package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/scrape"
)

// Cause names where a run's wait for the first visible output goes.
type Cause string

// Causes, following the seed lesson's "where is the time going" reasoning.
const (
	// CauseHealthy: engine TTFT small and the client saw text about then.
	CauseHealthy Cause = "healthy"
	// CauseQueue: engine TTFT large and mostly queue wait (overloaded server).
	CauseQueue Cause = "queue"
	// CauseEngine: engine TTFT large with little queue wait: prefill (long
	// prompt, big batch) or a slow model.
	CauseEngine Cause = "engine"
	// CauseBetween: engine TTFT small but the client saw text much later:
	// lost between engine and client (proxy buffering, network).
	CauseBetween Cause = "between"
	// CauseHeldBack: not streaming, so first visible output is E2E by
	// construction; the first token waited in the server for the last.
	CauseHeldBack Cause = "held-back"
	// CauseUnknown: the figures needed to tell are missing.
	CauseUnknown Cause = "unknown"
)

// Finding is one sentence of a diagnosis with the cause it points at.
type Finding struct {
	Cause Cause
	Text  string
}

// Diagnosis says where one run's time goes.
type Diagnosis struct {
	Run      string
	Label    string // RunLabel(Run)
	Findings []Finding
}

// Has reports whether the diagnosis found cause c.
func (d Diagnosis) Has(c Cause) bool {
	for _, f := range d.Findings {
		if f.Cause == c {
			return true
		}
	}
	return false
}

// Thresholds decide what counts as large. Client and engine figures come
// from two clocks, so only differences well above a few milliseconds count.
type Thresholds struct {
	// LargeTTFT is an engine TTFT a user notices as a blank screen.
	LargeTTFT float64
	// LostGap is how much later than the engine's first token the client
	// may see text (or finish) before the difference is a finding.
	LostGap float64
}

// DefaultThresholds are for real time: half a second of blank screen is
// noticed; 0.2 s is far above the two clocks' definitional noise.
var DefaultThresholds = Thresholds{LargeTTFT: 0.5, LostGap: 0.2}

// Scaled divides the thresholds by speedup, for a bundled engine that runs
// every duration speedup times faster than real time.
func (t Thresholds) Scaled(speedup float64) Thresholds {
	if speedup <= 0 {
		return t
	}
	return Thresholds{LargeTTFT: t.LargeTTFT / speedup, LostGap: t.LostGap / speedup}
}

// Basis is what a diagnosis knows besides the run's own figures.
type Basis struct {
	Thresholds
	// TTFTQueue says whether the server's engine TTFT counts queue wait,
	// from its metrics dialect (scrape.Dialect.TTFTQueue); the figures
	// can still show that a server reusing a dialect's names does not.
	TTFTQueue scrape.QueueInTTFT
}

// BasisFor returns the thresholds for res's server and what its metrics
// dialect says about queue wait in TTFT.
func BasisFor(res *result.Results) Basis {
	b := Basis{Thresholds: thresholdsFor(res)}
	if dl, ok := scrape.Lookup(res.Server.Dialect); ok {
		b.TTFTQueue = dl.TTFTQueue
	}
	return b
}

// DiagnoseOn applies the seed lesson's reasoning to run: engine time to
// first token large means model, prompt or queue (queue wait and its share
// say which); engine time small but first visible output late while
// streaming means lost between engine and client, unless queue wait that
// the server's TTFT leaves out explains it; not streaming, first visible
// output is E2E by construction. Client and engine are compared mean with
// mean (the engine gives only means).
func DiagnoseOn(run result.Run, b Basis) Diagnosis {
	d := Diagnosis{Run: run.Name, Label: RunLabel(run.Name)}
	add := func(c Cause, format string, args ...any) {
		d.Findings = append(d.Findings, Finding{Cause: c, Text: fmt.Sprintf(format, args...)})
	}
	if run.Client.FirstVisibleS == nil || run.Client.E2ES == nil {
		add(CauseUnknown, "No successful requests, so there is no client figure to explain.")
		return d
	}
	th := b.Thresholds
	// Means on both sides: the engine gives only means, and a client
	// median set against an engine mean is a gap of statistics, not time.
	fv, e2e := run.Client.FirstVisibleS.Mean, run.Client.E2ES.Mean
	ft, haveTTFT := readFirstToken(run, b)

	if !haveTTFT && run.Stream {
		why := "The engine does not export TTFT"
		if rc := run.Engine.Reconciliation; rc != nil && rc.EngineAbsent {
			why = "Engine figures were left out (" + rc.Note + ")"
		} else if run.Incomplete {
			why = "There is no engine TTFT (" + noAfterScrape + ")"
		}
		add(CauseUnknown, why+", so the client's first visible output (mean %s) "+
			"cannot be split into engine time and time lost on the way.", secsText(fv))
	}
	if haveTTFT && run.Stream && ft.excluded == "" && ft.haveQueue && ft.explains(fv, th) {
		ft.excluded = "the client's first text fits queue wait + TTFT"
		if b.TTFTQueue == scrape.QueueInTTFTIncluded {
			ft.excluded += " (though this dialect's TTFT counts queue wait: a server reusing its metric names?)"
		}
	}
	if haveTTFT && ft.arrival() >= th.LargeTTFT {
		d.Findings = append(d.Findings, ft.large()...)
	}
	addClientQueue(&d, run, th)
	firstText(&d, run, ft, haveTTFT, fv, e2e, th)
	burstsFinding(&d, run)
	if d.Has(CauseBetween) {
		compressedFinding(&d, run)
	}
	afterEngine(&d, run, ft, haveTTFT, e2e, th)
	if len(d.Findings) == 0 && haveTTFT {
		ft.healthy(&d, fv, e2e)
	}
	return d
}

// firstText says where the first visible output went: held back to the
// end when not streaming; otherwise after the thinking of a reasoning
// model, or between engine and client (with the engine's TTFT).
func firstText(d *Diagnosis, run result.Run, ft firstToken, haveTTFT bool, fv, e2e float64, th Thresholds) {
	switch {
	case !run.Stream && haveTTFT:
		d.Findings = append(d.Findings, Finding{CauseHeldBack, fmt.Sprintf("Not streaming: first visible output equals E2E (%s) by construction. The engine "+
			"had the first token after %s and held it until the last was done; streaming would show text after about %s.",
			secsText(e2e), secsText(ft.arrival()), secsText(ft.arrival()))})
		thinkingHeldBack(d, run)
	case !run.Stream:
		d.Findings = append(d.Findings, Finding{CauseHeldBack, fmt.Sprintf("Not streaming: first visible output equals E2E (%s) by construction; "+
			"streaming would show text as soon as the first token is made.", secsText(e2e))})
		thinkingHeldBack(d, run)
	default:
		if first, ok := thinking(d, run, fv, th); ok && haveTTFT {
			ft.between(d, first, e2e, th) // a reasoning model's first text is its first token
		} else if haveTTFT {
			ft.between(d, fv, e2e, th)
		}
	}
}

// afterEngine names time lost after the engine finished: client E2E well
// above the engine's (with queue wait when its TTFT leaves it out, as its
// E2E then does too).
func afterEngine(d *Diagnosis, run result.Run, ft firstToken, haveTTFT bool, e2e float64, th Thresholds) {
	engE2E, haveEngE2E := histMean(run.Engine.E2ES)
	engE2EText := secsText(engE2E)
	if haveTTFT && ft.excluded != "" { // a server whose TTFT leaves the queue out times E2E from scheduling too
		engE2E += ft.queue
		engE2EText = fmt.Sprintf("%s with queue wait", secsText(engE2E))
	}
	if haveEngE2E && e2e-engE2E >= th.LostGap && e2e-engE2E >= 0.1*engE2E {
		d.Findings = append(d.Findings, Finding{CauseBetween, fmt.Sprintf("Client E2E (mean %s) exceeds engine E2E (mean %s) by %s: time spent after the engine finished, "+
			"on the way to the client.", secsText(e2e), engE2EText, secsText(e2e-engE2E))})
	}
}

// healthy is the finding of a run with nothing to explain: engine and
// client agree, and where the time went.
func (ft firstToken) healthy(d *Diagnosis, fv, e2e float64) {
	rest := fmt.Sprintf("the remaining %s of E2E (%s) is generating the answer", secsText(max(e2e-fv, 0)), secsText(e2e))
	switch {
	case ft.haveQueue && ft.share() >= 0.01 && ft.share() <= 1:
		rest = fmt.Sprintf("requests waited %s on average for a slot, %s of their time to the first token; %s", secsText(ft.queue), pct(ft.share()), rest)
	case ft.haveQueue && ft.queue == 0:
		rest = "no request waited for a slot; " + rest
	case ft.haveQueue:
		rest = fmt.Sprintf("requests waited %s on average for a slot; %s", secsText(ft.queue), rest)
	}
	d.Findings = append(d.Findings, Finding{CauseHealthy, fmt.Sprintf("Engine TTFT (%s) and the client's first visible output (mean %s) agree: nothing is lost "+
		"between engine and client; %s.", secsText(ft.arrival()), secsText(fv), rest)})
}

// firstToken is the engine's account of the wait for a run's first token.
type firstToken struct {
	ttft, queue float64
	haveQueue   bool
	// excluded says why the server's TTFT is taken to leave queue wait
	// out ("" when it counts it): the time from arrival is then queue +
	// TTFT.
	excluded string
}

// readFirstToken reads engine TTFT and queue wait from run, and whether
// TTFT counts the queue: the dialect says so, but a mean queue wait above
// the mean TTFT cannot happen when each request's TTFT contains its wait.
func readFirstToken(run result.Run, b Basis) (firstToken, bool) {
	var ft firstToken
	var ok bool
	if ft.ttft, ok = histMean(run.Engine.TTFTS); !ok {
		return ft, false
	}
	ft.queue, ft.haveQueue = histMean(run.Engine.QueueS)
	switch {
	case run.Engine.Source != nil && run.Engine.Source.Kind == result.SourceOllama:
		ft.excluded = "Ollama's TTFT (load + prompt eval) leaves the wait for a slot out"
	case b.TTFTQueue == scrape.QueueInTTFTExcluded:
		ft.excluded = "this server's TTFT leaves queue wait out"
	case ft.haveQueue && ft.queue > 1.1*ft.ttft && ft.queue-ft.ttft >= b.LostGap/4:
		ft.excluded = fmt.Sprintf("mean queue wait %s exceeds mean TTFT %s, so this server's TTFT leaves queue wait out",
			secsText(ft.queue), secsText(ft.ttft))
	}
	return ft, true
}

// arrival is the engine's mean time from arrival to first token.
func (ft firstToken) arrival() float64 {
	if ft.excluded != "" {
		return ft.ttft + ft.queue
	}
	return ft.ttft
}

// share is queue wait's share of the time from arrival to first token.
func (ft firstToken) share() float64 {
	if a := ft.arrival(); a > 0 {
		return ft.queue / a
	}
	return 0
}

// explains reports whether queue wait + TTFT account for the client's mean
// first visible output fv where TTFT alone leaves a gap that counts.
func (ft firstToken) explains(fv float64, th Thresholds) bool {
	gap := fv - ft.ttft
	return gap >= th.LostGap && ft.queue >= th.LostGap && math.Abs(gap-ft.queue) <= max(th.LostGap, 0.25*gap)
}

// what names the engine figure the findings speak of.
func (ft firstToken) what() string {
	if ft.excluded != "" {
		return fmt.Sprintf("Engine time to first token (queue wait %s + TTFT %s = %s; %s)",
			secsText(ft.queue), secsText(ft.ttft), secsText(ft.arrival()), ft.excluded)
	}
	return fmt.Sprintf("Engine TTFT (%s)", secsText(ft.ttft))
}

// large words a large engine time to first token by queue wait's measured
// share: mostly queue (half or more), part queue (a tenth or more), or
// little queue.
func (ft firstToken) large() []Finding {
	if !ft.haveQueue {
		return []Finding{{CauseEngine, fmt.Sprintf("%s is large: the model, the prompt or the queue "+
			"(the server does not export queue wait to say which); streaming cannot hide it.", ft.what())}}
	}
	share, rest := ft.share(), max(ft.arrival()-ft.queue, 0)
	switch {
	case share >= 0.5:
		return []Finding{{CauseQueue, fmt.Sprintf("%s is large and mostly queue wait: requests waited %s on average for a slot, "+
			"%s of their time to the first token, so the server is overloaded; fewer concurrent requests or more capacity would help, streaming would not.",
			ft.what(), secsText(ft.queue), pct(min(share, 1)))}}
	case share >= 0.1:
		return []Finding{
			{CauseQueue, fmt.Sprintf("%s is large: requests spent %s of it (%s on average) waiting for a slot;",
				ft.what(), pct(share), secsText(ft.queue))},
			{CauseEngine, fmt.Sprintf("the other %s goes to prefill, from a long prompt, a large batch or a slow model. "+
				"Fewer concurrent requests would cut the first part; streaming cannot hide either.", secsText(rest))}}
	}
	return []Finding{{CauseEngine, fmt.Sprintf("%s is large, though requests waited little for a slot (%s on average, %s of it): the time goes to prefill, "+
		"from a long prompt, a large batch or a slow model; streaming cannot hide it.", ft.what(), secsText(ft.queue), pct(share))}}
}

// between says where a streaming run's first text went after the engine
// made it: lost on the way when the client saw it much later than the
// engine's time from arrival; queueing when queue wait the server's TTFT
// leaves out accounts for the gap that TTFT alone shows.
func (ft firstToken) between(d *Diagnosis, fv, e2e float64, th Thresholds) {
	if ft.excluded != "" && fv-ft.ttft >= th.LostGap {
		d.Findings = append(d.Findings, Finding{CauseQueue, fmt.Sprintf("The client saw the first text after a mean %s, "+
			"%s after engine TTFT (%s): queue wait (%s) accounts for it, not the way between engine and client (%s).",
			secsText(fv), secsText(fv-ft.ttft), secsText(ft.ttft), secsText(ft.queue), ft.excluded)})
	}
	a := ft.arrival()
	if fv-a < th.LostGap || fv < 2*a {
		return
	}
	d.Findings = append(d.Findings, Finding{CauseBetween, fmt.Sprintf("%s is small, but the client saw the first text "+
		"after a mean %s: about %s is lost between engine and client, e.g. a proxy or load balancer buffering the stream, "+
		"or a slow network.", ft.what(), secsText(fv), secsText(fv-a))})
	if fv >= 0.9*e2e {
		d.Findings = append(d.Findings, Finding{CauseBetween, fmt.Sprintf("The first text arrived with the end of the "+
			"answer (E2E %s): something buffered the whole stream.", secsText(e2e))})
	}
}

// compressedFinding names compression when the answers that a buffering
// path held came gzip-compressed: a proxy compressing text/event-stream
// keeps the stream in its compressor until its buffers fill or the answer
// ends.
func compressedFinding(d *Diagnosis, run result.Run) {
	n := run.Client.Compressed
	if n == 0 {
		return
	}
	d.Findings = append(d.Findings, Finding{CauseBetween, fmt.Sprintf("%d of %d answers came gzip-compressed (the client sent "+
		"Accept-Encoding: %s, as the OpenAI SDKs and browsers do): something on the path compresses the event stream and holds it "+
		"in its compressor. Fix: do not compress text/event-stream (nginx: leave it out of gzip_types; HAProxy: out of compression type), "+
		"or flush each chunk (nginx: proxy_buffering off with proxy_http_version 1.1, or the X-Accel-Buffering: no response header); "+
		"--accept-encoding identity measures the path without compression.", n, run.OK, orDash(run.Workload.AcceptEncoding))})
}

// burstsFinding names a stream that stutters: most tokens arrived in
// bursts, so the client's ITL measures the bursts, and a user sees text in
// clumps though the engine made it token by token.
func burstsFinding(d *Diagnosis, run result.Run) {
	s := run.Client.Stutter
	if !run.Stream || s == nil || !s.Stutter.Bursty() {
		return
	}
	text := fmt.Sprintf("The stream stutters: %s of the tokens arrived in bursts "+
		"(%.1f tokens per arrival, up to %d at once; largest gap between arrivals %s), so the client's ITL is computed over bursts "+
		"and says nothing of the engine's pace.", pct(s.BurstShare), s.TokensPerArrivalMean, s.TokensPerArrivalMax, secsText(s.GapMaxS))
	if run.Client.Compressed == 0 { // else compressedFinding says what holds it
		text += " Something between engine and client buffers the stream: nginx's defaults do " +
			"(proxy_buffering on with HTTP/1.0 to the upstream); set proxy_buffering off and proxy_http_version 1.1, " +
			"or send the X-Accel-Buffering: no response header; HAProxy merges small sends unless option http-no-delay."
	}
	d.Findings = append(d.Findings, Finding{CauseBetween, text})
}

// addClientQueue names queueing on the client side: an open-loop run whose
// sends fell behind their intended times by a mean that counts waited in
// servebench before the server saw the request.
func addClientQueue(d *Diagnosis, run result.Run, th Thresholds) {
	if run.Rate == nil || run.Rate.SendLagS == nil || run.Rate.SendLagS.Mean < th.LostGap {
		return
	}
	lag := run.Rate.SendLagS
	text := fmt.Sprintf("Requests also waited in servebench before they were sent: a mean %s (p99 %s) behind their "+
		"intended send times, which the engine's figures and the client's figures from the send do not count", secsText(lag.Mean), secsText(lag.P99))
	if fi := run.Client.FirstVisibleFromIntendedS; fi != nil {
		text += fmt.Sprintf("; from the intended send time the first text came after a mean %s", secsText(fi.Mean))
	}
	d.Findings = append(d.Findings, Finding{CauseQueue, text + "."})
}

// pct formats a share as a whole percentage.
func pct(share float64) string { return strconv.FormatFloat(100*share, 'f', 0, 64) + "%" }

func histMean(h *result.Hist) (float64, bool) {
	if h == nil || h.Count <= 0 || math.IsNaN(h.Mean) {
		return 0, false
	}
	return h.Mean, true
}

// secsText formats seconds with three significant digits ("0.0284 s", "3.85 s",
// "2.1 s"), whole seconds from 100 up.
func secsText(v float64) string {
	if math.Abs(v) >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " s"
	}
	return strconv.FormatFloat(v, 'g', 3, 64) + " s"
}

// TwoClocks is TwoClocksCaveat for res's engine source: Ollama's
// per-request timings, or the server's /metrics (also through Prometheus).
func TwoClocks(res *result.Results) string {
	if !slices.ContainsFunc(res.Runs, func(r result.Run) bool {
		return r.Engine.Source != nil && r.Engine.Source.Kind == result.SourceOllama
	}) {
		return TwoClocksCaveat
	}
	return strings.Replace(TwoClocksCaveat, "means from the server's /metrics, measured on the server's clock from the moment the request arrived",
		"means of Ollama's own timings of each request (its /api/chat answers), measured on the server's clock from the moment it had read the request", 1)
}

// TwoClocksCaveat is the seed lesson's warning, printed with every diagnosis.
const TwoClocksCaveat = "Two clocks: client figures are measured by servebench from the moment it sent " +
	"the request (medians in the table; the diagnosis compares client means with engine means); engine figures are means from the server's /metrics, measured on the server's clock from the " +
	"moment the request arrived. Compare them at the order-of-magnitude level: a difference of a few " +
	"milliseconds between the two (even the client seeing text before the engine's TTFT) is definitional noise, not a finding."
