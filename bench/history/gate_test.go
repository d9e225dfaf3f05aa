package history_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/history"
)

// TestParseBaseline reads the gate's keys and leaves the database's own
// (a postgres URL's sslmode) to it.
func TestParseBaseline(t *testing.T) {
	for _, c := range []struct {
		in, dsn, err string
		last, min    int
		branch       string
		keys         string
	}{
		{in: "history:h.db", dsn: "h.db", last: history.DefaultLast, min: history.DefaultMinRuns, keys: fmt.Sprint(history.DefaultGateKeys)},
		{in: "history:h.db?branch=main&last=10&min=3&stat=engine.itl.mean", dsn: "h.db", branch: "main", last: 10, min: 3, keys: "[engine.itl.mean]"},
		{in: "history:postgres://u@127.0.0.1:5432/b?sslmode=disable&last=5", dsn: "postgres://u@127.0.0.1:5432/b?sslmode=disable", last: 5, min: history.DefaultMinRuns, keys: fmt.Sprint(history.DefaultGateKeys)},
		{in: "history:h.db?lats=5", err: `unknown key "lats"`}, // a typo is refused, not ignored
		{in: "history:h.db?last=1", err: "at least 2"},
		{in: "history:h.db?level=95", err: "in (0, 1)"},
		{in: "history:h.db?since=soon", err: "since=soon"},
		{in: "history:", err: "expected history:DB"},
	} {
		b, err := history.ParseBaseline(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one saying %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || b.DSN != c.dsn || b.Last != c.last || b.Min != c.min || b.Branch != c.branch || fmt.Sprint(b.Keys) != c.keys {
			t.Errorf("%s: %+v, %v", c.in, b, err)
		}
	}
}

// TestJudge: a run past the history's noise on the worse side regresses,
// within it or better does not; a failing streak stays out of the
// baseline, an isolated failure is back in it.
func TestJudge(t *testing.T) {
	ctx := context.Background()
	st := open(t, filepath.Join(t.TempDir(), "h.db"))
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	add := func(i int, e2e float64, gate string) {
		es := history.FromResults(results(e2e, t0.Add(time.Duration(i)*time.Hour), fmt.Sprintf("c%d", i), nil), nil, "d")
		es[0].Gate = gate
		if err := st.Add(ctx, es); err != nil {
			t.Fatal(err)
		}
	}
	noise := []float64{0, 1, -1, 0.5, -0.5, 1, -1, 0.2, -0.2, 0}
	for i, n := range noise {
		add(i, 0.1*(1+n/100), "")
	}
	b, err := history.ParseBaseline("history:x?stat=client.e2e.median&stat=throughput.output_tokens_per_s")
	if err != nil {
		t.Fatal(err)
	}
	judge := func(e2e, tput float64) history.Judgement {
		es := history.FromResults(results(e2e, t0.Add(100*time.Hour), "new", nil), nil, "new")
		es[0].Stats["throughput.output_tokens_per_s"] = tput
		js, err := b.Judge(ctx, st, es, t0.Add(101*time.Hour))
		if err != nil || len(js) != 1 {
			t.Fatalf("%v, %d judgements", err, len(js))
		}
		return js[0]
	}
	if j := judge(0.106, 640); !j.Regressed() || len(j.History) != len(noise) {
		t.Errorf("+6%% E2E: regressed %v over %d runs, want a regression over %d", j.Regressed(), len(j.History), len(noise))
	}
	if j := judge(0.1005, 640); j.Regressed() {
		t.Errorf("+0.5%% E2E: regressed")
	}
	if j := judge(0.09, 640); j.Regressed() {
		t.Errorf("-10%% E2E (better): regressed")
	}
	if j := judge(0.1, 600); !j.Regressed() {
		t.Errorf("throughput -6%%: not regressed (lower is worse there)")
	}
	floored := b
	floored.Floors = map[string]history.Floor{"client.e2e.median": {Rel: 0.10}}
	js, err := floored.Judge(ctx, st, history.FromResults(results(0.106, t0.Add(100*time.Hour), "new", nil), nil, "new"), t0)
	if err != nil || js[0].Regressed() || !js[0].Rows[0].WithinLimit {
		t.Errorf("+6%% E2E under a 10%% floor: %+v, %v; want worse, within limit", js, err)
	}
	add(20, 0.2, history.GateFail) // an isolated failure, then a pass: noise, back in the baseline
	add(21, 0.1, history.GatePass)
	add(22, 0.106, history.GateFail) // the current failing streak: left out
	add(23, 0.107, history.GateFail)
	j := judge(0.106, 640)
	var commits []string
	for _, e := range j.History {
		commits = append(commits, e.Commit())
	}
	if got := strings.Join(commits, " "); !strings.HasSuffix(got, "c9 c20 c21") || j.Regressed() {
		t.Errorf("baseline %s (regressed %v), want it to end c9 c20 c21, the 0.2 outlier widening it past +6%%", got, j.Regressed())
	}
	short, _ := history.ParseBaseline("history:x?min=50")
	js, _ = short.Judge(ctx, st, history.FromResults(results(0.5, t0.Add(100*time.Hour), "new", nil), nil, "n"), t0)
	if len(js) != 1 || js[0].Judged() || js[0].Regressed() {
		t.Errorf("with too few runs: %+v, want no verdict", js)
	}
}
