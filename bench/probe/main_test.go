package probe_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/launch/launchtest"
	"github.com/servebench/servebench/engine/sim"
)

// Engine start-up is modelled time (90 s on the default profile) divided
// by the speedup, so the tests start every engine they use at once, before
// any test runs: the waits overlap instead of adding up.
//
// slowSpeedup keeps a token at 1.5 ms of wall time on the default profile:
// slow enough that a 2-core machine's scheduling noise does not look like
// bursts or like a stop, fast enough that 512 tokens take under a second.
// Engines whose timing does not matter run at fastSpeedup.
const (
	slowSpeedup      = 10
	fastSpeedup      = 100
	plainMaxModelLen = 1024
)

// configs are the shared engines, by name.
var configs = map[string]func(*sim.Options){
	"plain": func(o *sim.Options) { o.Speedup, o.MaxModelLen = slowSpeedup, plainMaxModelLen },
	// 7.5 ms per token: a busy test machine's stalls of tens of ms bunch a
	// few tokens now and then, not most of them.
	"plain-slow": func(o *sim.Options) { o.Speedup = 2 },
	"ignore-disconnect": func(o *sim.Options) {
		o.Speedup, o.IgnoreDisconnect = slowSpeedup, true
	},
	"buffer-stream=32": func(o *sim.Options) { o.Speedup, o.Faults = slowSpeedup, []string{"buffer-stream=32"} },
	// A held start: nothing for 400 ms of wall time from the first token
	// (about 53 tokens at 7.5 ms), then token by token.
	"stall-after=0:400ms":      func(o *sim.Options) { o.Speedup, o.Faults = 2, []string{"stall-after=0:400ms"} },
	"long-context":             func(o *sim.Options) { o.Speedup, o.MaxModelLen = fastSpeedup, 32768 },
	"metrics-unavailable":      func(o *sim.Options) { o.Speedup, o.Faults = fastSpeedup, []string{"metrics-unavailable"} },
	"mid-stream-error-after=8": func(o *sim.Options) { o.Speedup, o.Faults = fastSpeedup, []string{"mid-stream-error-after=8"} },
	"drop-connection-after=8":  func(o *sim.Options) { o.Speedup, o.Faults = fastSpeedup, []string{"drop-connection-after=8"} },
	"malformed-event-after=8":  func(o *sim.Options) { o.Speedup, o.Faults = fastSpeedup, []string{"malformed-event-after=8"} },
}

type shared struct {
	e      *sim.Engine
	err    error         // sim.New's error
	ended  chan struct{} // closed when Run returned
	runErr error
}

var engines = map[string]*shared{}

func TestMain(m *testing.M) {
	ctx, cancel := context.WithCancel(context.Background())
	for name, mutate := range configs {
		o := sim.DefaultOptions()
		o.Port, o.Log = 0, io.Discard
		o.StartupSpeedup = 1000 // start-up is not under test here
		mutate(&o)
		s := &shared{ended: make(chan struct{})}
		engines[name] = s
		if s.e, s.err = sim.New(o); s.err != nil {
			close(s.ended)
			continue
		}
		go func() {
			s.runErr = s.e.Run(ctx)
			close(s.ended)
		}()
	}
	code := m.Run()
	launchtest.Cleanup()
	cancel()
	var wg sync.WaitGroup
	for name, s := range engines {
		wg.Go(func() {
			select {
			case <-s.ended:
			case <-time.After(15 * time.Second):
				fmt.Fprintf(os.Stderr, "engine %s did not stop within 15s\n", name)
			}
		})
	}
	wg.Wait()
	os.Exit(code)
}

// engine waits (bounded) until the shared engine name is ready.
func engine(t *testing.T, name string) *sim.Engine {
	t.Helper()
	s, ok := engines[name]
	if !ok {
		t.Fatalf("no shared engine %q", name)
	}
	if s.err != nil {
		t.Fatalf("engine %s: %v", name, s.err)
	}
	select {
	case <-s.e.Ready():
		return s.e
	case <-s.ended:
		t.Fatalf("engine %s stopped before ready: %v", name, s.runErr)
	case <-time.After(time.Minute):
		t.Fatalf("engine %s not ready after 1m", name)
	}
	return nil
}
