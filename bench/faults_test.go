package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/result/resulttest"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/engine/sim"
)

// faultSession runs one run of n sequential requests against an engine with
// the given faults, through the whole session, and checks what must hold
// under every fault: every request sent is a record in requests.jsonl
// (none lost), sent = ok + failed, and results.json is written.
func faultSession(t *testing.T, faults []string, stream bool, n int, mutate func(*Config)) (*result.Run, []result.Record, error) {
	t.Helper()
	// Fast start-up: these checks count and classify, they do not time.
	e := startEngine(t, func(o *sim.Options) { o.Faults = faults; o.Seed = 3; o.Speedup = 200 })
	dir := t.TempDir()
	cfg := Config{
		Server: ServerOptions{BaseURL: e.BaseURL()}, Dir: dir, FailOnErrorRate: -1, ReconcileWait: time.Second,
		Runs: []RunSpec{{Name: "r", Workload: workload.Workload{Mode: workload.ModeSequential, Requests: n},
			Request: RequestSpec{MaxTokens: 16, ExactLength: true, Stream: stream}}},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	res, recs, err := Execute(context.Background(), cfg)
	if res == nil || len(res.Runs) != 1 {
		t.Fatalf("Execute returned no run: %v", err)
	}
	b, rerr := os.ReadFile(filepath.Join(dir, result.RequestsFile))
	if rerr != nil {
		t.Fatal(rerr)
	}
	file := resulttest.Records(t, b)
	run := &res.Runs[0]
	if len(file) != len(recs) || run.Requests+run.Retries != len(file) {
		t.Errorf("requests.jsonl %d lines, %d records returned, %d requests + %d retries", len(file), len(recs), run.Requests, run.Retries)
	}
	failed := 0
	for _, c := range run.Errors {
		failed += c
	}
	if run.Requests != n || run.OK+failed != n {
		t.Errorf("sent %d = ok %d + failed %d? want %d requests", run.Requests, run.OK, failed, n)
	}
	if _, serr := os.Stat(filepath.Join(dir, result.ResultsFile)); serr != nil {
		t.Errorf("results.json not written: %v", serr)
	}
	return run, recs, err
}

func TestFaultHTTPError(t *testing.T) {
	run, recs, err := faultSession(t, []string{"http-error=0.3:500"}, false, 20, func(c *Config) { c.FailOnErrorRate = 5 })
	if run.Errors["http_status"] == 0 || run.OK == 0 {
		t.Fatalf("errors %v ok %d: want some of each", run.Errors, run.OK)
	}
	if !errors.Is(err, ErrInvalidRun) || !strings.Contains(err.Error(), "--fail-on-error-rate 5%") {
		t.Errorf("error = %v, want ErrInvalidRun for the error rate", err)
	}
	for _, r := range recs {
		if r.Error == "http_status" && r.Status != 500 {
			t.Errorf("http_status record has status %d", r.Status)
		}
	}
	// Failures never enter the latency statistics.
	if run.Client.E2ES.N != run.OK {
		t.Errorf("E2E over %d requests, %d succeeded", run.Client.E2ES.N, run.OK)
	}
}

func TestFaultRetries(t *testing.T) {
	run, recs, err := faultSession(t, []string{"http-error=0.4:503"}, true, 15, func(c *Config) { c.Retries = 4; c.RetryBackoff = 10 * time.Millisecond })
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	retried := 0
	for _, r := range recs {
		if r.Retried {
			retried++
			if r.Status != 503 {
				t.Errorf("retried attempt with status %d", r.Status)
			}
		}
	}
	if run.Retries == 0 || retried != run.Retries {
		t.Errorf("Retries %d, retried records %d: want equal and > 0", run.Retries, retried)
	}
}

func TestFaultMidStreamError(t *testing.T) {
	run, _, err := faultSession(t, []string{"mid-stream-error-after=3"}, true, 5, nil)
	if run.Errors["stream_error"] != 5 {
		t.Errorf("errors %v, want 5 stream_error", run.Errors)
	}
	if !errors.Is(err, ErrInvalidRun) || !strings.Contains(err.Error(), "every request failed") {
		t.Errorf("error = %v, want every request failed", err)
	}
}

func TestFaultStall(t *testing.T) {
	run, recs, _ := faultSession(t, []string{"stall-after=3:300s"}, true, 3, func(c *Config) { c.StallTimeout = 500 * time.Millisecond })
	if run.Errors["timeout"] != 3 {
		t.Errorf("errors %v, want 3 timeouts", run.Errors)
	}
	for _, r := range recs {
		if len(r.Events) == 0 {
			t.Errorf("timed-out record lost its partial trace: %+v", r)
		}
	}
}

func TestFaultDroppedAndMalformed(t *testing.T) {
	run, _, _ := faultSession(t, []string{"drop-connection-after=4"}, true, 3, nil)
	if run.Errors["truncated"] != 3 {
		t.Errorf("drop-connection: errors %v, want 3 truncated", run.Errors)
	}
	run, _, _ = faultSession(t, []string{"malformed-event-after=2"}, true, 3, nil)
	if run.Errors["malformed"] != 3 {
		t.Errorf("malformed-event: errors %v, want 3 malformed", run.Errors)
	}
}

func TestFaultMetricsUnavailable(t *testing.T) {
	run, _, err := faultSession(t, []string{"metrics-unavailable"}, true, 3, nil)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if run.Engine.TTFTS != nil || run.Client.E2ES == nil || run.Client.E2ES.N != 3 {
		t.Errorf("engine %+v client e2e %+v: want engine absent, client present", run.Engine, run.Client.E2ES)
	}
	if !strings.Contains(strings.Join(run.Warnings, "\n"), "engine figures absent") {
		t.Errorf("warnings %q lack the reason", run.Warnings)
	}
}

func TestFaultMetricsReset(t *testing.T) {
	run, _, err := faultSession(t, []string{"metrics-reset"}, false, 3, nil)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	// A reset back to the pre-run value cannot be seen in the counters; the
	// reconciliation then catches it (engine count below the successes) and
	// the engine figures are left out, as for a reset the counters show.
	if run.Engine.E2ES != nil || run.Engine.TTFTS != nil {
		t.Errorf("engine figures reported across a counter reset: e2e %+v, ttft %+v", run.Engine.E2ES, run.Engine.TTFTS)
	}
	if rc := run.Engine.Reconciliation; rc == nil || !rc.EngineAbsent || rc.EngineCount >= float64(run.OK) {
		t.Errorf("reconciliation %+v: want the engine count below the %d successes, engine figures marked absent", rc, run.OK)
	}
	if ws := strings.Join(run.Warnings, "\n"); !strings.Contains(ws, "counters were reset") || !strings.Contains(ws, "engine figures absent") || run.Client.E2ES == nil {
		t.Errorf("warnings %q, client %+v", run.Warnings, run.Client.E2ES)
	}
}
