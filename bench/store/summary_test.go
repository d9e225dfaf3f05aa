package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/result/resulttest"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/scrape"
)

// countOutcomes fills run.Requests, OK and Errors from the measured records
// as a run's Tally counts them: a request retried after a 429/503 appears
// once per attempt; only its last attempt counts as the request's outcome.
func countOutcomes(run *result.Run, recs []result.Record) {
	var t Tally
	for i := range recs {
		t.Add(&recs[i])
	}
	run.Requests, run.OK, run.Errors = t.Requests, t.OK, t.ErrorsMap()
}

// exactLengthWarning is ExactAcc's warning over recs.
func exactLengthWarning(recs []result.Record, maxTokens int) string {
	var a ExactAcc
	for i := range recs {
		a.Add(&recs[i], maxTokens)
	}
	return a.Warning(maxTokens)
}

func TestNewRecordAndWriter(t *testing.T) {
	tr := client.Trace{
		Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Written: time.Millisecond,
		FirstByte: 20 * time.Millisecond, FirstToken: 25 * time.Millisecond, FirstVisible: 26 * time.Millisecond,
		Done: 3850 * time.Millisecond, Stream: true, Status: 200, OutputTokens: 2, TokensFrom: "usage",
		Events: client.MakeEvents(client.Event{At: 26 * time.Millisecond, Tokens: 1}, client.Event{At: 41 * time.Millisecond, Tokens: 1}),
	}
	rec := NewRecord("streaming", 4, false, &tr, 2*time.Millisecond)
	if rec.FirstVisibleS != 0.026 || rec.E2ES != 3.85 || rec.IntendedLagS != 0.002 || len(rec.Events) != 2 || rec.Events[1] != [2]float64{0.041, 1} {
		t.Fatalf("record = %+v", rec)
	}
	var buf bytes.Buffer
	rw := NewRecordWriter(&buf)
	for i := 0; i < 3; i++ {
		rec.Index = i
		if err := rw.Write(&rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3", len(lines))
	}
	var back result.Record
	if err := json.Unmarshal([]byte(lines[2]), &back); err != nil || back.Index != 2 || back.Run != "streaming" {
		t.Fatalf("line 3 = %q (%v)", lines[2], err)
	}
}

// failingWriter fails after n writes, like a full disk.
type failingWriter struct {
	n       int
	written bytes.Buffer
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return f.written.Write(p)
}

func TestRecordWriterKeepsFirstError(t *testing.T) {
	fw := &failingWriter{n: 1}
	rw := NewRecordWriter(fw)
	defer rw.Close()
	rec := result.Record{Run: "r"}
	if err := rw.Write(&rec); err != nil || rw.Err() != nil {
		t.Fatal(err, rw.Err())
	}
	_ = rw.Write(&rec)
	if err := rw.Err(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("error after the failed write = %v", err)
	}
	if err := rw.Write(&rec); err == nil {
		t.Error("a write after the failure was accepted")
	}
	if n := len(resulttest.Records(t, fw.written.Bytes())); n != 1 {
		t.Fatalf("%d records written, want 1", n)
	}
}

func TestClientSummaryExcludesWarmupAndFailures(t *testing.T) {
	recs := []result.Record{
		{Warmup: true, FirstVisibleS: 9, E2ES: 9, OutputTokens: 4},
		{Stream: true, FirstVisibleS: 0.1, E2ES: 1.0, OutputTokens: 10, Events: [][2]float64{{0.1, 1}, {0.2, 1}, {0.4, 1}}},
		{Stream: true, FirstVisibleS: 0.3, E2ES: 2.1, OutputTokens: 10},
		{Stream: true, FirstVisibleS: 0.05, E2ES: 0.06, Error: "timeout"},
	}
	cs := ClientSummary(recs)
	if cs.E2ES.N != 2 || cs.E2ES.Median != 1.55 {
		t.Errorf("e2e = %+v, want n=2 median 1.55", cs.E2ES)
	}
	if cs.ITLS.N != 2 || cs.ITLS.Max < 0.19 || cs.ITLS.Max > 0.21 {
		t.Errorf("itl = %+v, want the 2 gaps of request 1", cs.ITLS)
	}
	if cs.TPOTS.N != 2 || cs.TPOTS.Min < 0.099 || cs.TPOTS.Min > 0.101 { // (1.0-0.1)/9
		t.Errorf("tpot = %+v", cs.TPOTS)
	}
	if cs.FirstVisibleFromIntendedS != nil {
		t.Error("closed-loop run got from-intended figures")
	}
	run := &result.Run{}
	countOutcomes(run, recs)
	if run.Requests != 3 || run.OK != 2 || run.Errors["timeout"] != 1 {
		t.Errorf("outcomes = %d ok %d errors %v", run.Requests, run.OK, run.Errors)
	}
}

func TestExactLengthWarning(t *testing.T) {
	ok := []result.Record{{OutputTokens: 256}, {OutputTokens: 256}, {OutputTokens: 3, Error: "timeout"}}
	if w := exactLengthWarning(ok, 256); w != "" {
		t.Errorf("warning on exact lengths: %s", w)
	}
	off := append(ok, result.Record{OutputTokens: 17})
	if w := exactLengthWarning(off, 256); !strings.Contains(w, "1 of 3") || !strings.Contains(w, "ignore_eos") {
		t.Errorf("warning = %q", w)
	}
}

// slowWriter is a file that takes a while per write, so concurrent records
// pile up and get group-committed.
type slowWriter struct {
	bytes.Buffer
	writes int
}

func (s *slowWriter) Write(p []byte) (int, error) {
	s.writes++
	time.Sleep(100 * time.Microsecond)
	return s.Buffer.Write(p)
}

func TestRecordWriterConcurrent(t *testing.T) {
	sw := &slowWriter{}
	rw := NewRecordWriter(sw)
	const workers, each = 8, 500
	done := make(chan struct{})
	for w := 0; w < workers; w++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < each; i++ {
				rec := result.Record{Run: "r", Index: i, Events: [][2]float64{{0.1, 1}}}
				if err := rw.Write(&rec); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for w := 0; w < workers; w++ {
		<-done
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	recs := resulttest.Records(t, sw.Bytes())
	if len(recs) != workers*each {
		t.Fatalf("%d lines, want %d", len(recs), workers*each)
	}
	if sw.writes >= workers*each {
		t.Errorf("%d writes for %d records: no group commit", sw.writes, workers*each)
	}
}

// TestRecordWriterBatches: records completing together share one write,
// and a lone record still reaches the file without Close.
func TestRecordWriterBatches(t *testing.T) {
	sw := &slowWriter{}
	rw := NewRecordWriter(sw)
	defer rw.Close()
	rec := result.Record{Run: "r"}
	if err := rw.Write(&rec); err != nil {
		t.Fatal(err)
	}
	if err := rw.Err(); err != nil || sw.writes != 1 || len(resulttest.Records(t, sw.Bytes())) != 1 {
		t.Fatalf("a lone record: err %v, %d writes, %q", err, sw.writes, sw.String())
	}
	// Requests completing 0.1 ms apart, as at thousands per second.
	const n = 20
	for i := range n {
		rec.Index = i
		if err := rw.Write(&rec); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Microsecond)
	}
	if err := rw.Err(); err != nil || len(resulttest.Records(t, sw.Bytes())) != n+1 {
		t.Fatalf("err %v, %d lines, want %d", err, len(resulttest.Records(t, sw.Bytes())), n+1)
	}
	if w := sw.writes - 1; w > 8 {
		t.Errorf("%d records 0.1 ms apart took %d writes; want them batched (at most 8)", n, w)
	}
}

// TestClientSummaryMultiTokenChunks: ITL is per token (a gap g over k
// tokens is k samples of g/k), so a speculative-decoding stream's ITL is
// its token pace, and the event gaps are kept apart in ITLEvent. TPOT comes
// from the output token count and is unchanged by chunking.
func TestClientSummaryMultiTokenChunks(t *testing.T) {
	recs := []result.Record{{Stream: true, FirstTokenS: 0.1, FirstVisibleS: 0.1, E2ES: 0.4, OutputTokens: 9,
		Events: [][2]float64{{0.1, 1}, {0.2, 4}, {0.4, 4}}}}
	cs := ClientSummary(recs)
	if cs.ITLS == nil || cs.ITLS.N != 8 || math.Abs(cs.ITLS.Min-0.025) > 1e-9 || math.Abs(cs.ITLS.Max-0.05) > 1e-9 || math.Abs(cs.ITLS.Mean-0.0375) > 1e-9 {
		t.Errorf("itl = %+v, want 8 per-token samples: 4 of 25 ms, 4 of 50 ms", cs.ITLS)
	}
	if cs.ITLEventS == nil || cs.ITLEventS.N != 2 || math.Abs(cs.ITLEventS.Max-0.2) > 1e-9 {
		t.Errorf("itl_event = %+v, want the 2 event gaps (100 ms, 200 ms)", cs.ITLEventS)
	}
	// per-token ITL's mean equals TPOT when the first event is the first
	// visible one: the two definitions agree
	if cs.TPOTS == nil || math.Abs(cs.TPOTS.Mean-cs.ITLS.Mean) > 1e-9 {
		t.Errorf("tpot %+v and per-token itl mean %v should agree", cs.TPOTS, cs.ITLS.Mean)
	}
}

// TestEngineSummaryQueueSeries: a queue family missing after a run counts
// as zero wait when the server is known to export it (the vLLM dialect
// observes it for every request; a family present without new
// observations), and stays absent when it may simply not be exported
// (SGLang before sglang:queue_time_seconds).
func TestEngineSummaryQueueSeries(t *testing.T) {
	ttft := func(prefix string, n int) string {
		return fmt.Sprintf("# TYPE %[1]stime_to_first_token_seconds histogram\n"+
			"%[1]stime_to_first_token_seconds_bucket{model_name=\"m\",le=\"+Inf\"} %[2]d\n"+
			"%[1]stime_to_first_token_seconds_sum{model_name=\"m\"} %[3]g\n"+
			"%[1]stime_to_first_token_seconds_count{model_name=\"m\"} %[2]d\n", prefix, n, 0.03*float64(n))
	}
	queue := func(name string, n int) string {
		return fmt.Sprintf("# TYPE %[1]s histogram\n%[1]s_bucket{model_name=\"m\",le=\"+Inf\"} %[2]d\n"+
			"%[1]s_sum{model_name=\"m\"} %[3]g\n%[1]s_count{model_name=\"m\"} %[2]d\n", name, n, 0.5*float64(n))
	}
	cases := []struct {
		name          string
		before, after string
		want          *result.Hist // nil: absent
	}{
		// vLLM-named server that creates the queue series on first
		// observation: none yet after 20 requests -> 0 over 20.
		{"vllm no series yet", ttft("vllm:", 0), ttft("vllm:", 20), &result.Hist{Count: 20}},
		// The series exists and saw no new observations: 0 over 20.
		{"sglang series unchanged", ttft("sglang:", 0) + queue("sglang:queue_time_seconds", 4),
			ttft("sglang:", 20) + queue("sglang:queue_time_seconds", 4), &result.Hist{Count: 20}},
		// An SGLang without the family may not export it at all: absent.
		{"sglang no family", ttft("sglang:", 0), ttft("sglang:", 20), nil},
		// Waits observed: the figure is the server's.
		{"vllm observed", ttft("vllm:", 0), ttft("vllm:", 20) + queue("vllm:request_queue_time_seconds", 20),
			&result.Hist{Mean: 0.5, Count: 20, P50Est: 0, P90Est: 0, P99Est: 0}},
		// No requests counted: nothing to call zero.
		{"vllm idle", ttft("vllm:", 0), ttft("vllm:", 0), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := scrape.ParseSource(strings.NewReader(c.before), "before")
			if err != nil {
				t.Fatal(err)
			}
			a, err := scrape.ParseSource(strings.NewReader(c.after), "after")
			if err != nil {
				t.Fatal(err)
			}
			got := EngineSummary(scrape.Diff(b, a, nil, scrape.Filter{})).QueueS
			if (got == nil) != (c.want == nil) || (got != nil && (got.Count != c.want.Count || got.Mean != c.want.Mean)) {
				t.Errorf("QueueS = %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestFailuresBounded: a server whose every error text differs (a request
// id in each) cannot make the failure counts grow past maxErrorTexts, and
// the total still counts every failure.
func TestFailuresBounded(t *testing.T) {
	var f Failures
	for range 3 {
		f.Add(&result.Record{Error: "http_status", ErrorText: "HTTP 503: overloaded"})
	}
	for i := range 1000 {
		f.Add(&result.Record{Error: "http_status", ErrorText: fmt.Sprintf("HTTP 500: request %d failed", i)})
	}
	f.Add(&result.Record{Error: "timeout", Warmup: true}) // not a measured outcome
	if len(f.count) > maxErrorTexts || f.total != 1003 {
		t.Errorf("%d texts kept (max %d), total %d (want 1003)", len(f.count), maxErrorTexts, f.total)
	}
	if got, want := f.Commonest(), ": http_status: HTTP 503: overloaded (3 of 1003 failures)"; got != want {
		t.Errorf("commonest = %q, want %q", got, want)
	}
}

// fullDisk takes room bytes, then fails with ENOSPC, writing what fits
// (a part line, as a full file system does).
type fullDisk struct {
	room    int
	written bytes.Buffer
}

func (d *fullDisk) Write(p []byte) (int, error) {
	n := min(len(p), d.room)
	d.room -= n
	d.written.Write(p[:n])
	if n < len(p) {
		return n, syscall.ENOSPC
	}
	return n, nil
}

// TestRecordWriterDiskFull: the write that finds the disk full stops the
// writer at once (Failed closed), and its error names the file, the cause
// and how many records the file keeps whole: those before the part line.
func TestRecordWriterDiskFull(t *testing.T) {
	rec := result.Record{Run: "streaming", E2ES: 1.5, OutputTokens: 64}
	line, _ := json.Marshal(&rec)
	d := &fullDisk{room: 3*(len(line)+1) + len(line)/2} // three lines and half of the fourth
	rw := NewRecordWriter(d)
	defer rw.Close()
	for i := range 3 {
		rec.Index = i
		if err := rw.Write(&rec); err != nil {
			t.Fatal(err)
		}
		if err := rw.Err(); err != nil { // one line per write
			t.Fatal(err)
		}
	}
	select {
	case <-rw.Failed():
		t.Fatal("Failed closed before any write failed")
	default:
	}
	for i := 3; i < 6; i++ {
		rec.Index = i
		_ = rw.Write(&rec)
	}
	err := rw.Err()
	select {
	case <-rw.Failed():
	case <-time.After(time.Second):
		t.Fatal("Failed not closed after the failed write")
	}
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), result.RequestsFile) ||
		!strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), "keeps the 3 records") {
		t.Errorf("error %q: want the file, the cause and the 3 records kept", err)
	}
	if rw.Kept() != 3 {
		t.Errorf("Kept() = %d, want 3", rw.Kept())
	}
	if err := rw.Write(&rec); err == nil {
		t.Error("a record accepted after the disk filled")
	}
}

// TestCreateRecordFileCutsPartLine: on a file, the part line a full disk
// leaves is cut off, so the file holds whole records only.
func TestCreateRecordFileCutsPartLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), result.RequestsFile)
	rw, err := CreateRecordFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := rw.w.(*os.File)
	rec := result.Record{Run: "r"}
	line, _ := json.Marshal(&rec)
	rw.w = &truncatingFull{File: f, room: len(line) + 1 + 5}
	_ = rw.Write(&rec)
	_ = rw.Write(&rec)
	_ = rw.Close()
	b, _ := os.ReadFile(path)
	if string(b) != string(line)+"\n" {
		t.Errorf("file %q: want the one whole line", b)
	}
}

