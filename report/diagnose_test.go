package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/report/reporttest"
	"github.com/servebench/servebench/scrape"
)

// runOf builds one run from spec with the fixture builder.
func runOf(dialect string, spec reporttest.RunSpec) result.Run {
	res, _ := reporttest.Build(dialect, spec)
	return res.Runs[0]
}

func TestDiagnose(t *testing.T) {
	seed := reporttest.SeedSpecs()
	slowPrefill := seed[0]
	slowPrefill.FirstVisible, slowPrefill.EngineTTFT = 1.1, 1.0 // long prompt: TTFT large, no queue
	cases := []struct {
		name  string
		run   result.Run
		want  Cause
		not   []Cause
		texts []string // substrings the findings must contain
	}{
		// The seed's streaming row: engine and client agree.
		{"healthy", runOf("vllm", seed[0]), CauseHealthy, []Cause{CauseBetween, CauseQueue, CauseEngine},
			[]string{"0.0284 s", "nothing is lost"}},
		// A proxy buffers the stream: engine TTFT 0.03 s, client first text about 1.2 s.
		{"buffered stream", runOf("vllm", reporttest.Buffered()), CauseBetween, []Cause{CauseHealthy, CauseQueue},
			[]string{"0.03 s", "1.21 s", "proxy", "lost between engine and client"}},
		// Overloaded: 2 s of the 2.1 s TTFT is queue wait.
		{"queued server", runOf("vllm", reporttest.Queued()), CauseQueue, []Cause{CauseBetween, CauseHealthy, CauseEngine},
			[]string{"2.1 s", "requests waited 2 s on average for a slot, 95% of their time", "overloaded"}},
		// Large TTFT without queueing: prefill.
		{"slow prefill", runOf("vllm", slowPrefill), CauseEngine, []Cause{CauseQueue, CauseHealthy},
			[]string{"1 s", "prefill"}},
		// Not streaming: first visible = E2E by construction.
		{"non-streaming", runOf("vllm", seed[1]), CauseHeldBack, []Cause{CauseBetween, CauseHealthy},
			[]string{"by construction", "0.0281 s"}},
		// No TTFT exported (TGI): say we cannot tell.
		{"no ttft", runOf("tgi", func() reporttest.RunSpec { s := seed[0]; s.NoTTFT = true; return s }()),
			CauseUnknown, []Cause{CauseHealthy, CauseBetween}, []string{"does not export TTFT"}},
		// Engine figures left out after a counter reset: say so, not "does not export".
		{"engine left out", func() result.Run {
			r := runOf("vllm", seed[0])
			r.Engine = result.EngineStats{Reconciliation: &result.Reconciliation{OK: 20, EngineCount: 3, EngineAbsent: true, Note: "counters were reset"}}
			return r
		}(), CauseUnknown, []Cause{CauseHealthy, CauseBetween}, []string{"Engine figures were left out (counters were reset)"}},
		// Rebuilt after servebench was killed: no after-run scrape, say so.
		{"incomplete run", func() result.Run {
			r := runOf("vllm", seed[0])
			r.Incomplete, r.Engine = true, result.EngineStats{}
			return r
		}(), CauseUnknown, []Cause{CauseHealthy, CauseBetween}, []string{"stopped mid-run, before the after-run /metrics scrape"}},
		// Every request failed.
		{"no requests", result.Run{Name: "streaming", Stream: true}, CauseUnknown, []Cause{CauseHealthy},
			[]string{"No successful requests"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Diagnose(c.run)
			var text strings.Builder
			for _, f := range d.Findings {
				text.WriteString(f.Text + " ")
			}
			if !d.Has(c.want) {
				t.Errorf("want cause %s, got findings %+v", c.want, d.Findings)
			}
			for _, n := range c.not {
				if d.Has(n) {
					t.Errorf("unexpected cause %s in %+v", n, d.Findings)
				}
			}
			for _, s := range c.texts {
				if !strings.Contains(text.String(), s) {
					t.Errorf("findings lack %q: %s", s, text.String())
				}
			}
		})
	}
}

