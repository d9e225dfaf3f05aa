package compare

import (
	"testing"

	"github.com/servebench/servebench/bench/result"
)

// TestUsableQuantity: a structured answer's time to usable output is a
// sample of client.usable, with a default limit; an answer never usable
// (or not structured) gives none.
func TestUsableQuantity(t *testing.T) {
	recs := []result.Record{
		{Run: "streaming", Stream: true, FirstVisibleS: 0.03, UsableS: 0.39, E2ES: 0.4, OutputTokens: 26},
		{Run: "streaming", Stream: true, FirstVisibleS: 0.03, E2ES: 0.4, OutputTokens: 26, UsableError: "the JSON never closed"},
	}
	s := samplesOf(recs, "streaming", false, nil)
	if got := s.samples("client.usable"); len(got) != 1 || got[0] != 0.39 {
		t.Errorf("client.usable samples %v, want [0.39]", got)
	}
	found := false
	for _, th := range DefaultThresholds() {
		found = found || th.Quantity == "client.usable"
	}
	if _, err := ParseThreshold("client.usable.p90=+5ms"); err != nil || !found {
		t.Errorf("limit: %v, default %v", err, found)
	}
}
