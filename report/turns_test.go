package report

import (
	"bytes"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
)

// TestTurnRows: records group by turn (medians, mean prompt and cached
// tokens); failures, warm-up and single requests are left out.
func TestTurnRows(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var recs []result.Record
	for s := range 3 {
		for turn := 1; turn <= 2; turn++ {
			recs = append(recs, result.Record{Run: "r", Index: s, Session: string(rune('a' + s)), Turn: turn, Start: start,
				FirstVisibleS: 0.01 * float64(turn+s), FirstTokenS: 0.01 * float64(turn+s), E2ES: 1,
				PromptTokens: 100 * turn, CachedTokens: 80 * (turn - 1)})
		}
	}
	recs = append(recs,
		result.Record{Run: "r", Session: "x", Turn: 2, E2ES: 1, Error: "http_status"},         // failed
		result.Record{Run: "r", Session: "y", Turn: 1, E2ES: 1, Warmup: true, FirstTokenS: 9}, // warm-up
		result.Record{Run: "r", E2ES: 1, FirstTokenS: 9})                                      // not a session
	rows := TurnRows("r", recs)
	if len(rows) != 2 || rows[0].N != 3 || rows[1].N != 3 {
		t.Fatalf("rows %+v", rows)
	}
	if rows[0].FirstTokenP50 != 0.02 || rows[1].FirstVisibleP50 != 0.03 || rows[1].PromptTokens != 200 ||
		rows[1].CachedTokens != 80 || rows[0].CachedKnown || !rows[1].CachedKnown {
		t.Errorf("rows %+v", rows)
	}
	res := &result.Results{Runs: []result.Run{{Name: "r", Stream: true}}}
	if !hasTurns(res, recs) || hasTurns(res, recs[len(recs)-1:]) {
		t.Error("hasTurns")
	}
	var b strings.Builder
	writeTurnsSection(&b, res, recs, nil, func(string) {})
	if !strings.Contains(b.String(), "| 2 | 3 | 0.03 s | 0.03 s | 1 s | 200 | 80 |") || !strings.Contains(b.String(), "| 1 | 3 | 0.02 s | 0.02 s | 1 s | 100 | - |") {
		t.Errorf("section:\n%s", b.String())
	}
	img, err := TurnsChart(res, recs)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(img)); err != nil || cfg.Width != ChartWidth {
		t.Errorf("turns.png: %v %+v", err, cfg)
	}
}

func TestTrafficText(t *testing.T) {
	for _, tc := range []struct {
		w    result.Workload
		want string
	}{
		{result.Workload{Source: "fixed"}, ""},
		{result.Workload{Source: "synthetic", InputTokens: "lognormal:512,256", OutputTokens: "128", Turns: "4", ThinkTimeS: "uniform:1-2",
			SharedPrefixTokens: 1024, PrefixGroups: 8, PrefixPick: "uniform", Seed: 3},
			"synthetic, input tokens lognormal:512,256, output tokens 128, sessions of 4 turns, think time uniform:1-2 s, 8 shared prefixes of 1024 tokens (uniform pick), seed 3"},
		{result.Workload{Source: "sharegpt", SourceFile: "sg.json", SourceSHA256: "0123456789abcdef", SkippedEntries: 2},
			"sharegpt `sg.json` (sha256 0123456789ab…), 2 entries skipped, seed 0"},
		{result.Workload{Source: "mooncake", SourceFile: "t.jsonl", SourceSHA256: "ab", Trace: &result.TraceWorkload{Format: "mooncake", Speed: 2, Entries: 6, SpanS: 1.25, WindowDurationS: 60}},
			"mooncake `t.jsonl` (sha256 ab…), trace of 6 requests over 1.25 s, 2x speed, window 0 s + 60 s, seed 0"},
	} {
		if got := TrafficText(tc.w); got != tc.want {
			t.Errorf("TrafficText = %q\nwant %q", got, tc.want)
		}
	}
}
