package probe_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/launch/launchtest"
)

// The fault matrix (issue 7): every --fault of the bundled engine, run
// through the real servebench CLI (`servebench run`, which starts
// `servebench engine --fault ...` as a child process), checking what the
// harness did: exit status and message, error classes, and that every
// request sent is a record (sent = ok + failed, requests.jsonl holds them
// all). TestFaultMatrix logs the matrix as a Markdown table; run it with
// -v to see it.

// observed is what one faulted `servebench run` left behind.
type observed struct {
	code    int
	msg     string // the "servebench: ..." error line, "" on success
	res     *result.Results
	recs    []result.Record // requests.jsonl
	elapsed time.Duration
}

func (o *observed) classes() map[string]int {
	m := map[string]int{}
	for _, r := range o.recs {
		if r.Error != "" {
			m[r.Error]++
		}
	}
	return m
}

func (o *observed) warnings() string {
	if o.res == nil {
		return ""
	}
	return strings.Join(o.res.Warnings, " | ")
}

// runFault runs `servebench run` (bin) on the bundled engine with fault
// and the extra flags, writing to dir, and reads back what it wrote. It may
// run on any goroutine: failures are returned, not reported.
func runFault(bin, dir, fault string, extra ...string) (*observed, error) {
	args := append([]string{"run", "--speedup", "100", "--engine-arg=--startup-speedup=1000",
		"--engine-arg=--fault=" + fault, "--max-tokens", "32", "--out", dir, "--quiet",
		"--ready-timeout", "30s", "--request-timeout", "20s"}, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	o := &observed{elapsed: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		o.code = ee.ExitCode()
	default:
		return nil, fmt.Errorf("servebench %v: %w", args, err)
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(line, "servebench: ") {
			o.msg = strings.TrimPrefix(line, "servebench: ")
			break
		}
	}
	resPath := filepath.Join(dir, result.ResultsFile)
	if b, err := os.ReadFile(resPath); err == nil {
		if o.res, err = result.ParseResults(resPath, b); err != nil {
			return nil, err
		}
	}
	reqPath := filepath.Join(dir, result.RequestsFile)
	f, err := os.Open(reqPath)
	if err != nil {
		return o, nil // nothing was sent (server never ready)
	}
	defer f.Close()
	recs, warns, err := result.ReadRecords(reqPath, f)
	if err != nil {
		return nil, err
	}
	if len(warns) > 0 {
		return nil, errors.New(strings.Join(warns, "; "))
	}
	o.recs = recs
	return o, nil
}

// checkNoneLost asserts what must hold under every fault: each run's
// requests sent = ok + failed, and requests.jsonl has a record for each
// (retried attempts and warm-up are extra lines, marked as such). It
// returns the records lost (0 when the checks pass).
func checkNoneLost(t *testing.T, o *observed) int {
	t.Helper()
	if o.res == nil {
		if len(o.recs) != 0 {
			t.Errorf("requests.jsonl has %d records but there is no results.json", len(o.recs))
		}
		return 0
	}
	lost := 0
	for _, run := range o.res.Runs {
		failed := 0
		for _, n := range run.Errors {
			failed += n
		}
		if run.Requests != run.OK+failed {
			t.Errorf("run %s: sent %d != ok %d + failed %d (%v)", run.Name, run.Requests, run.OK, failed, run.Errors)
		}
		inFile := 0
		for _, r := range o.recs {
			if r.Run == run.Name && r.Outcome() {
				inFile++
				if r.Error != "" && r.ErrorText == "" {
					t.Errorf("run %s record %d: error class %s without text", run.Name, r.Index, r.Error)
				}
			}
		}
		if inFile != run.Requests {
			t.Errorf("run %s: %d requests sent, %d records in requests.jsonl", run.Name, run.Requests, inFile)
			lost += max(run.Requests-inFile, 0)
		}
	}
	return lost
}

// matrixParallel is how many faulted runs go at once.
const matrixParallel = 6

// matrixRow is one fault and what the harness must do under it.
type matrixRow struct {
	fault    string
	extra    []string
	wantCode int
	wantMsg  string   // in the error message ("" = none expected)
	classes  []string // error classes that must appear (and no others)
	mayClass []string // error classes that may appear, where a race decides
	wantWarn string   // in results.json warnings
	check    func(*testing.T, *observed)
	did      string // what the harness did, for the matrix
}

var matrix = []matrixRow{
	{fault: "never-ready", extra: []string{"--ready-timeout", "2s"}, wantCode: 3, wantMsg: "server not ready after 2s (ready timeout)",
		did: "gave up at --ready-timeout, stopped the server, exit 3; nothing sent"},
	{fault: "exit-during-load", wantCode: 3, wantMsg: "exited",
		did: "saw the process exit before ready, exit 3 with the log tail; nothing sent"},
	// Whether a request goes out to the dead port (a connect error) or the
	// runner sees the exit first and sends nothing more is a race between
	// the next send and the process watcher; either way nothing sent is lost.
	// --warmup 0: a warm-up request would be one of the 3 the engine serves.
	{fault: "crash-after=3", extra: []string{"--warmup", "0", "--requests", "6", "--stream", "on"}, wantCode: 3,
		wantMsg: "server exited during the run", mayClass: []string{"connect"}, wantWarn: "server exited during the run",
		check: func(t *testing.T, o *observed) {
			// The launcher's readiness check (a 1-token completion) is the
			// first of the 3 responses the engine serves.
			if o.res == nil || len(o.res.Runs) != 1 || o.res.Runs[0].OK != 2 {
				t.Errorf("want one run with 2 successful requests before the crash, got %+v", o.res)
			}
		},
		did: "recorded in-flight/later requests as connect errors (none when it saw the exit before the next send), stopped the run, saved partial results, exit 3"},
	{fault: "http-error=0.3:500", extra: []string{"--requests", "12", "--stream", "off"}, wantCode: 0,
		classes: []string{"http_status"},
		check: func(t *testing.T, o *observed) {
			for _, r := range o.recs {
				if r.Error != "" && (r.Status != 500 || !strings.Contains(r.ErrorText, "HTTP 500")) {
					t.Errorf("record %d: status %d %q, want HTTP 500", r.Index, r.Status, r.ErrorText)
				}
			}
		},
		did: "recorded each 500 as http_status (status, message), kept going, statistics over the successes, exit 0"},
	{fault: "http-error=0.5:429", extra: []string{"--requests", "6", "--stream", "off", "--retries", "4"}, wantCode: 0,
		classes: []string{"http_status"}, // on the retried attempts only
		check: func(t *testing.T, o *observed) {
			retried := 0
			for _, r := range o.recs {
				if r.Error != "" && !r.Retried {
					t.Errorf("record %d failed (%s) after 4 retries at rate 0.5: want it retried to success", r.Index, r.Error)
				}
				if r.Retried {
					retried++
					if r.Status != 429 {
						t.Errorf("retried attempt %d: status %d, want 429", r.Index, r.Status)
					}
				}
			}
			if run := o.res.Runs[0]; retried == 0 || run.Retries != retried {
				t.Errorf("retried attempts in requests.jsonl %d, run.retries %d; want equal and > 0", retried, run.Retries)
			}
		},
		did: "retried 429s with backoff (--retries 4), each retried attempt its own record, counted apart in retries, exit 0"},
	{fault: "mid-stream-error-after=4", extra: []string{"--requests", "4", "--stream", "on"}, wantCode: 3,
		wantMsg: "every request failed", classes: []string{"stream_error"}, check: partialTokens(4),
		did: "recorded stream_error with the 4 tokens received (partial trace), exit 3 as every request failed"},
	{fault: "drop-connection-after=4", extra: []string{"--requests", "4", "--stream", "on"}, wantCode: 3,
		wantMsg: "every request failed", classes: []string{"truncated"}, check: partialTokens(4),
		did: "recorded truncated (no [DONE]) with the partial trace, exit 3 as every request failed"},
	{fault: "stall-after=4:30s", extra: []string{"--requests", "3", "--stream", "on", "--stall-timeout", "2s"}, wantCode: 3,
		wantMsg: "every request failed", classes: []string{"timeout"},
		check: func(t *testing.T, o *observed) {
			partialTokens(4)(t, o)
			for _, r := range o.recs {
				if !strings.Contains(r.ErrorText, "stall timeout") {
					t.Errorf("record %d: %q, want the stall timeout named", r.Index, r.ErrorText)
				}
			}
			if o.elapsed > 30*time.Second {
				t.Errorf("took %v: the 30 s stall was waited out instead of --stall-timeout 2s", o.elapsed)
			}
		},
		did: "gave up on each stream after --stall-timeout 2s (timeout, partial trace kept), exit 3 as every request failed"},
	{fault: "malformed-event-after=4", extra: []string{"--requests", "4", "--stream", "on"}, wantCode: 3,
		wantMsg: "every request failed", classes: []string{"malformed"}, check: partialTokens(4),
		did: "recorded malformed with the bad event quoted and the partial trace, exit 3 as every request failed"},
	{fault: "buffer-stream=8", extra: []string{"--requests", "4", "--stream", "on"}, wantCode: 0,
		check: func(t *testing.T, o *observed) {
			for _, r := range o.recs {
				if r.OutputTokens != 32 {
					t.Errorf("record %d: %d tokens, want 32", r.Index, r.OutputTokens)
				}
			}
		},
		did: "all requests succeeded (buffering is not an error; `probe buffering` flags it), exit 0"},
	{fault: "metrics-unavailable", extra: []string{"--requests", "3", "--stream", "on"}, wantCode: 0,
		wantWarn: "/metrics unavailable",
		check: func(t *testing.T, o *observed) {
			run := o.res.Runs[0]
			if run.Engine.TTFTS != nil || run.Client.E2ES == nil {
				t.Errorf("engine TTFT %v, client E2E %v: want engine absent, client present", run.Engine.TTFTS, run.Client.E2ES)
			}
		},
		did: "engine columns absent with a warning, client columns reported, exit 0"},
	// Warm-up runs before the run's first scrape, so the counters there
	// (readiness check + 3 warm-up = 4 requests) are above what is left
	// after the reset (3 requests): the reset shows as counters going down.
	{fault: "metrics-reset=5", extra: []string{"--warmup", "3", "--requests", "4", "--stream", "on"}, wantCode: 0,
		wantWarn: "counter reset",
		check: func(t *testing.T, o *observed) {
			run := o.res.Runs[0]
			if run.Engine.TTFTS != nil || run.Client.E2ES == nil {
				t.Errorf("engine TTFT %v, client E2E %v: want engine absent after the reset, client present", run.Engine.TTFTS, run.Client.E2ES)
			}
		},
		did: "saw counters go down, left engine figures out with a warning per quantity, client columns reported, exit 0"},
	// A reset that leaves the counters above their value at the first
	// scrape cannot be seen in them; the request count reconciliation
	// catches it (the engine counts fewer finished requests than succeeded).
	{fault: "metrics-reset=3", extra: []string{"--requests", "4", "--stream", "on"}, wantCode: 0,
		wantWarn: "counters were reset",
		check: func(t *testing.T, o *observed) {
			run := o.res.Runs[0]
			rec := run.Engine.Reconciliation
			if rec == nil || rec.EngineCount >= float64(rec.OK) || !rec.EngineAbsent {
				t.Errorf("reconciliation %+v: want the engine count below the %d successes, engine figures marked absent", rec, run.OK)
			}
			if run.Engine.TTFTS != nil || run.Engine.E2ES != nil || run.Client.E2ES == nil {
				t.Errorf("engine TTFT %v E2E %v, client E2E %v: want engine absent after the reset, client present", run.Engine.TTFTS, run.Engine.E2ES, run.Client.E2ES)
			}
		},
		did: "waited the 5 s reconcile bound, saw the engine count fewer requests than succeeded (counters reset), left engine figures out with a warning; client columns reported, exit 0"},
}

// partialTokens checks that each failed record kept the k tokens it got.
func partialTokens(k int) func(*testing.T, *observed) {
	return func(t *testing.T, o *observed) {
		for _, r := range o.recs {
			if r.Error != "" && (r.OutputTokens != k || r.Status != 200) {
				t.Errorf("record %d (%s): %d tokens, status %d; want the %d tokens received before the fault, status 200",
					r.Index, r.Error, r.OutputTokens, r.Status, k)
			}
		}
	}
}

func TestFaultMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("builds servebench and starts the engine once per fault")
	}
	var mu sync.Mutex
	table := map[string]string{}
	t.Cleanup(func() {
		keys := make([]string, 0, len(table))
		for k := range table {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return rowIndex(keys[i]) < rowIndex(keys[j]) })
		var b strings.Builder
		b.WriteString("\n| fault | what the harness did (observed) | exit | error classes | engine figures | sent = ok + failed | records lost |\n|---|---|---|---|---|---|---|\n")
		for _, k := range keys {
			b.WriteString(table[k])
		}
		t.Log(b.String())
	})
	// The runs mostly wait (start-up, timeouts, backoff): run them all
	// first, several at once, then check each in its own subtest.
	bin := launchtest.Servebench(t)
	obs := make([]*observed, len(matrix))
	errs := make([]error, len(matrix))
	sem := make(chan struct{}, matrixParallel)
	var wg sync.WaitGroup
	for i, row := range matrix {
		dir := t.TempDir()
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			obs[i], errs[i] = runFault(bin, dir, row.fault, row.extra...)
		})
	}
	wg.Wait()
	for i, row := range matrix {
		t.Run(row.fault, func(t *testing.T) {
			o := obs[i]
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			lost := checkNoneLost(t, o)
			if o.code != row.wantCode {
				t.Errorf("exit %d (%s), want %d", o.code, o.msg, row.wantCode)
			}
			if row.wantMsg != "" && !strings.Contains(o.msg, row.wantMsg) {
				t.Errorf("message %q, want it to contain %q", o.msg, row.wantMsg)
			}
			if row.wantMsg == "" && o.msg != "" {
				t.Errorf("unexpected error: %s", o.msg)
			}
			got := o.classes()
			for _, c := range row.classes {
				if got[c] == 0 {
					t.Errorf("error class %s: none recorded (classes %v)", c, got)
				}
			}
			for c := range got {
				if !slices.Contains(row.classes, c) && !slices.Contains(row.mayClass, c) {
					t.Errorf("unexpected error class %s (%d records): want only %v", c, got[c], row.classes)
				}
			}
			if row.wantWarn != "" && !strings.Contains(o.warnings(), row.wantWarn) {
				t.Errorf("warnings %q, want one containing %q", o.warnings(), row.wantWarn)
			}
			if row.check != nil {
				row.check(t, o)
			}
			mu.Lock()
			table[row.fault] = matrixLine(row, o, lost)
			mu.Unlock()
		})
	}
}

