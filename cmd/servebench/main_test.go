package main

import (
	"bytes"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/launch/launchtest"
)

// init lets this test binary stand in for the servebench binary: the
// bundled engine is started as os.Executable() + "engine ...", which in a
// test is this binary. Without this, a command that reaches the bundled
// engine in-process (a validation that regressed, or a test that means to)
// would re-run the whole test suite as its "engine".
func init() {
	if len(os.Args) > 1 && os.Args[1] == "engine" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
}

// TestMain removes the servebench binary the startup tests built.
func TestMain(m *testing.M) { os.Exit(launchtest.Run(m)) }

// runMain runs the whole CLI in-process, as a user's shell would run it,
// and returns the exit code and what it printed.
func runMain(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// loadSaved reads the results directory a command wrote (results.json and
// requests.jsonl), failing the test if it is unusable.
func loadSaved(t *testing.T, dir string) (*result.Results, []result.Record) {
	t.Helper()
	res, recs, _, err := result.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return res, recs
}

// waitHealthy polls base/health until it answers 200 (bounded).
func waitHealthy(tb testing.TB, base string) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatalf("%s/health not OK after a minute", base)
}