// truncatingFull is a file that takes room bytes, then fails with ENOSPC.
type truncatingFull struct {
	*os.File
	room int
}

func (d *truncatingFull) Write(p []byte) (int, error) {
	n := min(len(p), d.room)
	d.room -= n
	if _, err := d.File.Write(p[:n]); err != nil {
		return 0, err
	}
	if n < len(p) {
		return n, &os.PathError{Op: "write", Path: d.Name(), Err: syscall.ENOSPC}
	}
	return n, nil
}

// TestEngineSummaryBounds: a /metrics delta whose observations all sit in
// one bucket (the seed's 20 requests of 3.857 s in vLLM's (2.5, 5] E2E
// bucket) records each quantile's bucket, so reports print "2.5-5" and
// not an interpolated ~3.75 / ~4.75 / ~4.975; a spread delta records none.
func TestEngineSummaryBounds(t *testing.T) {
	e2e := func(counts ...int) string {
		var b strings.Builder
		b.WriteString("# TYPE vllm:e2e_request_latency_seconds histogram\n")
		for i, le := range []string{"1", "2.5", "5", "10", "+Inf"} {
			fmt.Fprintf(&b, "vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",le=%q} %d\n", le, counts[i])
		}
		fmt.Fprintf(&b, "vllm:e2e_request_latency_seconds_sum{model_name=\"m\"} %g\nvllm:e2e_request_latency_seconds_count{model_name=\"m\"} %d\n",
			3.857*float64(counts[4]), counts[4])
		return b.String()
	}
	diff := func(after string) *result.Hist {
		b, err := scrape.ParseSource(strings.NewReader(e2e(0, 0, 0, 0, 0)), "before")
		if err != nil {
			t.Fatal(err)
		}
		a, err := scrape.ParseSource(strings.NewReader(after), "after")
		if err != nil {
			t.Fatal(err)
		}
		return EngineSummary(scrape.Diff(b, a, nil, scrape.Filter{})).E2ES
	}
	one := diff(e2e(0, 0, 20, 20, 20))
	for _, p := range []string{"p50", "p90", "p99"} {
		if _, b := one.Quantile(p); b == nil || b.Above != 2.5 || b.AtMost == nil || *b.AtMost != 5 {
			t.Errorf("one bucket: %s bound %+v, want (2.5, 5]", p, b)
		}
	}
	if spread := diff(e2e(5, 10, 20, 20, 20)); spread.Bounds != nil {
		t.Errorf("spread over three buckets: bounds %+v, want none", spread.Bounds)
	}
}