func rowIndex(fault string) int {
	for i, r := range matrix {
		if r.fault == fault {
			return i
		}
	}
	return len(matrix)
}

func matrixLine(row matrixRow, o *observed, lost int) string {
	sent, ok, failed := 0, 0, 0
	if o.res != nil {
		for _, run := range o.res.Runs {
			sent += run.Requests
			ok += run.OK
			for _, n := range run.Errors {
				failed += n
			}
		}
	}
	cls := o.classes()
	var cs []string
	for c, n := range cls {
		cs = append(cs, fmt.Sprintf("%s×%d", c, n))
	}
	sort.Strings(cs)
	classes := strings.Join(cs, ", ")
	if classes == "" {
		classes = "none"
	}
	did := row.did
	if o.msg != "" {
		msg := o.msg
		if len(msg) > 90 {
			msg = msg[:90] + "..."
		}
		did += fmt.Sprintf(": `%s`", strings.ReplaceAll(msg, "|", "/"))
	}
	engine := "-"
	if o.res != nil && len(o.res.Runs) > 0 {
		engine = "absent"
		if o.res.Runs[0].Engine.TTFTS != nil {
			engine = "present"
		}
	}
	return fmt.Sprintf("| `%s` %s | %s | %d | %s | %s | %d = %d + %d (%d lines) | %d |\n",
		row.fault, strings.Join(row.extra, " "), did, o.code, classes, engine, sent, ok, failed, len(o.recs), lost)
}