// TestDiagnoseWholeStreamBuffered: the first text arrives with the end.
func TestDiagnoseWholeStreamBuffered(t *testing.T) {
	spec := reporttest.Buffered()
	spec.Buffered = 256
	d := Diagnose(runOf("vllm", spec))
	if !strings.Contains(d.Findings[len(d.Findings)-1].Text, "buffered the whole stream") {
		t.Errorf("findings = %+v", d.Findings)
	}
}

// TestDiagnoseScaled: on a bundled engine 100x faster, a 12 ms gap is a
// 1.2 s gap in real time and counts; with default thresholds it would not.
func TestDiagnoseScaled(t *testing.T) {
	run := result.Run{Name: "streaming", Stream: true,
		Client: result.ClientStats{FirstVisibleS: summaryOf(0.012), E2ES: summaryOf(0.0385)},
		Engine: result.EngineStats{TTFTS: &result.Hist{Mean: 0.0003, Count: 21}}}
	if d := Diagnose(run); d.Has(CauseBetween) {
		t.Errorf("default thresholds: %+v", d.Findings)
	}
	if d := DiagnoseWith(run, DefaultThresholds.Scaled(100)); !d.Has(CauseBetween) {
		t.Errorf("scaled thresholds: %+v", d.Findings)
	}
}

// TestDiagnoseClockNoise: the client seeing text 2 ms before the engine's
// TTFT (the seed's case) is not a finding.
func TestDiagnoseClockNoise(t *testing.T) {
	run := result.Run{Name: "streaming", Stream: true,
		Client: result.ClientStats{FirstVisibleS: summaryOf(0.026), E2ES: summaryOf(3.852)},
		Engine: result.EngineStats{TTFTS: &result.Hist{Mean: 0.0284, Count: 21}, E2ES: &result.Hist{Mean: 3.847, Count: 21}}}
	d := Diagnose(run)
	if len(d.Findings) != 1 || d.Findings[0].Cause != CauseHealthy {
		t.Errorf("findings = %+v", d.Findings)
	}
}

