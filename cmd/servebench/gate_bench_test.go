package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/report/compare"
)

// gateRuns is K for BenchmarkGateFalseAlarm: runs of each build.
const gateRuns = 16

// gateSpeedup is the unchanged build's --speedup; the slower build's is
// 10% slower: every modelled duration, decode steps included, 1.1x as long.
const gateSpeedup = 10.0

// gateLimits are the gate's limits in the benchmark: the defaults, with
// client.e2e.median at 5% so that a 10% slower engine is past it (at the
// default 10% a change of +10% is past it half the time).
var gateLimits = []string{"client.e2e.median=5%"}

// BenchmarkGateFalseAlarm is issue 30's measure of the CI gate: the
// bundled engine run K times unchanged, and K times 10% slower, at
// --concurrency 8 and at an open-loop rate; it reports how often the gate
// says REGRESSION between unchanged runs (false alarms) and against the
// slower ones (caught), for (a) one run a side under the per-request test
// and under the limits alone, (b) the run-level test with 3 and 5 runs a
// side, (c) one new run against a history of N=10. Side pairs for (b) and
// (c) are drawn from the K runs (resampled; not independent, so read the
// rates as estimates). It takes minutes:
//
//	go test ./cmd/servebench -run '^$' -bench GateFalseAlarm -benchtime 1x -timeout 30m
func BenchmarkGateFalseAlarm(b *testing.B) {
	for _, wl := range []struct {
		name string
		args []string
	}{
		{"closed-c8", []string{"--concurrency", "8", "--requests", "64"}},
		{"open-rate10", []string{"--rate", "10", "--requests", "64"}},
	} {
		b.Run(wl.name, func(b *testing.B) {
			same := gateRepeats(b, gateSpeedup, wl.args)
			slow := gateRepeats(b, gateSpeedup/1.1, wl.args)
			th := make([]compare.Threshold, len(gateLimits))
			for i, s := range gateLimits {
				var err error
				if th[i], err = compare.ParseThreshold(s); err != nil {
					b.Fatal(err)
				}
			}
			rates := gateRates(b, same.Repeats, slow.Repeats, th)
			var out strings.Builder
			fmt.Fprintf(&out, "%s: K=%d runs a build, run %s --speedup %g (slower: %.4g)\n", wl.name, gateRuns, strings.Join(wl.args, " "), gateSpeedup, gateSpeedup/1.1)
			fmt.Fprintf(&out, "  %-44s %12s %10s %8s  %s\n", "gate", "false alarm", "caught", "trials", "false alarms by figure")
			for _, r := range rates {
				fmt.Fprintf(&out, "  %-44s %11.1f%% %9.1f%% %8d  %s\n", r.name, 100*r.falseAlarm, 100*r.caught, r.trials, alarmKeys(r.alarms))
				b.ReportMetric(100*r.falseAlarm, r.metric+"-false-%")
				b.ReportMetric(100*r.caught, r.metric+"-caught-%")
			}
			// What calibrate would print for the unchanged build: the
			// run-to-run spread behind those rates.
			cal, err := compare.Calibrate(same, 0.05, 1)
			if err != nil {
				b.Fatal(err)
			}
			if err := compare.WriteCalibration(&out, cal); err != nil {
				b.Fatal(err)
			}
			for _, key := range []string{"client.first_visible.median", "client.e2e.median"} {
				for _, l := range cal.Limits {
					if l.Key == key {
						fmt.Fprintf(&out, "  %s, each run: %s\n", key, fmtRunValues(l.Values, 1e3, "ms"))
					}
				}
			}
			fmt.Print(out.String()) // whole: b.Log would truncate it
			for b.Loop() {          // the measure is the rates above, taken once
			}
		})
	}
}

// gateRepeats runs the bundled engine gateRuns times (run --repeats) and
// loads the runs as one side. --clock wall: the slower build is a smaller
// --speedup, slower on this machine's clock; in the modelled clock each
// side is converted with its own speed-up and both builds are the same
// emulated hardware, so nothing would be slower.
func gateRepeats(b *testing.B, speedup float64, args []string) *compare.Side {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "runs")
	code, out, errOut := runMain(append([]string{"run", "--speedup", fmt.Sprint(speedup), "--engine-arg=--startup-speedup=200",
		"--clock", "wall", "--stream", "on", "--repeats", fmt.Sprint(gateRuns), "--out", dir, "--quiet"}, args...)...)
	if code != exitOK {
		b.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	side, err := compare.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	return side
}

