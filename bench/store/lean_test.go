package store

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
)

// promptTokensWarning is PromptAcc's result over recs.
func promptTokensWarning(recs []result.Record) (*result.PromptTokenStats, string) {
	var a PromptAcc
	for i := range recs {
		a.Add(&recs[i])
	}
	return a.Result()
}

func TestPromptTokensWarning(t *testing.T) {
	recs := []result.Record{
		{PromptTokensRequested: 100, PromptTokens: 100},
		{PromptTokensRequested: 100, PromptTokens: 104},
		{PromptTokensRequested: 100, PromptTokens: 999, Error: "timeout"}, // failed: left out
		{PromptTokensRequested: 100, PromptTokens: 500, Warmup: true},     // warm-up: left out
		{PromptTokens: 50}, // not generated: left out
	}
	ps, w := promptTokensWarning(recs)
	if ps == nil || ps.N != 2 || ps.Exact != 1 || ps.CountedMean != 102 || !strings.Contains(w, "+2.0%") {
		t.Errorf("2%% over: %+v, %q; want a warning", ps, w)
	}
	recs[1].PromptTokens = 101
	if _, w := promptTokensWarning(recs); w != "" {
		t.Errorf("0.5%% over: warned %q", w)
	}
	if ps, _ := promptTokensWarning(recs[4:]); ps != nil {
		t.Errorf("no generated prompts: %+v", ps)
	}
}
