package result

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseSLO(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want SLO
		str  string
	}{
		// every key, in the order
		{"ttft=200ms,tpot=50ms,itl=100ms,e2e=10s", SLO{TTFT: 200 * time.Millisecond, TPOT: 50 * time.Millisecond, ITL: 100 * time.Millisecond, E2E: 10 * time.Second}, "ttft=200ms,tpot=50ms,itl=100ms,e2e=10s"},
		// ttfo: the first answer token (a reasoning model's first visible output)
		{"ttfo=3s,ttft=100ms", SLO{TTFT: 100 * time.Millisecond, TTFO: 3 * time.Second}, "ttft=100ms,ttfo=3s"},
		// a subset, out of order, spaces and upper case tolerated; String is canonical
		{" E2E=1.5s , ttft=0.2s", SLO{TTFT: 200 * time.Millisecond, E2E: 1500 * time.Millisecond}, "ttft=200ms,e2e=1.5s"},
		// one key
		{"itl=30ms", SLO{ITL: 30 * time.Millisecond}, "itl=30ms"},
		// a percentile: judged on the run, not per request (issue 31)
		{"TTFT.p99=2s,tpot=50ms", SLO{TTFT: 2 * time.Second, TPOT: 50 * time.Millisecond, P: [5]float64{99}}, "ttft.p99=2s,tpot=50ms"},
		{"e2e.p99.9=10s", SLO{E2E: 10 * time.Second, P: [5]float64{3: 99.9}}, "e2e.p99.9=10s"},
	} {
		got, err := ParseSLO(tc.in)
		if err != nil || got != tc.want || got.String() != tc.str {
			t.Errorf("ParseSLO(%q) = %+v %q, %v; want %+v %q", tc.in, got, got.String(), err, tc.want, tc.str)
		}
		if again, err := ParseSLO(got.String()); err != nil || again != got {
			t.Errorf("String %q does not parse back: %+v, %v", got.String(), again, err)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", "empty SLO"},
		{"ttfb=200ms", `unknown key "ttfb"`},                     // a vocabulary name that is not an SLO key
		{"ttft", `"ttft" has no '='`},                            // no value
		{"tpot=fast", "key tpot"},                                // not a duration
		{"e2e=200", "key e2e"},                                   // a number without unit
		{"itl=-5ms", "key itl: -5ms: expected a duration > 0"},   // negative
		{"ttft=0s", "key ttft"},                                  // zero means "not set": refuse it given explicitly
		{"ttft=1s,ttft=2s", "key ttft given twice"},              // repeated
		{"ttft=1s,ttft.p99=2s", "key ttft given twice"},          // per request and a percentile of one key
		{"ttft.99=2s", "a percentile in (0, 100] after the dot"}, // no p
		{"ttft.p0=2s", "a percentile in (0, 100]"},               // out of range
		{"ttft.p101=2s", "a percentile in (0, 100]"},             // out of range
	} {
		_, err := ParseSLO(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSLO(%q) error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

// rec is a successful streaming record with the given first token, first
// visible, e2e and output tokens (seconds); events one per token from first
// visible to e2e.
func rec(ft, e2e float64, out int) Record {
	r := Record{Stream: true, FirstTokenS: ft, FirstVisibleS: ft, E2ES: e2e, OutputTokens: out}
	for i := range out {
		at := ft
		if out > 1 {
			at = ft + (e2e-ft)*float64(i)/float64(out-1)
		}
		r.Events = append(r.Events, [2]float64{at, 1})
	}
	return r
}

func TestJudgeAndGoodput(t *testing.T) {
	slo, _ := ParseSLO("ttft=200ms,tpot=50ms,e2e=2s")
	fast := rec(0.1, 1.0, 21)      // tpot 45 ms
	slowFirst := rec(0.3, 1.2, 21) // ttft 300 ms
	slowTPOT := rec(0.1, 1.5, 21)  // tpot 70 ms
	late := rec(0.1, 1.0, 21)      // fine from its send, but sent 1.5 s late (open loop)
	late.IntendedLagS = 1.5        // e2e from intended 2.5 s, ttft 1.6 s
	failed := rec(0.1, 1.0, 21)
	failed.Error = "timeout"
	warm := rec(0.1, 1.0, 21)
	warm.Warmup = true
	retried := rec(0.1, 1.0, 21)
	retried.Retried, retried.Error = true, "http_status"
	one := Record{Stream: true, FirstTokenS: 0.1, FirstVisibleS: 0.1, E2ES: 0.1, OutputTokens: 1, Events: [][2]float64{{0.1, 1}}}
	nonStream := Record{FirstTokenS: 1.5, FirstVisibleS: 1.5, E2ES: 1.5, OutputTokens: 64} // slow TTFT: whole body

	for _, tc := range []struct {
		name string
		r    Record
		want bool
		met  [5]bool
	}{
		{"meets all", fast, true, [5]bool{true, true, false, true}},
		{"ttft too slow", slowFirst, false, [5]bool{false, true, false, true}},
		{"tpot too slow", slowTPOT, false, [5]bool{true, false, false, true}},
		{"late send counts from intended time", late, false, [5]bool{false, true, false, false}},
		{"failed never attains", failed, false, [5]bool{}},
		{"one token: no tpot to judge", one, true, [5]bool{true, true, false, true}},
		{"non-streaming: ttft is the whole body", nonStream, false, [5]bool{false, true, false, true}},
	} {
		got, met := slo.Judge(&tc.r)
		if got != tc.want || met != tc.met {
			t.Errorf("%s: Judge = %v %v, want %v %v", tc.name, got, met, tc.want, tc.met)
		}
	}

	recs := []Record{fast, slowFirst, slowTPOT, late, failed, warm, retried, one}
	g := NewGoodput(slo, recs, 4)
	// Outcomes: fast, slowFirst, slowTPOT, late, failed, one (warm-up and
	// the retried attempt are not outcomes); attained: fast and one.
	want := Goodput{SLO: "ttft=200ms,tpot=50ms,e2e=2s", Attained: 2, Requests: 6, Attainment: 100 * 2.0 / 6, RatePerS: 0.5}
	if g.SLO != want.SLO || g.Attained != want.Attained || g.Requests != want.Requests ||
		math.Abs(g.Attainment-want.Attainment) > 1e-9 || g.RatePerS != want.RatePerS {
		t.Errorf("NewGoodput = %+v, want %+v", g, want)
	}
	if g.Met["ttft"] != 3 || g.Met["tpot"] != 4 || g.Met["e2e"] != 4 || len(g.Met) != 3 {
		t.Errorf("Met = %v, want ttft 3, tpot 4, e2e 4 and no itl key", g.Met)
	}
}

// TestTokenGapsMultiToken: a chunk of k tokens after a gap g is k tokens of
// g/k each, so a speculative-decoding stream has the per-token ITL of its
// token rate, not of its chunk rate.
func TestTokenGapsMultiToken(t *testing.T) {
	r := Record{Stream: true, FirstTokenS: 0.1, FirstVisibleS: 0.1, E2ES: 0.4, OutputTokens: 9,
		// first chunk 1 token, then 4 tokens after 100 ms, 4 after 200 ms
		Events: [][2]float64{{0.1, 1}, {0.2, 4}, {0.4, 4}}}
	var per []float64
	r.TokenGaps(func(g float64, k int) {
		for range k {
			per = append(per, g/float64(k))
		}
	})
	want := []float64{0.025, 0.025, 0.025, 0.025, 0.05, 0.05, 0.05, 0.05}
	if len(per) != len(want) {
		t.Fatalf("per-token gaps %v, want %v", per, want)
	}
	for i := range want {
		if math.Abs(per[i]-want[i]) > 1e-12 {
			t.Fatalf("per-token gaps %v, want %v", per, want)
		}
	}
	if m, ok := r.MaxTokenGap(); !ok || math.Abs(m-0.05) > 1e-12 {
		t.Errorf("MaxTokenGap = %v, %v; want 0.05 (the 200 ms gap over 4 tokens, not 200 ms)", m, ok)
	}
	slo, _ := ParseSLO("itl=60ms")
	if ok, _ := slo.Judge(&r); !ok {
		t.Errorf("itl=60ms: a 200 ms gap over 4 tokens (50 ms a token) should meet it")
	}
	slo, _ = ParseSLO("itl=40ms")
	if ok, _ := slo.Judge(&r); ok {
		t.Errorf("itl=40ms: 50 ms a token should miss it")
	}
	// TPOT uses the output token count, so chunks do not change it:
	// (0.4 - 0.1) / 8.
	if v, ok := r.TPOT(); !ok || math.Abs(v-0.0375) > 1e-12 {
		t.Errorf("TPOT = %v, %v; want 0.0375", v, ok)
	}
}

// TestJudgeReasoning: a reasoning model's first token (thinking) comes
// fast and its first answer token late: ttft passes where ttfo fails, and
// tpot judges the answer's pace, not one diluted by the thinking tokens.
func TestJudgeReasoning(t *testing.T) {
	// 0.05 s first (reasoning) token, 100 reasoning tokens to 2.0 s, the
	// answer from 2.1 s to 3.0 s over 10 tokens: answer TPOT 0.1 s.
	r := Record{Stream: true, FirstTokenS: 0.05, FirstReasoningS: 0.05, LastReasoningS: 2.0, FirstVisibleS: 2.1, E2ES: 3.0,
		OutputTokens: 110, ReasoningTokens: 100, AnswerTokens: 10}
	for _, tc := range []struct {
		slo  string
		want bool
	}{
		{"ttft=100ms", true},         // the thinking started at once
		{"ttfo=1s", false},           // the user saw nothing for 2.1 s
		{"ttfo=3s,ttft=100ms", true}, // both
		{"tpot=50ms", false},         // answer TPOT 100 ms (TPOT over all 110 tokens: 8.3 ms)
		{"tpot=150ms,ttfo=2200ms", true},
	} {
		slo, err := ParseSLO(tc.slo)
		if err != nil {
			t.Fatal(err)
		}
		if got, met := slo.Judge(&r); got != tc.want {
			t.Errorf("%s: Judge = %v (met %v), want %v", tc.slo, got, met, tc.want)
		}
	}
	if v, ok := r.AnswerTPOT(); !ok || math.Abs(v-0.1) > 1e-12 {
		t.Errorf("AnswerTPOT = %v, %v; want 0.1", v, ok)
	}
	if v, ok := r.Thinking(); !ok || math.Abs(v-1.95) > 1e-12 {
		t.Errorf("Thinking = %v, %v; want 1.95", v, ok)
	}
}

// TestPercentileGoodput: ttft.p90 judges the run's 90th percentile (a
// failed request counting as beyond any bound), while attainment counts
// only tpot, the key without a percentile.
func TestPercentileGoodput(t *testing.T) {
	slo, err := ParseSLO("ttft.p90=200ms,tpot=50ms")
	if err != nil {
		t.Fatal(err)
	}
	var recs []Record
	for i := range 9 {
		recs = append(recs, rec(0.1+0.01*float64(i), 1.0, 21)) // ttft 100-180 ms, tpot ~45 ms
	}
	recs = append(recs, rec(0.5, 1.4, 21)) // the slowest tenth: ttft 500 ms, tpot 45 ms
	g := NewGoodput(slo, recs, 10)
	if g.Attained != 10 || g.Attainment != 100 {
		t.Errorf("attainment %d (%.0f%%): want all 10, ttft judged on the run only", g.Attained, g.Attainment)
	}
	if len(g.Percentiles) != 1 || g.Percentiles[0].Key != "ttft.p90" || !g.Percentiles[0].Met || math.Abs(g.Percentiles[0].ValueS-0.18) > 0.001 {
		t.Fatalf("percentiles %+v, want ttft.p90 = 0.18 s met", g.Percentiles)
	}
	if !g.Held(100) {
		t.Error("Held(100) = false")
	}
	recs[0].Error = "boom" // a failure: beyond any bound, and the 9th of 10 is now 500 ms
	recs[1].FirstTokenS = 0.6
	g = NewGoodput(slo, recs, 10)
	if p := g.Percentiles[0]; p.Met || p.ValueS < 0.5 || g.Held(0) {
		t.Errorf("with a failure and a slow request: %+v held=%v, want the p90 missed", p, g.Held(0))
	}
}
