package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
	"github.com/servebench/servebench/report/compare"
)

// End-to-end: the bundled engine in-process, bench's whole session writing
// a results directory, compare reading two of them back. It lives in cmd,
// the one layer that may import both the engine and report (report itself
// reads saved results and links no engine package, tests included).

// simRuns is the seed's table scaled down: 20 sequential requests of 32
// exact tokens, streaming and not, after one warm-up request; seed picks
// the prompts.
func simRuns(maxTokens int, seed int64) []bench.RunSpec {
	var runs []bench.RunSpec
	for _, stream := range []bool{true, false} {
		name := "non-streaming"
		if stream {
			name = "streaming"
		}
		runs = append(runs, bench.RunSpec{Name: name, Workload: workload.Workload{Mode: workload.ModeSequential, Requests: 20, Warmup: 1, Seed: seed},
			Request: bench.RequestSpec{MaxTokens: maxTokens, ExactLength: true, Stream: stream}})
	}
	return runs
}

// startEngines starts one bundled engine per option mutator, all at once
// (start-up is modelled wall time: 90 s / speedup each), and waits until
// every one is ready.
func startEngines(t *testing.T, mutators ...func(*sim.Options)) []*sim.Engine {
	t.Helper()
	engines := make([]*sim.Engine, len(mutators))
	errcs := make([]<-chan error, len(mutators))
	for i, m := range mutators {
		engines[i], errcs[i] = simtest.StartNoWait(t, m)
	}
	for i, e := range engines {
		select {
		case <-e.Ready():
		case err := <-errcs[i]:
			t.Fatalf("engine %d stopped before ready: %v", i, err)
		case <-time.After(time.Minute):
			t.Fatalf("engine %d not ready after 1m", i)
		}
	}
	return engines
}

func engineOpts(speedup float64, seed int64, faults ...string) func(*sim.Options) {
	return func(o *sim.Options) { o.Speedup, o.Seed, o.Faults = speedup, seed, faults }
}

// executeAll benchmarks engines[i] with runs[i] through bench.Execute, all
// sessions at once but their requests taking turns (side 0, side 1, side
// 0, ...): an interleaved design, so that drifting load from elsewhere on
// the machine (other test processes on 2 shared cores) hits every side
// alike, as a baseline and a new run on a quiet CI runner would be. It
// returns the results directories and Execute's errors (a run with every
// request failed is an error there too).
func executeAll(t *testing.T, engines []*sim.Engine, runs ...[]bench.RunSpec) ([]string, []error) {
	t.Helper()
	dirs, errs := make([]string, len(runs)), make([]error, len(runs))
	ts := newTurnstile(len(runs))
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			defer ts.leave(i)
			c := client.New(client.Options{BaseURL: engines[i].BaseURL(), MaxConns: 4})
			_, _, errs[i] = bench.Execute(context.Background(), bench.Config{
				Server: bench.ServerOptions{BaseURL: engines[i].BaseURL()}, Runs: runs[i], Dir: dirs[i],
				Args: []string{"servebench", "test"}, Version: "test", FailOnErrorRate: -1,
				Client: &taking{d: c, ts: ts, me: i},
			})
		})
	}
	wg.Wait()
	return dirs, errs
}

// turnstile lets sides send requests in turn; a side that has left (its
// session ended) is skipped, so none waits forever.
type turnstile struct {
	mu   sync.Mutex
	cond *sync.Cond
	turn int
	gone []bool
}

func newTurnstile(n int) *turnstile {
	ts := &turnstile{gone: make([]bool, n)}
	ts.cond = sync.NewCond(&ts.mu)
	return ts
}

func (ts *turnstile) wait(me int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for ts.turn != me {
		ts.cond.Wait()
	}
}

// pass hands the turn to the next side still present.
func (ts *turnstile) pass(me int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.handOn(me)
}

// handOn moves the turn on from me; ts.mu is held.
func (ts *turnstile) handOn(me int) {
	for k := 1; k <= len(ts.gone); k++ {
		if next := (me + k) % len(ts.gone); !ts.gone[next] || next == me {
			ts.turn = next
			break
		}
	}
	ts.cond.Broadcast()
}

// leave marks me gone, passing the turn on if it was mine.
func (ts *turnstile) leave(me int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.gone[me] = true
	if ts.turn == me {
		ts.handOn(me)
	}
}

// taking is a bench.Doer that sends only on its side's turn.
type taking struct {
	d  bench.Doer
	ts *turnstile
	me int
}

func (tk *taking) Do(ctx context.Context, req *client.Request) client.Trace {
	tk.ts.wait(tk.me)
	defer tk.ts.pass(tk.me)
	return tk.d.Do(ctx, req)
}

// mustExecute is executeAll for sides that must run clean.
func mustExecute(t *testing.T, engines []*sim.Engine, runs ...[]bench.RunSpec) []string {
	t.Helper()
	dirs, errs := executeAll(t, engines, runs...)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("bench.Execute (side %d): %v", i, err)
		}
	}
	return dirs
}

