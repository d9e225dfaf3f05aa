package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/reporttest"
)

// withReplicas gives the seed's runs two replicas, the second idle.
func withReplicas() (*result.Results, []result.Record) {
	res, recs := reporttest.Seed()
	for i := range res.Runs {
		e := &res.Runs[i].Engine
		n, zero, hit := e.TTFTS.Count, 0.0, 0.375
		e.Replicas = []result.Replica{
			{Name: "vllm-0", Requests: &n, TTFTS: e.TTFTS, E2ES: e.E2ES, QueueS: &result.Hist{Mean: 0.25, Count: n},
				KVUsage: &result.Gauge{Mean: 0.123, Max: 0.5}, PrefixCacheHitRate: &hit},
			{Name: "vllm-1", Requests: &zero},
		}
		e.Reconciliation.IdleReplicas = []string{"vllm-1"}
	}
	return res, recs
}

// TestReplicasReport: report.md has a per-replica table beside the sum,
// with KV usage where exposed, names the idle replica, and embeds the
// replica chart, whose bars are drawn.
func TestReplicasReport(t *testing.T) {
	res, recs := withReplicas()
	charts := PlanCharts(res, recs)
	var md bytes.Buffer
	if err := Markdown(&md, res, recs, charts); err != nil {
		t.Fatal(err)
	}
	e := res.Runs[0].Engine
	for _, want := range []string{
		"## Replicas", "![Engine means by replica](replicas.png)",
		"| replica | requests | TTFT (s) | queue wait (s) | E2E (s) | KV usage mean / max | prefix cache hit rate |",
		fmt.Sprintf("| vllm-0 | %g | %.4f | 0.2500 | %.4f | 12.3%% / 50.0%% | 37.5%% |", e.TTFTS.Count, e.TTFTS.Mean, e.E2ES.Mean),
		fmt.Sprintf("| **all** | %g | %.4f |", e.Reconciliation.EngineCount, e.TTFTS.Mean),
		"| vllm-1 | 0 | - | - | - | - | - |",
		"**Idle replicas**: vllm-1 finished none",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	b, err := ReplicaChart(res)
	if err != nil {
		t.Fatal(err)
	}
	wantSeries(t, decodeChart(t, b), 2000, pal(KeyEngineTTFT, KeyQueue, KeyE2EEngine))

	plain, _ := reporttest.Seed()
	for _, c := range PlanCharts(plain, recs) {
		if c.File == FileReplicas {
			t.Error("replica chart planned for runs without replicas")
		}
	}
}
