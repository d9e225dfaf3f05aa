package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/result/resulttest"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/engine/launch/launchtest"
)

// TestMain removes the servebench binary the child-process tests built.
func TestMain(m *testing.M) { os.Exit(launchtest.Run(m)) }

// childConfig is a session on the bundled engine started as a child process.
func childConfig(t *testing.T, n int, engineArgs ...string) Config {
	return Config{
		Server: ServerOptions{Self: launchtest.Servebench(t), Speedup: 50, EngineArgs: engineArgs, ReadyTimeout: time.Minute},
		Dir:    t.TempDir(), FailOnErrorRate: -1, ReconcileWait: time.Second,
		Runs: []RunSpec{{Name: "streaming", Workload: workload.Workload{Mode: workload.ModeSequential, Requests: n},
			Request: RequestSpec{MaxTokens: 32, ExactLength: true, Stream: true}}},
	}
}

// TestBundledChildProcess runs the default path of `servebench table`: the
// bundled engine as a child process, its start-up measured, its log kept,
// and the process stopped at the end.
func TestBundledChildProcess(t *testing.T) {
	cfg := childConfig(t, 4)
	res, recs, err := Execute(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	s := res.Server
	if s.Preset != PresetBundled || s.Startup == nil || s.Startup.HealthOKS == nil || s.Bundled == nil || s.Bundled.Speedup != 50 {
		t.Fatalf("server = %+v", s)
	}
	// Start-up at --speedup 50: about 90 s / 50.
	if h := *s.Startup.HealthOKS; h < 0.5 || h > 20 {
		t.Errorf("health OK after %.2f s, want about 1.8 s", h)
	}
	if len(recs) != 4 || res.Runs[0].OK != 4 || res.Runs[0].Engine.TTFTS == nil {
		t.Errorf("run = %+v", res.Runs[0])
	}
	if fi, err := os.Stat(filepath.Join(cfg.Dir, result.ServerLog)); err != nil || fi.Size() == 0 {
		t.Errorf("server.log: %v", err)
	}
	// Stopped at the end: nothing listens on its port any more.
	u, _ := url.Parse(s.BaseURL)
	if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
		c.Close()
		t.Errorf("engine still listening on %s after Execute", u.Host)
	}
}

// TestServerDiesMidRun: the engine crashes after 3 responses; the run stops,
// keeps every record, writes results.json and returns ErrServerExited.
func TestServerDiesMidRun(t *testing.T) {
	cfg := childConfig(t, 10, "--fault", "crash-after=3")
	start := time.Now()
	res, recs, err := Execute(context.Background(), cfg)
	if !errors.Is(err, ErrServerExited) {
		t.Fatalf("Execute error = %v, want ErrServerExited", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("took %v to notice the dead server", time.Since(start))
	}
	if res == nil || len(res.Runs) != 1 {
		t.Fatalf("no partial results: %+v", res)
	}
	run := res.Runs[0]
	if run.OK == 0 || run.OK == 10 {
		t.Errorf("ok %d of %d: want those before the crash, not all", run.OK, run.Requests)
	}
	// The after-run scrape found no server: the figures are left out for
	// that reason, not reported as metrics the server does not export.
	if rc := run.Engine.Reconciliation; rc == nil || !rc.EngineAbsent || !strings.Contains(rc.Note, "/metrics after the run") {
		t.Errorf("reconciliation %+v: want the engine figures marked absent, the failed scrape in its note", rc)
	}
	b, rerr := os.ReadFile(filepath.Join(cfg.Dir, result.RequestsFile))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if file := resulttest.Records(t, b); len(file) != len(recs) || len(recs) != run.Requests {
		t.Errorf("requests.jsonl %d lines, records %d, requests %d", len(file), len(recs), run.Requests)
	}
	if _, serr := os.Stat(filepath.Join(cfg.Dir, result.ResultsFile)); serr != nil {
		t.Errorf("results.json not written: %v", serr)
	}
}

// TestServerCmdSecrets starts a server from a command line holding an API
// key (--server-cmd): the key works, and is written nowhere.
func TestServerCmdSecrets(t *testing.T) {
	bin := launchtest.Servebench(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	const key = "sk-servebench-test-secret"
	cfg := childConfig(t, 2)
	cfg.Server = ServerOptions{
		ServerCmd: fmt.Sprintf("%s engine --port %d --speedup 200 --api-key %s", bin, port, key),
		BaseURL:   fmt.Sprintf("http://127.0.0.1:%d", port), APIKey: key, ReadyTimeout: time.Minute,
	}
	cfg.Args = []string{"servebench", "run", "--server-cmd", cfg.Server.ServerCmd}
	res, _, err := Execute(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if res.Runs[0].OK != 2 || res.Server.Startup == nil {
		t.Errorf("run %+v startup %v", res.Runs[0], res.Server.Startup)
	}
	for _, f := range []string{result.ResultsFile, result.RequestsFile} {
		b, err := os.ReadFile(filepath.Join(cfg.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), key) {
			t.Errorf("%s contains the API key", f)
		}
	}
	if !strings.Contains(res.Server.Command, "REDACTED") {
		t.Errorf("server command %q: want the key redacted", res.Server.Command)
	}
}

// TestBundledCachedTokens: servebench starts the bundled engine with
// --enable-prompt-tokens-details, so the records of a repeated prompt carry
// the tokens the engine found cached, and they add up to the run's
// prefix cache hits.
func TestBundledCachedTokens(t *testing.T) {
	cfg := childConfig(t, 4)
	res, recs, err := Execute(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if !strings.Contains(res.Server.Command, "--enable-prompt-tokens-details") {
		t.Errorf("bundled engine started without --enable-prompt-tokens-details: %s", res.Server.Command)
	}
	cached := 0
	for i, r := range recs {
		if i > 0 && r.CachedTokens == 0 {
			t.Errorf("request %d of a repeated prompt: cached_tokens 0", i)
		}
		cached += r.CachedTokens
	}
	if h := res.Runs[0].Engine.PrefixCacheHits; h == nil || *h != float64(cached) {
		t.Errorf("engine prefix cache hits %v, the records' cached_tokens sum to %d", h, cached)
	}
}
