package report

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/report/reporttest"
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
			[]string{"2.1 s", "queue wait (2 s)", "overloaded"}},
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

func summaryOf(v float64) *stats.Summary { return stats.Summarize([]float64{v}) }
