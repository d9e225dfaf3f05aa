package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/result"
)

// TestRunBoundedWithoutInterval: every run keeps its memory bounded (no
// record in memory, samples spilled), with or without --interval; only
// keepRecords, which no flag sets, keeps the records, for the benchmark
// that compares the two (BenchmarkSoakRSSNoInterval).
func TestRunBoundedWithoutInterval(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		keepRecords bool
		bounded     bool
	}{
		{nil, false, true},
		{[]string{"--interval", "10s"}, false, true},
		{nil, true, false},
	} {
		var got *bench.Config
		saved := execute
		execute = func(_ context.Context, cfg bench.Config) (*result.Results, []result.Record, error) {
			got = &cfg
			return nil, nil, errors.New("not run")
		}
		keepRecords = tc.keepRecords
		args := append([]string{"run", "--base-url", "http://127.0.0.1:9", "--requests", "10", "--stream", "on",
			"--out", t.TempDir(), "--quiet"}, tc.args...)
		runMain(args...)
		execute, keepRecords = saved, false
		if got == nil {
			t.Fatalf("%q keepRecords %v: the session was not started", tc.args, tc.keepRecords)
		}
		if got.Bounded != tc.bounded {
			t.Errorf("%q keepRecords %v: Bounded %v, want %v", tc.args, tc.keepRecords, got.Bounded, tc.bounded)
		}
	}
}

// tinyFS mounts a tmpfs of size bytes for t, or skips: mounting needs root.
func tinyFS(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cmd/servebench: cannot mount a %s tmpfs (needs root): %v %s", size, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	return dir
}

// TestFullDisk: a run whose results folder fills up (a 200 KiB file
// system) stops at once with exit 5 and an error naming requests.jsonl,
// "no space left on device" and the records it keeps; the table gives the
// figures of the requests that completed, never "no successful requests",
// and nothing blames the server.
func TestFullDisk(t *testing.T) {
	out := filepath.Join(tinyFS(t, "200k"), "run")
	code, stdout, stderr := runMain("run", "--speedup", "50", "--requests", "200", "--concurrency", "8", "--max-tokens", "64",
		"--stream", "on", "--out", out, "--quiet")
	if code != exitResultsIO {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitResultsIO, stdout, stderr)
	}
	m := regexp.MustCompile(`writing \S*requests\.jsonl: no space left on device: it keeps the (\d+) records`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("stderr does not name requests.jsonl, the cause and the records kept:\n%s", stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, result.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	recs, notes, err := result.ReadRecords("requests.jsonl", bytes.NewReader(b))
	if err != nil || len(notes) > 0 || strconv.Itoa(len(recs)) != m[1] {
		t.Errorf("requests.jsonl: %d whole records (notes %v, %v), the error says %s", len(recs), notes, err, m[1])
	}
	for _, bad := range []string{"no successful requests", "server exited", "every request failed"} {
		if strings.Contains(stdout+stderr, bad) {
			t.Errorf("output says %q of a full disk:\n%s\n%s", bad, stdout, stderr)
		}
	}
	if !regexp.MustCompile(`Streaming +\d`).MatchString(stdout) {
		t.Errorf("no figures for the requests that completed:\n%s", stdout)
	}
	t.Logf("%s", stderr)
}

// TestReadBackErrorNotDropped: when requests.jsonl cannot be read back for
// the charts (here removed after the run), run says so (exit 5, the error
// naming the file) and report.md's warnings carry it, instead of a charts
// section without records and a guess at why.
func TestReadBackErrorNotDropped(t *testing.T) {
	saved := execute
	defer func() { execute = saved }()
	execute = func(ctx context.Context, cfg bench.Config) (*result.Results, []result.Record, error) {
		res, recs, err := bench.Execute(ctx, cfg)
		os.Remove(filepath.Join(cfg.Dir, result.RequestsFile))
		return res, recs, err
	}
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runMain("run", "--speedup", "50", "--requests", "3", "--max-tokens", "16", "--stream", "on", "--out", out, "--quiet")
	if code != exitResultsIO || !strings.Contains(stderr, "reading requests.jsonl back for the charts") || !strings.Contains(stderr, "no such file") {
		t.Fatalf("exit %d, want %d naming the read-back failure\n%s\n%s", code, exitResultsIO, stdout, stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, result.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(md); strings.Contains(s, "too large") || !strings.Contains(s, "reading requests.jsonl back for the charts") {
		t.Errorf("report.md does not say why the records are missing:\n%s", s)
	}
}
