// Package proxytest runs real reverse proxies in front of a server for
// tests: Debian's nginx and haproxy, unprivileged, on 127.0.0.1 and a
// free port, with their configuration, pid and temporary files in
// t.TempDir(). The configurations are files in configs/ (one per
// Config), so docs and tests show the same ones. Without the binary a
// test fails when CI=true (.ci/run installs both) and skips elsewhere,
// naming the package.
package proxytest

import (
	"bytes"
	"embed"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/servebench/servebench/scrape/promql/promtest"
)

// Config names one proxy configuration: a file in configs/, nginx-* for
// nginx, haproxy-* for HAProxy.
type Config string

// The configurations.
const (
	NginxDefault       Config = "nginx-default"       // just proxy_pass: HTTP/1.0 upstream, buffering on
	NginxStreaming     Config = "nginx-streaming"     // proxy_buffering off, proxy_http_version 1.1
	NginxGzip          Config = "nginx-gzip"          // gzip on for text/event-stream, buffering on
	HAProxyDefault     Config = "haproxy-default"     // defaults
	HAProxyCompression Config = "haproxy-compression" // compression algo gzip, type text/event-stream
	HAProxyNoDelay     Config = "haproxy-no-delay"    // option http-no-delay
)

//go:embed configs
var configs embed.FS

// File is c's configuration file in configs/.
func (c Config) File() string {
	if c.nginx() {
		return "configs/" + string(c) + ".conf"
	}
	return "configs/" + string(c) + ".cfg"
}

func (c Config) nginx() bool { return strings.HasPrefix(string(c), "nginx") }

// Text is c's configuration for a proxy listening on listen (host:port)
// in front of upstream (a base URL), with its files under dir.
func (c Config) Text(listen, upstream, dir string) (string, error) {
	src, err := configs.ReadFile(c.File())
	if err != nil {
		return "", fmt.Errorf("proxy config %q: %w", c, err)
	}
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("upstream %q: expected http://host:port", upstream)
	}
	tmpl, err := template.New(string(c)).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return "", fmt.Errorf("%s: %w", c.File(), err)
	}
	var b bytes.Buffer
	err = tmpl.Execute(&b, map[string]string{"Listen": listen, "Upstream": strings.TrimRight(upstream, "/"),
		"UpstreamAddr": u.Host, "Dir": dir})
	return b.String(), err
}

// Start runs c in front of upstream and returns its base URL once it
// answers; the proxy stops when the test ends.
func Start(t testing.TB, c Config, upstream string) string {
	t.Helper()
	dir := t.TempDir()
	addr := promtest.FreeAddr(t)
	text, err := c.Text(addr, upstream, dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.Base(c.File()))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var d *promtest.Process
	if c.nginx() {
		bin := promtest.Binary(t, "nginx", "nginx", "/usr/sbin/nginx")
		// -e: the error log before the configuration is read (the
		// compiled-in /var/log/nginx is not writable unprivileged).
		d = promtest.Daemon(t, bin, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", path)
	} else {
		bin := promtest.Binary(t, "haproxy", "haproxy", "/usr/sbin/haproxy")
		d = promtest.Daemon(t, bin, "-db", "-f", path)
	}
	base := "http://" + addr
	if err := waitUp(base, d.Exited); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		t.Fatalf("proxytest %s: %v\n%s\n%s", c, err, d.Log(), log)
	}
	return base
}

// waitUp waits (at most 10 s) until something answers HTTP at base.
func waitUp(base string, exited <-chan struct{}) error {
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := hc.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before it answered: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer at %s after 10s: %v", base, err)
		}
	}
}

// Binaries checks that nginx and haproxy are installed, before a test
// starts anything: it fails when CI=true and skips elsewhere, naming the
// packages.
func Binaries(t testing.TB) {
	t.Helper()
	promtest.Binary(t, "nginx", "nginx", "/usr/sbin/nginx")
	promtest.Binary(t, "haproxy", "haproxy", "/usr/sbin/haproxy")
}
