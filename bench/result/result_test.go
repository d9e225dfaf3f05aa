package result

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/stats"
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
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc["schema"]; got != Schema {
		t.Errorf("schema = %v, want %q", got, Schema)
	}
	paths := []string{"manifest.command_line", "manifest.servebench_version", "server.startup.health_ok_s", "warnings",
		"runs.0.name", "runs.0.stream", "runs.0.requests", "runs.0.ok", "runs.0.errors",
		"runs.0.engine.reconciliation.sent", "runs.0.engine.reconciliation.ok",
		"runs.0.engine.reconciliation.engine_count", "runs.0.engine.reconciliation.foreign_traffic"}
	for _, q := range []string{"first_visible_s", "e2e_s", "ttfb_s", "itl_s", "tpot_s", "output_tokens"} {
		for _, k := range []string{"mean", "median", "p90", "p99", "min", "max", "n"} {
			paths = append(paths, "runs.0.client."+q+"."+k)
		}
	}
	for _, q := range []string{"ttft_s", "e2e_s", "queue_s", "prefill_s", "decode_s"} {
		for _, k := range []string{"mean", "count", "p50_est", "p90_est", "p99_est"} {
			paths = append(paths, "runs.0.engine."+q+"."+k)
		}
	}
	for _, path := range paths {
		if !has(doc, path) {
			t.Errorf("results.json lacks %s", path)
		}
	}
	// Absent quantities are left out, never written as zero.
	b, _ = json.Marshal(EngineStats{})
	if string(b) != "{}" {
		t.Errorf("empty engine stats = %s, want {}", b)
	}
}

// has follows a dotted path ("runs.0.ok": key runs, element 0, key ok)
// through decoded JSON and reports whether it leads somewhere.
func has(v any, path string) bool {
	for _, step := range strings.Split(path, ".") {
		switch node := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = node[step]; !ok {
				return false
			}
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(node) {
				return false
			}
			v = node[i]
		default:
			return false
		}
	}
	return true
}
