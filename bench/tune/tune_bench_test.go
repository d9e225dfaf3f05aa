package tune

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/engine/launch/launchtest"
)

func TestMain(m *testing.M) { os.Exit(launchtest.Run(m)) }

// BenchmarkTuneOverhead runs a small tune on the bundled engine (two
// treatments x two repeats, a 2-level ladder each) and reports the tune
// loop's own share of the wall time: everything Run does beyond its
// units' sessions (server starts and runs), i.e. planning, tune.json
// rewritten after every unit, and reading every unit's results.json back
// for the summary. The target is under 2%.
//
//	go test ./bench/tune -run '^$' -bench TuneOverhead -benchtime 1x
func BenchmarkTuneOverhead(b *testing.B) {
	self := launchtest.Servebench(b)
	e, _ := ParseFactor(KindEngine, "max-num-seqs=2,8")
	runs, err := bench.Sweep{Concurrencies: []int{2, 8}}.Runs(bench.RunSpec{
		Workload: workload.Workload{Requests: 16, Warmup: 1},
		Request:  bench.RequestSpec{MaxTokens: 16, ExactLength: true, Stream: true}})
	if err != nil {
		b.Fatal(err)
	}
	var worst float64
	for i := 0; i < b.N; i++ {
		o := Options{Grid: Grid{e}, Repeats: 2, Seed: int64(i + 1),
			Session: bench.Config{Dir: filepath.Join(b.TempDir(), "tune"), Runs: runs, FailOnErrorRate: -1, Bounded: true,
				Server: bench.ServerOptions{Self: self, Speedup: 50, EngineArgs: []string{"--startup-speedup=1000"}, ReadyTimeout: time.Minute}}}
		start := time.Now()
		tu, err := Run(context.Background(), o)
		total := time.Since(start).Seconds()
		if err != nil {
			b.Fatal(err)
		}
		var units float64
		for _, u := range tu.Units {
			if u.Error != "" {
				b.Fatalf("unit %s: %s", u.Dir, u.Error)
			}
			units += u.WallS
		}
		pct := 100 * (total - units) / total
		worst = max(worst, pct)
		b.Logf("tune wall %.2f s, units (server starts and runs) %.2f s: the loop's own %.3f s = %.2f%%", total, units, total-units, pct)
	}
	b.ReportMetric(worst, "overhead-%")
	if worst >= 2 {
		b.Errorf("the tune loop's own time is %.2f%% of the wall time, over the 2%% target", worst)
	}
}
