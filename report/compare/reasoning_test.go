package compare

import (
	"testing"

	"github.com/servebench/servebench/bench/result"
)

// TestReasoningQuantities: a request that reasoned gives samples of the
// reasoning quantities, one that did not gives none; each takes a limit.
func TestReasoningQuantities(t *testing.T) {
	recs := []result.Record{
		{Run: "streaming", Stream: true, FirstTokenS: 0.03, FirstReasoningS: 0.03, LastReasoningS: 2, FirstVisibleS: 2.1, E2ES: 3,
			OutputTokens: 110, ReasoningTokens: 100, AnswerTokens: 10},
		{Run: "streaming", Stream: true, FirstTokenS: 0.03, FirstVisibleS: 0.03, E2ES: 1, OutputTokens: 100},
	}
	s := samplesOf(recs, "streaming", false, nil)
	for name, want := range map[string]float64{
		"client.first_reasoning": 0.03, "client.thinking": 1.97, "client.reasoning_tokens": 100,
		"client.answer_tokens": 10, "client.answer_tpot": 0.1,
	} {
		got := s.samples(name)
		if len(got) != 1 || got[0] < want-1e-9 || got[0] > want+1e-9 {
			t.Errorf("%s samples %v, want [%g] (the request that reasoned only)", name, got, want)
		}
		if _, err := ParseThreshold(name + ".median=10%"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
