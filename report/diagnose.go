package report

import (
	"fmt"
	"math"
	"strconv"

	"github.com/servebench/servebench/bench/result"
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

// Diagnose applies the seed lesson's reasoning to run with DefaultThresholds.
func Diagnose(run result.Run) Diagnosis { return DiagnoseWith(run, DefaultThresholds) }

// DiagnoseWith applies the seed lesson's reasoning to run: engine TTFT large
// means model, prompt or queue (queue wait says which); engine TTFT small but
// first visible output late while streaming means lost between engine and
// client; not streaming, first visible output is E2E by construction.
func DiagnoseWith(run result.Run, th Thresholds) Diagnosis {
	d := Diagnosis{Run: run.Name, Label: RunLabel(run.Name)}
	add := func(c Cause, format string, args ...any) {
		d.Findings = append(d.Findings, Finding{Cause: c, Text: fmt.Sprintf(format, args...)})
	}
	if run.Client.FirstVisibleS == nil || run.Client.E2ES == nil {
		add(CauseUnknown, "No successful requests, so there is no client figure to explain.")
		return d
	}
	fv, e2e := run.Client.FirstVisibleS.Median, run.Client.E2ES.Median
	ttft, haveTTFT := histMean(run.Engine.TTFTS)
	queue, haveQueue := histMean(run.Engine.QueueS)
	engE2E, haveEngE2E := histMean(run.Engine.E2ES)

	if !haveTTFT && run.Stream {
		why := "The engine does not export TTFT"
		if rc := run.Engine.Reconciliation; rc != nil && rc.EngineAbsent {
			why = "Engine figures were left out (" + rc.Note + ")"
		}
		add(CauseUnknown, why+", so the client's first visible output (%s) "+
			"cannot be split into engine time and time lost on the way.", secs(fv))
	}
	if haveTTFT && ttft >= th.LargeTTFT {
		switch {
		case haveQueue && queue >= ttft/2:
			add(CauseQueue, "Engine TTFT is large (%s) and mostly queue wait (%s): requests wait for a slot, "+
				"so the server is overloaded; fewer concurrent requests or more capacity would help, streaming would not.",
				secs(ttft), secs(queue))
		case haveQueue:
			add(CauseEngine, "Engine TTFT is large (%s) with little queue wait (%s): the time goes to prefill, "+
				"from a long prompt, a large batch or a slow model; streaming cannot hide it.", secs(ttft), secs(queue))
		default:
			add(CauseEngine, "Engine TTFT is large (%s): the model, the prompt or the queue "+
				"(the server does not export queue wait to say which); streaming cannot hide it.", secs(ttft))
		}
	}
	if !run.Stream {
		if haveTTFT {
			add(CauseHeldBack, "Not streaming: first visible output equals E2E (%s) by construction. The engine "+
				"had the first token after %s and held it until the last was done; streaming would show text after about %s.",
				secs(e2e), secs(ttft), secs(ttft))
		} else {
			add(CauseHeldBack, "Not streaming: first visible output equals E2E (%s) by construction; "+
				"streaming would show text as soon as the first token is made.", secs(e2e))
		}
	} else if haveTTFT && fv-ttft >= th.LostGap && fv >= 2*ttft {
		add(CauseBetween, "Engine TTFT is only %s but the client saw the first text after %s: about %s is lost "+
			"between engine and client, e.g. a proxy or load balancer buffering the stream, or a slow network.",
			secs(ttft), secs(fv), secs(fv-ttft))
		if fv >= 0.9*e2e {
			add(CauseBetween, "The first text arrived with the end of the answer (E2E %s): something buffered the whole stream.",
				secs(e2e))
		}
	}
	if haveEngE2E && e2e-engE2E >= th.LostGap && e2e-engE2E >= 0.1*engE2E {
		add(CauseBetween, "Client E2E (%s) exceeds engine E2E (%s) by %s: time spent after the engine finished, "+
			"on the way to the client.", secs(e2e), secs(engE2E), secs(e2e-engE2E))
	}
	if len(d.Findings) == 0 && haveTTFT {
		rest := fmt.Sprintf("the remaining %s of E2E (%s) is generating the answer", secs(max(e2e-fv, 0)), secs(e2e))
		if haveQueue {
			rest = fmt.Sprintf("queue wait is %s; %s", secs(queue), rest)
		}
		add(CauseHealthy, "Engine TTFT (%s) and the client's first visible output (%s) agree: nothing is lost "+
			"between engine and client; %s.", secs(ttft), secs(fv), rest)
	}
	return d
}

func histMean(h *result.Hist) (float64, bool) {
	if h == nil || h.Count <= 0 || math.IsNaN(h.Mean) {
		return 0, false
	}
	return h.Mean, true
}

// secs formats seconds with three significant digits ("0.0284 s", "3.85 s",
// "2.1 s"), whole seconds from 100 up.
func secs(v float64) string {
	if math.Abs(v) >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " s"
	}
	return strconv.FormatFloat(v, 'g', 3, 64) + " s"
}

// TwoClocksCaveat is the seed lesson's warning, printed with every diagnosis.
const TwoClocksCaveat = "Two clocks: client figures are medians measured by servebench from the moment it sent " +
	"the request; engine figures are means from the server's /metrics, measured on the server's clock from the " +
	"moment the request arrived. Compare them at the order-of-magnitude level: a difference of a few " +
	"milliseconds between the two (even the client seeing text before the engine's TTFT) is definitional noise, not a finding."
