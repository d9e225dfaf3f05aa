// Package promtest runs a real Prometheus server for tests: Debian's
// `prometheus` package, on 127.0.0.1 and a free port, scraping the given
// /metrics targets every second, with its storage in t.TempDir(). Binary
// and Daemon run any other Prometheus daemon the same way (the
// Pushgateway's tests use them).
package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Package is what to install when the binary is missing.
const Package = "prometheus"

// Interval is how often the test server scrapes its targets.
const Interval = time.Second

// Start runs Prometheus scraping targets (base URLs; /metrics is scraped)
// in job "vllm" with the extra target label namespace="llm", waits until
// every target has been scraped once, and stops it when the test ends. It
// returns the server's URL. Without the binary it fails the test when
// CI=true (CI installs it) and skips it elsewhere, naming the package.
func Start(t testing.TB, targets ...string) string {
	t.Helper()
	bin := Binary(t, Package, "prometheus")
	dir := t.TempDir()
	hosts := make([]string, len(targets))
	for i, tg := range targets {
		u, err := url.Parse(tg)
		if err != nil {
			t.Fatalf("promtest: target %q: %v", tg, err)
		}
		hosts[i] = fmt.Sprintf("%q", u.Host)
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: %s
  scrape_timeout: %s
scrape_configs:
  - job_name: vllm
    static_configs:
      - targets: [%s]
        labels: {namespace: llm}
`, Interval, Interval, strings.Join(hosts, ", "))
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := FreeAddr(t)
	d := Daemon(t, bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	base := "http://" + addr
	if err := waitUp(base, len(targets), d.Exited); err != nil {
		t.Fatalf("promtest: %v\nprometheus log:\n%s", err, d.Log())
	}
	return base
}

// Binary finds the first of names on PATH. Without it, it fails the test
// when CI=true (CI installs pkg) and skips it elsewhere, naming the
// Debian package to install.
func Binary(t testing.TB, pkg string, names ...string) string {
	t.Helper()
	var err error
	for _, n := range names {
		var bin string
		if bin, err = exec.LookPath(n); err == nil {
			return bin
		}
	}
	msg := fmt.Sprintf("needs %s: apt-get install %s (%v)", strings.Join(names, " or "), pkg, err)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Process is a daemon started by Daemon.
type Process struct {
	Exited  <-chan struct{} // closed when it exits
	logPath string
}

// Log is what the daemon wrote to stdout and stderr so far.
func (p *Process) Log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// Daemon starts bin with args, its output in a file of t.TempDir(), and
// stops it (SIGTERM, then SIGKILL after 10 s) when the test ends.
func Daemon(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	logf, err := os.Create(filepath.Join(t.TempDir(), filepath.Base(bin)+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("promtest: starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logf.Close()
	})
	return &Process{Exited: exited, logPath: logf.Name()}
}

// FreeAddr returns 127.0.0.1:PORT with a port free a moment ago.
func FreeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitUp waits (at most 30 s) until the server is ready and all n targets
// have been scraped successfully.
func waitUp(base string, n int, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		up, err := targetsUp(ctx, base)
		if err == nil && up >= n {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("prometheus exited before its targets were up")
		case <-ctx.Done():
			return fmt.Errorf("%d of %d targets up after 30s (last error: %v)", up, n, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func targetsUp(ctx context.Context, base string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/targets?state=active", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var tr struct {
		Data struct {
			ActiveTargets []struct {
				Health     string    `json:"health"`
				LastScrape time.Time `json:"lastScrape"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		return 0, err
	}
	up := 0
	for _, t := range tr.Data.ActiveTargets {
		if t.Health == "up" {
			up++
		}
	}
	return up, nil
}