// TestDiagnoseQueueShares: the wording follows queue wait's measured share
// of the engine's time to first token, and queue wait that a server's TTFT
// leaves out (a simulator reusing vLLM's metric names) explains the client's
// first token instead of a proxy being blamed.
func TestDiagnoseQueueShares(t *testing.T) {
	spec := func(fv, ttft, queue float64) reporttest.RunSpec {
		return reporttest.RunSpec{Name: "streaming", Stream: true, N: 20, Tokens: 64, FirstVisible: fv, PerToken: 0.015,
			EngineTTFT: ttft, EngineQueue: queue}
	}
	lagged := runOf("vllm", spec(0.3, 0.3, 0.01))
	lagged.Rate = &result.RateStats{TargetPerS: 4, AchievedPerS: 3, SendLagS: &stats.Summary{Mean: 0.8, P99: 2.5, N: 20}}
	lagged.Client.FirstVisibleFromIntendedS = &stats.Summary{Mean: 1.1, N: 20}
	cases := []struct {
		name      string
		run       result.Run
		ttftQueue scrape.QueueInTTFT
		want, not []Cause
		texts     []string
		absent    []string
	}{
		// The simulator at concurrency 16 on 8 slots: TTFT 0.03 s
		// excludes 1.6 s of queue wait; the client sees text after ~1.65 s.
		{"simulator queue outside ttft", runOf("vllm", spec(1.65, 0.03, 1.6)), scrape.QueueInTTFTIncluded,
			[]Cause{CauseQueue}, []Cause{CauseBetween, CauseHealthy},
			[]string{"queue wait (1.6 s) accounts for it", "exceeds mean TTFT", "mostly queue wait"}, []string{"proxy"}},
		// The same simulator overloaded at 4 req/s: 11.2 s of queue wait.
		{"simulator overloaded", runOf("vllm", spec(10.7, 0.05, 11.2)), scrape.QueueInTTFTIncluded,
			[]Cause{CauseQueue}, []Cause{CauseBetween}, []string{"mostly queue wait: requests waited 11.2 s", "overloaded"}, []string{"proxy", "lost between"}},
		// Bundled engine under load: 44% of a 1 s TTFT is queue wait, so
		// neither "little queue wait" nor "mostly".
		{"queue 44 percent", runOf("vllm", spec(1.0, 1.0, 0.44)), scrape.QueueInTTFTIncluded,
			[]Cause{CauseQueue, CauseEngine}, []Cause{CauseBetween, CauseHealthy},
			[]string{"requests spent 44% of it (0.44 s on average) waiting for a slot", "other 0.56 s goes to prefill"}, []string{"waited little", "mostly"}},
		// A long prompt: 5% queue wait is little.
		{"queue 5 percent", runOf("vllm", spec(1.0, 1.0, 0.05)), scrape.QueueInTTFTIncluded,
			[]Cause{CauseEngine}, []Cause{CauseQueue, CauseBetween}, []string{"requests waited little for a slot (0.05 s on average, 5% of it)"}, nil},
		// Queue wait below TTFT but fitting the gap exactly, on a server of
		// unknown dialect: queue + TTFT explain the first text.
		{"fit unknown dialect", runOf("vllm", spec(1.3, 0.8, 0.5)), scrape.QueueInTTFTUnknown,
			[]Cause{CauseQueue}, []Cause{CauseBetween}, []string{"fits queue wait + TTFT", "accounts for it"}, []string{"though"}},
		// A real vLLM behind a buffering proxy: TTFT 0.5 s counts its 0.1 s
		// queue wait and the first text comes 1.1 s later: a proxy.
		{"proxy after queue", runOf("vllm", spec(1.6, 0.5, 0.1)), scrape.QueueInTTFTIncluded,
			[]Cause{CauseBetween}, []Cause{CauseHealthy}, []string{"lost between engine and client", "1.1 s"}, []string{"accounts for it"}},
		// Open loop that fell behind: the client-side wait is named.
		{"client send lag", lagged, scrape.QueueInTTFTIncluded, []Cause{CauseQueue}, []Cause{CauseBetween},
			[]string{"waited in servebench", "0.8 s", "p99 2.5 s", "1.1 s"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := DiagnoseOn(c.run, Basis{Thresholds: DefaultThresholds, TTFTQueue: c.ttftQueue})
			var text strings.Builder
			for _, f := range d.Findings {
				text.WriteString(f.Text + " ")
			}
			for _, w := range c.want {
				if !d.Has(w) {
					t.Errorf("want cause %s: %s", w, text.String())
				}
			}
			for _, n := range c.not {
				if d.Has(n) {
					t.Errorf("unexpected cause %s: %s", n, text.String())
				}
			}
			for _, s := range c.texts {
				if !strings.Contains(text.String(), s) {
					t.Errorf("findings lack %q: %s", s, text.String())
				}
			}
			for _, s := range c.absent {
				if strings.Contains(text.String(), s) {
					t.Errorf("findings say %q: %s", s, text.String())
				}
			}
		})
	}
}

func summaryOf(v float64) *stats.Summary { return stats.Summarize([]float64{v}) }