func compareDirs(t *testing.T, base, nw string, opts compare.Options) (*compare.Report, error) {
	t.Helper()
	b, err := compare.Load(base)
	if err != nil {
		t.Fatal(err)
	}
	n, err := compare.Load(nw)
	if err != nil {
		t.Fatal(err)
	}
	return compare.Compare(b, n, opts)
}

// simSpeedup keeps the default profile's 32-token request at ~10 ms and
// its start-up at 1.8 s; each test starts its engines once, side by side.
const simSpeedup = 50

// TestSimSameProfileNoFalseAlarm: two engines of the same profile (seeds 1
// and 2), benchmarked side by side ten times with differently seeded
// prompts (three with -short), compare clean with the default limits.
// Answers are 128 tokens (~40 ms at speedup 50): at 32 (~10 ms) a loaded
// host's millisecond of jitter was a tenth of the figure, and one pair in
// ten crossed the 10% limit (client.e2e.median 10.47 -> 11.60 ms).
func TestSimSameProfileNoFalseAlarm(t *testing.T) {
	pairs := 10
	if testing.Short() {
		pairs = 3
	}
	engines := startEngines(t, engineOpts(simSpeedup, 1), engineOpts(simSpeedup, 2))
	for i := range pairs {
		t.Run(fmt.Sprintf("seed%d", i+1), func(t *testing.T) {
			d := mustExecute(t, engines, simRuns(128, int64(i+1)), simRuns(128, int64(i+1)))
			// At speedup 50 streaming first visible is ~1 ms, the size of
			// this shared host's scheduling jitter: a 1 ms floor there
			// measures the host, not the engine (it raised a false alarm
			// under load: 1.02 -> 2.29 ms). The floor a real server's
			// 28 ms figure gets from the defaults is kept for every other
			// figure.
			th, err := compare.ParseThreshold("client.first_visible.median=10%,+5ms")
			if err != nil {
				t.Fatal(err)
			}
			rep, err := compareDirs(t, d[0], d[1], compare.Options{Thresholds: []compare.Threshold{th}})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Regressed() {
				var buf strings.Builder
				compare.WriteText(&buf, rep)
				t.Errorf("false alarm:\n%s", buf.String())
			}
		})
	}
}

// TestSimSlowerSpeedupFlagged: the same workload on an engine half as fast
// (speedup 50 -> 25: every modelled duration doubles) is a regression
// naming the latency and throughput figures.
func TestSimSlowerSpeedupFlagged(t *testing.T) {
	engines := startEngines(t, engineOpts(simSpeedup, 1), engineOpts(simSpeedup/2, 1))
	d := mustExecute(t, engines, simRuns(32, 1), simRuns(32, 1))
	rep, err := compareDirs(t, d[0], d[1], compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	regs := strings.Join(rep.Regressions(), "\n")
	// TPOT doubles too, but a starved client (2 shared cores, other tests
	// running) reads a stream's events in bunches, so per-request TPOT is
	// the figure load distorts most; and with requests taking turns, each
	// run's wall time, hence its throughput, includes the other side's
	// requests. Both are checked on synthetic data (compare_test.go).
	for _, want := range []string{
		"streaming: client.e2e.median", "streaming: engine.e2e.mean",
		"non-streaming: client.e2e.median", "non-streaming: client.first_visible.median",
	} {
		if !strings.Contains(regs, want) {
			t.Errorf("%s not flagged; regressions:\n%s", want, regs)
		}
	}
	for _, run := range rep.Runs {
		for _, row := range run.Rows {
			if row.Verdict == compare.VerdictBetter && row.Quantity != "throughput" {
				t.Errorf("%s %s better on an engine half as fast", run.Name, row.Key())
			}
		}
	}
	var buf strings.Builder
	if err := compare.WriteText(&buf, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "verdict: REGRESSION") {
		t.Errorf("text report lacks the verdict:\n%s", buf.String())
	}
	if testing.Verbose() {
		t.Log("\n" + buf.String())
	}
}

// TestSimWorkloadMismatchRefused: 32 vs 16 tokens is not the same test.
func TestSimWorkloadMismatchRefused(t *testing.T) {
	engines := startEngines(t, engineOpts(100, 1), engineOpts(100, 2))
	d := mustExecute(t, engines, simRuns(32, 1), simRuns(16, 1))
	_, err := compareDirs(t, d[0], d[1], compare.Options{})
	if !errors.Is(err, compare.ErrMismatch) || !strings.Contains(err.Error(), "max_tokens: 32 -> 16") {
		t.Errorf("err = %v, want a mismatch naming max_tokens", err)
	}
}

// TestSimAllFailedInvalid: an engine answering 503 to everything gives a
// results directory that compare refuses as an invalid run.
func TestSimAllFailedInvalid(t *testing.T) {
	engines := startEngines(t, engineOpts(100, 1), engineOpts(100, 1, "http-error=1:503"))
	d, errs := executeAll(t, engines, simRuns(32, 1), simRuns(32, 1))
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	_, err := compareDirs(t, d[0], d[1], compare.Options{})
	if !errors.Is(err, compare.ErrInvalidRun) || !strings.Contains(err.Error(), "every one of the 20 measured requests failed") {
		t.Errorf("err = %v, want an invalid run: every request failed", err)
	}
}
