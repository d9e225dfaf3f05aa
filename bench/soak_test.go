package bench

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/launch/launchtest"
	"github.com/servebench/servebench/scrape/promql/promtest"
)

// TestServerRestartMidSoak: the bundled engine (a child process) crashes
// after 400 responses (--fault crash-after) and a supervisor loop starts
// it again on the same port. A run against it (--base-url, windows,
// ContinueOnServerExit) reports the failures in the window of the crash,
// the counter reset in a window's engine deltas and a warning, and goes
// on: later windows succeed, and the refused requests stay few.
func TestServerRestartMidSoak(t *testing.T) {
	bin := launchtest.Servebench(t)
	addr := promtest.FreeAddr(t)
	_, port, _ := strings.Cut(addr, ":")
	var mu sync.Mutex
	var procs []*exec.Cmd
	var wg sync.WaitGroup
	t.Cleanup(func() {
		mu.Lock()
		for _, p := range procs {
			_ = p.Process.Kill()
		}
		mu.Unlock()
		wg.Wait()
	})
	start := func(args ...string) *exec.Cmd {
		c := exec.Command(bin, append([]string{"engine", "--port", port, "--speedup", "1000", "--gpu", "h200-141gb"}, args...)...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		procs = append(procs, c)
		mu.Unlock()
		return c
	}
	first := start("--fault", "crash-after=400")
	restarted := make(chan struct{})
	wg.Go(func() { // the supervisor: one restart, without the fault
		_ = first.Wait()
		second := start()
		close(restarted)
		_ = second.Wait()
	})
	waitHealth(t, "http://"+addr)

	res, _, err := Execute(context.Background(), Config{
		Server: ServerOptions{BaseURL: "http://" + addr}, Dir: t.TempDir(), Args: []string{"servebench", "test"}, Version: "test",
		FailOnErrorRate: -1, Interval: 500 * time.Millisecond, Bounded: true, ContinueOnServerExit: true, ReconcileWait: time.Second,
		Runs: []RunSpec{{Name: "streaming", Workload: Workload{Mode: ModeConcurrent, Concurrency: 4, Duration: 4 * time.Second},
			Request: RequestSpec{MaxTokens: 16, ExactLength: true, Stream: true}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-restarted:
	default:
		t.Fatal("the engine never crashed (crash-after=400 not reached?)")
	}
	run := res.Runs[0]
	failedIn, resetIn := 0, 0
	for _, w := range run.Windows {
		t.Logf("window %d %.1f-%.1f s: %d requests, %d ok, errors %v, reset %v", w.Index, w.StartS, w.EndS, w.Requests, w.OK, w.Errors,
			w.Engine != nil && w.Engine.CounterReset)
		if w.Requests > w.OK && failedIn == 0 {
			failedIn = w.Index
		}
		if w.Engine != nil && w.Engine.CounterReset && resetIn == 0 {
			resetIn = w.Index
		}
	}
	if failedIn == 0 || resetIn == 0 || resetIn < failedIn {
		t.Errorf("failures first in window %d, counter reset first in window %d: want both, the reset not before the failures", failedIn, resetIn)
	}
	if last := run.Windows[len(run.Windows)-1]; last.OK == 0 || last.Requests != last.OK {
		t.Errorf("last window: %d requests, %d ok; want the run going on after the restart", last.Requests, last.OK)
	}
	if failed := run.Requests - run.OK; failed == 0 || failed > 50 || run.OK <= 400 {
		t.Errorf("%d failed of %d, %d ok: want a few failures around the restart (the workers wait for /health) and more than the 400 before it", failed, run.Requests, run.OK)
	}
	if !strings.Contains(strings.Join(run.Warnings, "\n"), "counters reset") {
		t.Errorf("no restart warning in %q", run.Warnings)
	}
}

// waitHealth polls base/health until it answers (bounded).
func waitHealth(t *testing.T, base string) {
	t.Helper()
	w := newServerWaiter(base)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !w.wait(ctx) {
		t.Fatalf("%s/health not OK after a minute", base)
	}
}
