package history_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/history"
	"github.com/servebench/servebench/bench/history/pgtest"
	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// results is a one-run results set whose client E2E median is e2e,
// started at start, with commit and labels.
func results(e2e float64, start time.Time, commit string, labels map[string]string) *result.Results {
	return &result.Results{Schema: result.Schema,
		Manifest: result.Manifest{Version: "test", StartedAt: start, Labels: labels,
			Build: &result.Build{Commit: commit, Branch: "main", CIRunID: "7", CIURL: "https://ci.example/7", Source: "env"},
			Host:  result.Host{CPUs: 2, OS: "linux"}},
		Server: result.Server{Model: "m", Preset: "bundled", Dialect: "vllm",
			Bundled: &result.Bundled{GPU: "rtx3060-12gb", Model: "m", Speedup: 10, VLLMVersion: "0.14.0"}},
		Runs: []result.Run{{Name: "streaming", Stream: true, StartedAt: start, Requests: 16, OK: 16,
			Workload:   result.Workload{Mode: "concurrent", Concurrency: 4, Requests: 16, MaxTokens: 64, Stream: true},
			Client:     result.ClientStats{E2ES: &stats.Summary{Median: e2e, Mean: e2e, P90: e2e * 1.1, P99: e2e * 1.2, N: 16}},
			Engine:     result.EngineStats{E2ES: &result.Hist{Mean: e2e, Count: 16, P50Est: e2e}},
			Throughput: result.Throughput{RequestsPerS: 10, OutputTokensPerS: 640}}},
	}
}

// stores opens an empty history of each kind: an SQLite file, and a
// database on a real PostgreSQL.
func stores(t *testing.T) map[string]string {
	pg := pgtest.Start(t)
	return map[string]string{
		"sqlite":   filepath.Join(t.TempDir(), "history.db"),
		"postgres": pg.NewDatabase(t),
	}
}

func open(t *testing.T, dsn string) *history.Store {
	t.Helper()
	s, err := history.Open(context.Background(), dsn, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestStoreRoundTrip stores runs and reads them back through each filter,
// on SQLite and on PostgreSQL.
func TestStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	for kind, dsn := range stores(t) {
		t.Run(kind, func(t *testing.T) {
			s := open(t, dsn)
			t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
			for i := range 5 {
				res := results(0.1+0.01*float64(i), t0.Add(time.Duration(i)*24*time.Hour), fmt.Sprintf("c%d", i), map[string]string{"night": strconv.Itoa(i), "flavour": "nightly"})
				es := history.FromResults(res, nil, "dir"+strconv.Itoa(i))
				if i == 3 {
					es[0].Gate = history.GateFail
				}
				if err := s.Add(ctx, es); err != nil {
					t.Fatal(err)
				}
			}
			all, err := s.Query(ctx, history.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 5 {
				t.Fatalf("%d entries, want 5", len(all))
			}
			night := 2.0
			e, want := all[2], 0.1+0.01*night // as results computed it, at run time
			if e.Build.Commit != "c2" || e.Labels["night"] != "2" || e.Stats["client.e2e.median"] != want || e.Stats["client.e2e.p99"] != want*1.2 ||
				e.Bundled == nil || e.Bundled.VLLMVersion != "0.14.0" || e.Summary.Client.E2ES == nil || e.Machine.CPUs != 2 || e.Build.CIURL != "https://ci.example/7" {
				t.Errorf("entry 2 read back as %+v", e)
			}
			if all[3].Gate != history.GateFail || all[2].Gate != "" {
				t.Errorf("gates read back %q, %q; want %q, none", all[3].Gate, all[2].Gate, history.GateFail)
			}
			if !e.StartedAt.Equal(t0.Add(48 * time.Hour)) {
				t.Errorf("started at %v, want %v", e.StartedAt, t0.Add(48*time.Hour))
			}
			for _, c := range []struct {
				f    history.Filter
				want []string // commits, oldest first
			}{
				{history.Filter{Last: 2}, []string{"c3", "c4"}},                                                                     // the newest two, oldest first
				{history.Filter{Since: t0.Add(72 * time.Hour)}, []string{"c3", "c4"}},                                               // since a time
				{history.Filter{Labels: map[string]string{"night": "1"}}, []string{"c1"}},                                           // one label
				{history.Filter{WorkloadFP: all[0].WorkloadFP[:6], Branch: "main", Before: t0.Add(24 * time.Hour)}, []string{"c0"}}, // fingerprint prefix
				{history.Filter{Branch: "other"}, nil},
			} {
				got, err := s.Query(ctx, c.f)
				if err != nil {
					t.Fatal(err)
				}
				var commits []string
				for _, e := range got {
					commits = append(commits, e.Build.Commit)
				}
				if fmt.Sprint(commits) != fmt.Sprint(c.want) {
					t.Errorf("%+v: %v, want %v", c.f, commits, c.want)
				}
			}
			if v, err := s.SchemaVersion(ctx); err != nil || v != 1 {
				t.Errorf("schema version %d, %v; want 1", v, err)
			}
		})
	}
}

// TestOpenMissing: a reader does not create an empty history.
func TestOpenMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.db")
	_, err := history.Open(context.Background(), path, true)
	if err == nil {
		t.Fatal("opened a missing history")
	}
	if _, serr := os.Stat(path); serr == nil {
		t.Errorf("created %s", path)
	}
}

// writerEnv makes the test binary a history writer (TestHelperWriter).
const writerEnv = "SERVEBENCH_HISTORY_WRITER"

// TestHelperWriter is not a test: run by TestTwoWriters as a separate
// process, it adds entries one transaction each, as a CI job would.
func TestHelperWriter(t *testing.T) {
	dsn := os.Getenv(writerEnv)
	if dsn == "" {
		t.Skip("a helper process of TestTwoWriters")
	}
	s := open(t, dsn)
	n, _ := strconv.Atoi(os.Getenv(writerEnv + "_N"))
	for i := range n {
		es := history.FromResults(results(0.1, time.Now(), fmt.Sprintf("%s-%d", os.Getenv(writerEnv+"_NAME"), i), nil), nil, "w")
		if err := s.Add(context.Background(), es); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTwoWriters runs two processes that write one history at once, from
// the first migration on: every entry of both is there.
func TestTwoWriters(t *testing.T) {
	const n = 40
	for kind, dsn := range stores(t) {
		t.Run(kind, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make([]error, 2)
			outs := make([][]byte, 2)
			for w := range 2 {
				wg.Go(func() {
					cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")
					cmd.Env = append(os.Environ(), writerEnv+"="+dsn, writerEnv+"_N="+strconv.Itoa(n), writerEnv+"_NAME=w"+strconv.Itoa(w))
					outs[w], errs[w] = cmd.CombinedOutput()
				})
			}
			wg.Wait()
			for w := range 2 {
				if errs[w] != nil {
					t.Fatalf("writer %d: %v\n%s", w, errs[w], outs[w])
				}
			}
			all, err := open(t, dsn).Query(context.Background(), history.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, e := range all {
				seen[e.Build.Commit] = true
			}
			if len(all) != 2*n || len(seen) != 2*n {
				t.Errorf("%d entries (%d distinct), want %d", len(all), len(seen), 2*n)
			}
		})
	}
}