// TestProbeCLIBundled is issue 7's "done means" for the probes, through
// the real CLI: `servebench probe` starts the bundled engine as a child
// process (with the engine flags given) and prints the verdict.
func TestProbeCLIBundled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds servebench and starts the engine per case")
	}
	bin := launchtest.Servebench(t)
	for _, tc := range []struct {
		name string
		args []string
		want string // the verdict line's start
	}{
		{"cancel default", []string{"cancel"}, "probe cancel: PASS: stops generating"},
		{"cancel ignore-disconnect", []string{"cancel", "--engine-arg=--ignore-disconnect"}, "probe cancel: FAIL: keeps generating, 496 tokens wasted"},
		// 7.5 ms per token, so that a busy machine's stalls do not look like buffering.
		{"buffering plain", []string{"buffering", "--speedup", "2", "--max-tokens", "64"}, "probe buffering: PASS: streams token by token"},
		{"buffering buffer-stream=32", []string{"buffering", "--speedup", "2", "--max-tokens", "64", "--engine-arg=--fault=buffer-stream=32"}, "probe buffering: FAIL: buffered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"probe", "--engine-arg=--startup-speedup=1000", "--settle", "300ms"}, tc.args...)
			if tc.args[0] == "cancel" {
				args = append(args, "--speedup", "10")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if err != nil {
				t.Fatalf("servebench %v: %v\nstderr: %s", args, err, stderr.String())
			}
			out := stdout.String()
			t.Logf("servebench %s\n%s", strings.Join(args, " "), out)
			verdict := strings.SplitN(out, "\n", 2)[0]
			if strings.Contains(verdict, "INCONCLUSIVE") && strings.Contains(verdict, "own process stalling") {
				t.Skipf("machine too busy to judge: %s", verdict)
			}
			if !strings.HasPrefix(verdict, tc.want) {
				t.Errorf("verdict line %q, want it to start %q", verdict, tc.want)
			}
		})
	}
}
