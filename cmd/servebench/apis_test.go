package main

import (
	"math"
	"strings"
	"testing"
)

// TestTableAgentAPIs: `servebench table --endpoint messages` and
// `--endpoint responses` on the bundled engine (a child process, sped up)
// teach the seed's lesson with their own events: streaming's first visible
// output (first text delta) well below E2E, non-streaming's equal to it,
// engine TTFT the same in both modes, exact lengths, and the engine's
// request count equal to the requests sent.
func TestTableAgentAPIs(t *testing.T) {
	for _, ep := range []string{"messages", "responses"} {
		t.Run(ep, func(t *testing.T) {
			dir := t.TempDir()
			code, out, errOut := runMain("table", "--speedup", "20", "--engine-arg=--startup-speedup=1000",
				"--endpoint", ep, "--requests", "4", "--out", dir)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			if !strings.Contains(out, "Streaming") || !strings.Contains(out, "Non-streaming") {
				t.Errorf("no table:\n%s", out)
			}
			res, _ := loadSaved(t, dir)
			if len(res.Runs) != 2 {
				t.Fatalf("%d runs", len(res.Runs))
			}
			st, ns := res.Runs[0], res.Runs[1]
			for _, r := range res.Runs {
				rc := r.Engine.Reconciliation
				if r.Workload.Endpoint != ep || r.OK != 4 || rc == nil || rc.Sent != 4 || rc.EngineCount != 4 {
					t.Errorf("%s: endpoint %q, ok %d, reconciliation %+v", r.Name, r.Workload.Endpoint, r.OK, rc)
				}
				if r.Client.OutputTokens.Min != 256 || r.Client.OutputTokens.Max != 256 || r.Engine.TTFTS == nil {
					t.Fatalf("%s: output tokens %+v, engine TTFT %v", r.Name, r.Client.OutputTokens, r.Engine.TTFTS)
				}
			}
			if fv, e2e := st.Client.FirstVisibleS.Median, st.Client.E2ES.Median; fv > e2e/5 {
				t.Errorf("streaming first visible %.4f s, E2E %.4f s: want well below", fv, e2e)
			}
			if fv, e2e := ns.Client.FirstVisibleS.Median, ns.Client.E2ES.Median; math.Abs(fv-e2e) > 0.02*e2e {
				t.Errorf("non-streaming first visible %.4f s, E2E %.4f s: want equal", fv, e2e)
			}
			if a, b := st.Engine.TTFTS.Mean, ns.Engine.TTFTS.Mean; math.Abs(a-b) > 0.5*math.Max(a, b) && math.Abs(a-b) > 0.002 {
				t.Errorf("engine TTFT streaming %.5f s, non-streaming %.5f s: want unchanged", a, b)
			}
			t.Logf("%s: streaming fv %.4f e2e %.4f ttft %.5f | non-streaming fv %.4f e2e %.4f ttft %.5f", ep,
				st.Client.FirstVisibleS.Median, st.Client.E2ES.Median, st.Engine.TTFTS.Mean,
				ns.Client.FirstVisibleS.Median, ns.Client.E2ES.Median, ns.Engine.TTFTS.Mean)
		})
	}
}
