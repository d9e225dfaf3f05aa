package main

import (
	"bytes"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// holdingProxy is a small reverse proxy that waits hold before passing a
// request on and then holds the whole answer until it is complete, as a
// buffering gateway does.
func holdingProxy(t *testing.T, upstream string, hold time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(hold)
		req, err := http.NewRequestWithContext(r.Context(), r.Method, upstream+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		req.Header.Del("Accept-Encoding") // the proxy does not compress
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body) // the whole answer, then all at once
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestDirectURLEndToEnd: the same workload through a holding proxy and
// straight to the bundled engine, interleaved: each request's direct twin
// is in run streaming-direct, the path's added first visible output is at
// least the proxy's hold per request, report.md says what the path added
// and that it clumped the stream, path.png is drawn, and the engine's count
// reconciles with both paths' requests.
func TestDirectURLEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bundled engine")
	}
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 20 })
	const hold = 30 * time.Millisecond
	proxy := holdingProxy(t, e.BaseURL(), hold)
	dir := t.TempDir()
	code, out, errOut := runMain("run", "--base-url", proxy.URL, "--direct-url", e.BaseURL(), "--requests", "6",
		"--max-tokens", "24", "--stream", "on", "--out", dir, "--quiet", "--api-key-env", "SERVEBENCH_TEST_NO_KEY")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	res, recs := loadSaved(t, dir)
	if len(res.Runs) != 2 || res.Runs[1].Name != "streaming-direct" || res.Runs[0].Workload.Path != "proxied" ||
		res.Runs[1].Workload.Path != "direct" || res.Runs[1].Workload.PairedWith != "streaming" {
		t.Fatalf("runs %+v", res.Runs)
	}
	if rc := res.Runs[0].Engine.Reconciliation; rc == nil || rc.Sent != 12 || rc.EngineCount != 12 || rc.Foreign {
		t.Errorf("reconciliation %+v: want both paths' 12 requests", rc)
	}
	direct := map[int]float64{}
	for _, r := range recs {
		if r.Run == "streaming-direct" && !r.Warmup {
			direct[r.Index] = r.FirstVisibleS
		}
	}
	n := 0
	for _, r := range recs {
		if r.Run != "streaming" || r.Warmup {
			continue
		}
		n++
		d, ok := direct[r.Index]
		if !ok || r.FirstVisibleS-d < hold.Seconds() {
			t.Errorf("request %d: first visible %.4f s proxied, %.4f s direct: want at least %v added", r.Index, r.FirstVisibleS, d, hold)
		}
	}
	if n != 6 || len(direct) != 6 {
		t.Fatalf("%d proxied and %d direct requests, want 6 each", n, len(direct))
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## What the path adds", "**Streaming:** the path added a median", "clumped the stream", "(path.png)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "path.png"))
	if err != nil {
		t.Fatal(err)
	}
	if img, err := png.Decode(bytes.NewReader(b)); err != nil || img.Bounds().Dx() < 800 {
		t.Errorf("path.png: %v", err)
	}

	// A direct URL that is the base URL is refused before anything is sent.
	code, _, errOut = runMain("run", "--base-url", proxy.URL, "--direct-url", proxy.URL, "--requests", "1", "--quiet")
	if code != 2 || !strings.Contains(errOut, "--direct-url is --base-url") {
		t.Errorf("same URL: exit %d, %s", code, errOut)
	}
}
