package bench

import (
	"context"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/workload"
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
		Runs: []RunSpec{{Name: "streaming", Workload: workload.Workload{Mode: workload.ModeConcurrent, Concurrency: 4, Duration: 4 * time.Second},
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

// TestConnectionsClosedOverHours: five simulated hours (the bundled engine
// at --speedup 3600 for 5 s) during which the server closes every fifth
// response's connection (--fault close-connection-every=5, as a per-
// connection request limit does). A counting TCP proxy in front shows the
// client really opened new connections mid-run; no request may be lost or
// fail for it, and the windows' counts add up to the run's. 50 requests a
// second: at 200 a loaded 2-core host fell behind the schedule itself, the
// run stopped as saturated after 115 requests in one window, and the
// windows were not judged.
func TestConnectionsClosedOverHours(t *testing.T) {
	bin := launchtest.Servebench(t)
	addr := promtest.FreeAddr(t)
	_, port, _ := strings.Cut(addr, ":")
	eng := exec.Command(bin, "engine", "--port", port, "--speedup", "3600", "--gpu", "h200-141gb", "--fault", "close-connection-every=5")
	if err := eng.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Process.Kill(); _ = eng.Wait() })
	waitHealth(t, "http://"+addr)
	proxy, accepted := countingProxy(t, addr)

	const closeEvery = 5
	res, _, err := Execute(context.Background(), Config{
		Server: ServerOptions{BaseURL: "http://" + proxy}, Dir: t.TempDir(), Args: []string{"servebench", "test"}, Version: "test",
		FailOnErrorRate: -1, Interval: time.Second, Bounded: true, ReconcileWait: time.Second,
		Runs: []RunSpec{{Name: "streaming", Workload: workload.Workload{Mode: workload.ModeRate, Rate: 50, Arrival: workload.ArrivalConstant, Duration: 5 * time.Second},
			Request: RequestSpec{MaxTokens: 16, ExactLength: true, Stream: true}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	run := res.Runs[0]
	conns := accepted.Load()
	t.Logf("%d requests, %d ok, %d windows, %d connections accepted by the proxy; saturated %v", run.Requests, run.OK, len(run.Windows), conns,
		run.Saturation != nil && run.Saturation.Saturated)
	if run.Requests < 4*closeEvery || run.OK != run.Requests {
		t.Fatalf("%d requests, %d ok: want every request kept and answered while connections close", run.Requests, run.OK)
	}
	if min := int64(run.Requests / closeEvery); conns < min {
		t.Errorf("%d connections for %d requests: the server closed every %dth, so at least %d were needed", conns, run.Requests, closeEvery, min)
	}
	sum := 0
	for _, w := range run.Windows {
		sum += w.Requests
		if w.OK != w.Requests {
			t.Errorf("window %d: %d requests, %d ok", w.Index, w.Requests, w.OK)
		}
	}
	if sum != run.Requests || len(run.Windows) < 3 {
		t.Errorf("windows hold %d requests in %d windows, run %d: want them adding up over several windows", sum, len(run.Windows), run.Requests)
	}
}

// countingProxy forwards TCP connections on a loopback port to target and
// counts the connections it accepts. Cleanup closes the connections still
// open (a client's idle pool would otherwise hold them for its idle timeout).
func countingProxy(t *testing.T, target string) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				s, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer s.Close()
				go func() { _, _ = io.Copy(s, c); s.(*net.TCPConn).CloseWrite() }()
				_, _ = io.Copy(c, s) // the server closing ends the client's connection too
			})
		}
	})
	return ln.Addr().String(), &accepted
}