type gateRate struct {
	name, metric       string
	falseAlarm, caught float64
	trials             int
	alarms             map[string]int // false alarms by figure (a trial may raise several)
}

// gateRates compares sides drawn from the unchanged runs (same) with each
// other and with the slower runs (slow) under each gate.
func gateRates(b *testing.B, same, slow []*compare.Side, th []compare.Threshold) []gateRate {
	b.Helper()
	rng := rand.New(rand.NewPCG(30, 1))
	var alarms map[string]int // the current gate's false alarms by figure
	regressed := func(base, cur *compare.Side, test string) bool {
		rep, err := compare.Compare(base, cur, compare.Options{Thresholds: th, Test: test})
		if err != nil {
			b.Fatal(err)
		}
		return rep.Regressed()
	}
	falseAlarm := func(base, cur *compare.Side, test string) bool {
		rep, err := compare.Compare(base, cur, compare.Options{Thresholds: th, Test: test})
		if err != nil {
			b.Fatal(err)
		}
		for _, run := range rep.Runs {
			for _, row := range run.Rows {
				if row.Regression {
					alarms[row.Key()]++
				}
			}
		}
		return rep.Regressed()
	}
	var out []gateRate
	// (a) one run a side: consecutive pairs, as a nightly compares
	// tonight's run with last night's.
	for _, test := range []string{compare.TestRequests, compare.TestAuto} {
		var fa, caught int
		alarms = map[string]int{}
		for i := 0; i+1 < len(same); i++ {
			fa += b2i(falseAlarm(same[i], same[i+1], test))
			caught += b2i(regressed(same[i], slow[i+1], test))
		}
		name, metric := "(a) 1+1 runs, per-request Mann-Whitney", "a-requests"
		if test == compare.TestAuto {
			name, metric = "(a') 1+1 runs, limits only (default)", "a-limits"
		}
		n := len(same) - 1
		out = append(out, gateRate{name, metric, float64(fa) / float64(n), float64(caught) / float64(n), n, alarms})
	}
	// (b) n runs a side, across runs; (c) one run against N=10 past runs.
	const trials = 200
	for _, g := range []struct {
		name, metric string
		nBase, nNew  int
	}{
		{"(b) 3+3 runs, Welch across runs", "b-3+3", 3, 3},
		{"(b) 5+5 runs, Welch across runs", "b-5+5", 5, 5},
		{"(c) 1 run vs history N=10, prediction", "c-hist10", 10, 1},
	} {
		var fa, caught int
		alarms = map[string]int{}
		for range trials {
			perm := rng.Perm(len(same))
			base := pick(same, perm[:g.nBase])
			fa += b2i(falseAlarm(base, pick(same, perm[g.nBase:g.nBase+g.nNew]), compare.TestAuto))
			caught += b2i(regressed(base, pick(slow, rng.Perm(len(slow))[:g.nNew]), compare.TestAuto))
		}
		out = append(out, gateRate{g.name, g.metric, float64(fa) / trials, float64(caught) / trials, trials, alarms})
	}
	return out
}

// pick groups the runs at idx into one side.
func pick(runs []*compare.Side, idx []int) *compare.Side {
	sides := make([]*compare.Side, len(idx))
	for i, k := range idx {
		sides[i] = runs[k]
	}
	return compare.Group(fmt.Sprintf("%d runs", len(idx)), sides)
}

// fmtRunValues is "7.1 8.3 ... ms": the runs' values, scaled.
func fmtRunValues(vs []float64, scale float64, unit string) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%.2f", v*scale)
	}
	return strings.Join(parts, " ") + " " + unit
}

// alarmKeys is "client.first_visible.median 3, engine.ttft.mean 1".
func alarmKeys(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		keys[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(keys, ", ")
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}
