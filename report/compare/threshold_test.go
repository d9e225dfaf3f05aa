package compare

import (
	"math"
	"strings"
	"testing"
)

func TestParseThreshold(t *testing.T) {
	for _, tc := range []struct {
		in       string
		key      string
		rel, abs float64
		off      bool
		str      string // String() round trip
	}{
		{"client.e2e.median=10%", "client.e2e.median", 0.10, 0, false, "10%"},                         // relative
		{"engine.ttft.mean=+5ms", "engine.ttft.mean", 0, 0.005, false, "+5ms"},                        // absolute, ms
		{"engine.ttft.mean=+0.005s", "engine.ttft.mean", 0, 0.005, false, "+5ms"},                     // absolute, s
		{"client.tpot.median=+250us", "client.tpot.median", 0, 0.00025, false, "+0.25ms"},             // absolute, us
		{"client.e2e.p90=10%,+2ms", "client.e2e.p90", 0.10, 0.002, false, "10%,+2ms"},                 // both parts
		{" client.e2e.p99 = +1.5s , 20% ", "client.e2e.p99", 0.20, 1.5, false, "20%,+1.5s"},           // spaces, order
		{"errors.rate=+0.01", "errors.rate", 0, 0.01, false, "+0.01"},                                 // unitless absolute
		{"throughput.output_tokens_per_s=5%", "throughput.output_tokens_per_s", 0.05, 0, false, "5%"}, // dotless stat
		{"throughput.requests_per_s=+0.5", "throughput.requests_per_s", 0, 0.5, false, "+0.5"},        // absolute drop
		{"engine.queue.mean=off", "engine.queue.mean", 0, 0, true, "off"},                             // disable a default
		{"engine.ttft.p90=12.5%", "engine.ttft.p90", 0.125, 0, false, "12.5%"},                        // engine estimate
	} {
		th, err := ParseThreshold(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if th.Key() != tc.key || math.Abs(th.Rel-tc.rel) > 1e-12 || math.Abs(th.Abs-tc.abs) > 1e-12 || th.Off != tc.off {
			t.Errorf("%q = %+v, want key %s rel %v abs %v off %v", tc.in, th, tc.key, tc.rel, tc.abs, tc.off)
		}
		if th.String() != tc.str {
			t.Errorf("%q.String() = %q, want %q", tc.in, th.String(), tc.str)
		}
	}
}

func TestParseThresholdErrors(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want: a phrase of the error
	}{
		{"client.e2e.median", "no '='"},                                    // no limit
		{"=10%", "no QUANTITY.STAT"},                                       // no key
		{"e2e=10%", "no QUANTITY.STAT"},                                    // no dot
		{"client.latency.median=10%", `unknown quantity "client.latency"`}, // typo'd quantity
		{"client.e2e.p95=10%", `no statistic "p95"`},                       // unsupported statistic
		{"engine.ttft.median=10%", `no statistic "median"`},                // engine has p50, not median
		{"client.e2e.median=", "empty limit"},                              // nothing after '='
		{"client.e2e.median=ten%", `"ten" is not a number`},                // not a number
		{"client.e2e.median=-10%", "negative"},                             // a negative limit
		{"client.e2e.median=0%", "not above zero"},                         // zero
		{"client.e2e.median=+5", "needs a unit"},                           // time without unit
		{"client.e2e.median=+5min", "needs a unit: ms, s or us"},           // unknown unit
		{"errors.rate=+1ms", "not a number"},                               // unit on a unitless quantity
		{"client.e2e.median=10%,20%", "two relative limits"},               // twice
		{"client.e2e.median=+1ms,+2ms", "two absolute limits"},             // twice
		{"client.e2e.median=NaN%", "not a number"},                         // NaN
	} {
		_, err := ParseThreshold(tc.in)
		if err == nil {
			t.Errorf("%q: no error, want %q", tc.in, tc.want)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "Thresholds \""+tc.in+"\"") || !strings.Contains(msg, "QUANTITY.STAT=LIMIT") {
			t.Errorf("%q: error %q lacks %q, the value or the expected form", tc.in, msg, tc.want)
		}
	}
}

func TestThresholdPast(t *testing.T) {
	rel, _ := ParseThreshold("client.e2e.median=10%")
	both, _ := ParseThreshold("client.e2e.median=10%,+1ms")
	thr, _ := ParseThreshold("throughput.output_tokens_per_s=10%")
	for _, tc := range []struct {
		name      string
		th        Threshold
		base, new float64
		higher    bool
		want      bool
	}{
		{"11% worse", rel, 0.100, 0.111, true, true},
		{"exactly 10% is not past", rel, 0.100, 0.110, true, false},
		{"better", rel, 0.100, 0.050, true, false},
		{"50% of 0.2ms is under the +1ms floor", both, 0.0002, 0.0003, true, false},
		{"20% and +2ms", both, 0.010, 0.012, true, true},
		{"throughput drop", thr, 100, 85, false, true},
		{"throughput rise", thr, 100, 150, false, false},
		{"from zero counts as past a relative limit", rel, 0, 0.001, true, true},
	} {
		if got := tc.th.past(tc.base, tc.new, tc.higher); got != tc.want {
			t.Errorf("%s: past = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDefaultsParseBack: every default is valid syntax that parses back to itself.
func TestDefaultsParseBack(t *testing.T) {
	for _, d := range DefaultThresholds() {
		th, err := ParseThreshold(d.Key() + "=" + d.String())
		if err != nil || math.Abs(th.Rel-d.Rel) > 1e-12 || math.Abs(th.Abs-d.Abs) > 1e-12 {
			t.Errorf("default %s=%s: parsed %+v, %v", d.Key(), d, th, err)
		}
	}
	if h := Help(); !strings.Contains(h, "client.e2e.median=10%,+1ms") || !strings.Contains(h, "engine.queue") {
		t.Errorf("Help() lacks the defaults:\n%s", h)
	}
}
