package result

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/servebench/servebench/report/stats"
)

// TestJSONKeys pins the results.json keys issues 3, 4 and 6 name: users
// script against them, so a rename must fail here.
func TestJSONKeys(t *testing.T) {
	sum := stats.Summarize([]float64{1, 2})
	h := &Hist{Mean: 1, Count: 2}
	one := 1.0
	res := Results{Schema: Schema, Runs: []Run{{
		Name: "streaming", Errors: map[string]int{"timeout": 1},
		Client: ClientStats{FirstVisibleS: sum, E2ES: sum, TTFBS: sum, ITLS: sum, TPOTS: sum, OutputTokens: sum},
		Engine: EngineStats{TTFTS: h, E2ES: h, QueueS: h, PrefillS: h, DecodeS: h, Reconciliation: &Reconciliation{}},
	}}, Server: Server{Startup: &Startup{HealthOKS: &one}}}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, key := range []string{`"schema":"servebench/v1"`, `"manifest"`, `"command_line"`, `"servebench_version"`,
		`"server"`, `"warnings"`, `"runs"`, `"name"`, `"stream"`, `"requests"`, `"ok"`, `"errors"`,
		`"first_visible_s"`, `"e2e_s"`, `"ttfb_s"`, `"itl_s"`, `"tpot_s"`, `"output_tokens"`,
		`"mean"`, `"median"`, `"p90"`, `"p99"`, `"min"`, `"max"`, `"n"`,
		`"ttft_s"`, `"queue_s"`, `"prefill_s"`, `"decode_s"`, `"count"`, `"p50_est"`, `"p90_est"`, `"p99_est"`,
		`"reconciliation"`, `"sent"`, `"engine_count"`, `"foreign_traffic"`, `"health_ok_s"`} {
		if !strings.Contains(s, key) {
			t.Errorf("results.json lacks %s", key)
		}
	}
	// Absent quantities are left out, never written as zero.
	b, _ = json.Marshal(EngineStats{})
	if string(b) != "{}" {
		t.Errorf("empty engine stats = %s, want {}", b)
	}
}
