package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// TestPushgatewayFlags: --pushgateway pushes after the run under the job
// and grouping labels given; a push that fails only warns, and the results
// are on disk. (report/pushgateway tests the push against a real
// Pushgateway.)
func TestPushgatewayFlags(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 200 })
	var mu sync.Mutex
	var method, path, body string
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		method, path, body = r.Method, r.URL.Path, string(b)
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer gw.Close()
	run := func(dir string, extra ...string) (int, string, string) {
		return runMain(append([]string{"run", "--base-url", e.BaseURL(), "--requests", "3", "--max-tokens", "4",
			"--stream", "on", "--out", dir, "--quiet"}, extra...)...)
	}
	if code, _, errOut := run(t.TempDir(), "--pushgateway", gw.URL, "--push-job", "nightly", "--push-label", "gpu=rtx3060"); code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	mu.Lock()
	if method != http.MethodPut || path != "/metrics/job/nightly/gpu/rtx3060" || !strings.Contains(body, "servebench_requests") {
		t.Errorf("push: %s %s (body %d bytes): want PUT /metrics/job/nightly/gpu/rtx3060 with the gauges", method, path, len(body))
	}
	mu.Unlock()

	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + l.Addr().String()
	l.Close()
	dir := t.TempDir()
	code, _, errOut := run(dir, "--pushgateway", closed)
	if code != exitOK || !strings.Contains(errOut, "warning: --pushgateway") {
		t.Errorf("failed push: exit %d, stderr %q; want 0 and a warning", code, errOut)
	}
	for _, f := range []string{result.ResultsFile, result.RequestsFile, result.ReportFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("after a failed push: %v", err)
		}
	}

	for _, c := range []struct{ args []string }{
		{[]string{"--push-label", "gpu=x"}},                      // no --pushgateway
		{[]string{"--pushgateway", "localhost:9091"}},            // no scheme
		{[]string{"--pushgateway", gw.URL, "--push-label", "x"}}, // no =
	} {
		if code, _, errOut := run(t.TempDir(), c.args...); code != exitUsage {
			t.Errorf("%v: exit %d (%s), want %d", c.args, code, errOut, exitUsage)
		}
	}
}
