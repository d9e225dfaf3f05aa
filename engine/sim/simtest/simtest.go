// Package simtest starts the bundled engine (engine/sim) in-process for
// tests: on 127.0.0.1, a free port, sped up, stopped when the test ends.
package simtest

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/sim"
)

// DefaultSpeedup is the speedup Start uses unless mutate changes it.
const DefaultSpeedup = 100

// Start runs a bundled engine for t: sim.DefaultOptions on 127.0.0.1 port 0
// with Speedup 100 and logs discarded (t.Log when testing.Verbose()), then
// mutate (may be nil) adjusts the options. It waits until the engine is
// ready (bounded by a minute of wall time) and registers a cleanup that stops
// it and waits for Run to return. It calls t.Fatal if the engine cannot
// start. With a fault that keeps it from becoming ready, use StartNoWait.
func Start(t testing.TB, mutate func(*sim.Options)) *sim.Engine {
	t.Helper()
	e, errc := StartNoWait(t, mutate)
	select {
	case <-e.Ready():
	case err := <-errc:
		t.Fatalf("simtest: engine stopped before ready: %v", err)
	case <-time.After(time.Minute):
		t.Fatalf("simtest: engine not ready after 1m")
	}
	return e
}

// StartNoWait is Start without waiting for readiness. The channel receives
// Run's result once when it returns (it is also drained by the cleanup).
func StartNoWait(t testing.TB, mutate func(*sim.Options)) (*sim.Engine, <-chan error) {
	t.Helper()
	opts := sim.DefaultOptions()
	opts.Host = "127.0.0.1"
	opts.Port = 0
	opts.Speedup = DefaultSpeedup
	opts.Log = io.Discard
	if testing.Verbose() {
		opts.Log = testLog{t}
	}
	if mutate != nil {
		mutate(&opts)
	}
	e, err := sim.New(opts)
	if err != nil {
		t.Fatalf("simtest: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		errc <- e.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Errorf("simtest: engine did not stop within 15s")
		}
	})
	return e, errc
}

// testLog forwards engine log lines to t.Log (verbose runs only).
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(string(p[:len(p)-min(1, len(p))]))
	return len(p), nil
}
