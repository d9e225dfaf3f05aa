// Package pdtest starts a P/D deployment (engine/pd) in-process for tests:
// its router on 127.0.0.1 at a free port, stopped when the test ends.
package pdtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/pd"
)

// Start runs pd.Run(o) for t, the router on 127.0.0.1 at a free port (o's
// Engine.Host and Port are set), waits until the router lists every
// instance (it serves only once all are ready; bounded by 30 s of wall
// time) and returns its base URL and the instances. A cleanup stops the
// deployment and waits for Run to return.
func Start(t testing.TB, o pd.Options) (string, []pd.Instance) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	o.Engine.Host, o.Engine.Port = "127.0.0.1", port
	ctx, cancel := context.WithCancel(context.Background())
	var runErr error
	done := make(chan struct{})
	go func() { runErr = pd.Run(ctx, o); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	// Each try bounded: a listener that took the port first and never
	// answers must not hang the test past the 30 s.
	hc := &http.Client{Timeout: time.Second}
	for t0 := time.Now(); time.Since(t0) < 30*time.Second; time.Sleep(100 * time.Millisecond) {
		var v struct{ Instances []pd.Instance }
		var resp *http.Response
		resp, err = hc.Get(base + "/pd/instances")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&v)
			resp.Body.Close()
		}
		if err == nil && len(v.Instances) == o.Prefill+o.Decode {
			return base, v.Instances
		}
		select {
		case <-done:
			t.Fatalf("pdtest: the deployment stopped before its router served: %v", runErr)
		default:
		}
	}
	t.Fatalf("pdtest: P/D router not up after 30 s: %v", err)
	return "", nil
}