// TestDiagnoseLikeStatistics: the client-engine E2E gap is mean against
// mean. A skewed run whose client median sits above the engine's mean
// while the means agree loses nothing on the way; one whose client mean
// is well past the engine's does.
func TestDiagnoseLikeStatistics(t *testing.T) {
	// median 1.2 s, mean 0.76 s: a few short answers pull the mean down.
	skewed := stats.Summarize([]float64{0.1, 0.1, 0.2, 1.2, 1.2, 1.2, 1.3})
	run := result.Run{Name: "streaming", Stream: true,
		Client: result.ClientStats{FirstVisibleS: summaryOf(0.36), E2ES: skewed},
		Engine: result.EngineStats{TTFTS: &result.Hist{Mean: 0.35, Count: 7}, E2ES: &result.Hist{Mean: skewed.Mean - 0.005, Count: 7}}}
	if d := Diagnose(run); d.Has(CauseBetween) {
		t.Errorf("means agree (client %.3f, engine %.3f), median %.3f: %+v", skewed.Mean, run.Engine.E2ES.Mean, skewed.Median, d.Findings)
	}
	run.Engine.E2ES.Mean = skewed.Mean - 0.3
	d := Diagnose(run)
	if !d.Has(CauseBetween) || !strings.Contains(d.Findings[len(d.Findings)-1].Text, fmt.Sprintf("mean %s", secsText(skewed.Mean))) {
		t.Errorf("client mean 0.3 s past the engine's: %+v", d.Findings)
	}
}

// TestDiagnoseStutterAndCompression: a run whose tokens arrived in bursts
// is named a stuttering stream with the nginx fix, and a held stream whose
// answers came gzip-compressed names compression and its fix.
func TestDiagnoseStutterAndCompression(t *testing.T) {
	run := runOf("vllm", reporttest.Buffered())
	run.Workload.AcceptEncoding = "gzip"
	run.Client.Stutter = &result.RunStutter{Requests: 20, BurstyRequests: 20,
		Stutter: result.Stutter{Arrivals: 80, Tokens: 1280, TokensPerArrivalMean: 16, TokensPerArrivalMax: 17, GapMaxS: 0.07, BurstShare: 0.98}}
	run.Client.Compressed = run.OK
	d := Diagnose(run)
	var all []string
	for _, f := range d.Findings {
		all = append(all, f.Text)
	}
	text := strings.Join(all, "\n")
	for _, want := range []string{"stutters", "98%", "computed over bursts", "proxy_buffering off", "X-Accel-Buffering: no",
		"came gzip-compressed", "Accept-Encoding: gzip", "text/event-stream", "--accept-encoding identity"} {
		if !strings.Contains(text, want) {
			t.Errorf("diagnosis lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "nginx's defaults") {
		t.Errorf("compressed answers blamed on nginx's defaults:\n%s", text)
	}
	run.Client.Compressed = 0
	if d := Diagnose(run); !strings.Contains(fmt.Sprint(d.Findings), "nginx's defaults") {
		t.Errorf("uncompressed bursts without nginx's fix: %v", d.Findings)
	}
	run.Client.Stutter.BurstShare, run.Client.Compressed = 0.01, 0
	d = Diagnose(run)
	for _, f := range d.Findings {
		if strings.Contains(f.Text, "stutters") || strings.Contains(f.Text, "gzip") {
			t.Errorf("smooth, uncompressed run: %s", f.Text)
		}
	}
}

// TestDiagnoseOllamaShares: Ollama's TTFT (load + prompt eval) leaves the
// wait for a slot out, so the share is of the time from arrival (queue +
// TTFT), never "321% of it", and the sentence says who waited for what.
func TestDiagnoseOllamaShares(t *testing.T) {
	seed := reporttest.SeedSpecs()[0]
	seed.FirstVisible, seed.EngineTTFT = 0.02, 0.0036
	run := runOf("none", seed)
	run.Engine.Source = &result.EngineSource{Kind: result.SourceOllama}
	run.Engine.TTFTS = &result.Hist{Mean: 0.0036, Count: 20, Exact: true}
	run.Engine.QueueS = &result.Hist{Mean: 0.0115, Count: 20, Exact: true}
	d := DiagnoseOn(run, Basis{Thresholds: DefaultThresholds})
	var text strings.Builder
	for _, f := range d.Findings {
		text.WriteString(f.Text + " ")
	}
	got := text.String()
	if strings.Contains(got, "321%") || !strings.Contains(got, "requests waited 0.0115 s on average for a slot, 76% of their time to the first token") {
		t.Errorf("findings: %s", got)
	}
}
