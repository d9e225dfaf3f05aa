package sim

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSpecDecodingLogLine: with speculative decoding the stats period also
// prints vLLM's "SpecDecoding metrics" line (SpecDecodingLogging.log), its
// figures those of the drafts in the period: at acceptance 1 every draft is
// accepted, so the mean acceptance length is K+1.
func TestSpecDecodingLogLine(t *testing.T) {
	e, log := startStatsLogged(t, func(o *Options) { o.SpeculativeTokens, o.AcceptanceRate = 2, 1 })
	resp, err := http.Post(e.BaseURL()+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"speculate","max_tokens":64,"ignore_eos":true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	time.Sleep(60 * time.Millisecond)
	line := regexp.MustCompile(`\[metrics\.py:\d+\] SpecDecoding metrics: Mean acceptance length: (\d+\.\d\d), Accepted throughput: \d+\.\d\d tokens/s, Drafted throughput: \d+\.\d\d tokens/s, Accepted: (\d+) tokens, Drafted: (\d+) tokens, Per-position acceptance rate: ([0-9., ]+), Avg Draft acceptance rate: (\d+\.\d)%`)
	ms := line.FindAllStringSubmatch(log.String(), -1)
	if len(ms) == 0 {
		t.Fatalf("no SpecDecoding line in the log:\n%s", log.String())
	}
	accepted, drafted := 0, 0
	for _, m := range ms {
		if m[1] != "3.00" || m[4] != "1.000, 1.000" || m[5] != "100.0" || m[2] != m[3] {
			t.Errorf("line %q: want length 3.00, rates 1.000, 1.000, 100.0%%, accepted = drafted", m[0])
		}
		a, _ := strconv.Atoi(m[2])
		d, _ := strconv.Atoi(m[3])
		accepted, drafted = accepted+a, drafted+d
	}
	// 64 tokens: the prefill's 1, then 21 steps of 2 drafts + bonus (63).
	if accepted != 42 || drafted != 42 {
		t.Errorf("lines add up to %d accepted of %d drafted, want 42 of 42", accepted, drafted)
	}
}
