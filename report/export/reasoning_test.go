package export

import (
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// TestExportReasoning: a request that reasoned fills the CSV's reasoning
// columns, and a vLLM export of a run that reasoned says that vLLM's ttft
// was a thinking token.
func TestExportReasoning(t *testing.T) {
	r := result.Record{Run: "streaming", Stream: true, FirstTokenS: 0.03, FirstReasoningS: 0.03, LastReasoningS: 2,
		FirstVisibleS: 2.1, E2ES: 3, OutputTokens: 110, ReasoningTokens: 100, AnswerTokens: 10}
	row := csvRow(&r)
	reasoning := slices.Index(CSVHeader, "first_reasoning_s")
	if got, want := row[reasoning:reasoning+5], []string{"0.030000", "1.970000", "100", "10", "0.100000"}; !slices.Equal(got, want) {
		t.Errorf("reasoning cells %q, want %q", got, want)
	}
	if len(row) != len(CSVHeader) {
		t.Errorf("%d cells for %d columns", len(row), len(CSVHeader))
	}
	res := &result.Results{}
	run := result.Run{Name: "streaming", Stream: true, Client: result.ClientStats{ReasoningTokens: stats.Summarize([]float64{100})}}
	if d := extra(res, &run).Definitions; !strings.Contains(d, "reasoning token") {
		t.Errorf("definitions of a run that reasoned: %q", d)
	}
	run.Client.ReasoningTokens = nil
	if d := extra(res, &run).Definitions; d != definitions {
		t.Errorf("definitions of a run that did not reason changed: %q", d)
	}
}
