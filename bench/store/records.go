package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/client"
)

// RecordWriter appends result.Records to requests.jsonl, one line per
// request, as each request completes, so an interrupted run leaves a valid
// file holding everything measured so far. It is safe for concurrent use.
//
// Write only queues the record, so a closed-loop worker sends its next
// request at once. One writer goroutine, woken by the first record queued,
// gathers what else completes within flushWindow, encodes it and writes it
// with a single call: a line reaches the file at most a few milliseconds
// after its request completed, and at thousands of requests per second
// one system call (and one wake-up) carries dozens of lines instead of
// one each. Lines are only ever written whole. Call Close (or Err) to wait
// until everything queued is written.
//
// A write that fails (a full disk, a removed folder) stops the writer: the
// file keeps the whole lines written before it (a part line is cut off
// where the file allows), Failed is closed, and the error names the file,
// the cause and how many records the file keeps.
type RecordWriter struct {
	mu     sync.Mutex
	cond   sync.Cond // wakes the writer (work queued) and waiters (batch done)
	w      io.Writer
	c      io.Closer
	name   string // the file's path, for errors (RequestsFile when not a file)
	queue  []result.Record
	busy   bool // the writer holds a batch
	closed bool
	done   chan struct{}
	failed chan struct{} // closed at the first error
	err    error         // first encode or write error; later records are dropped
	kept   int           // records whole in the file
	size   int64         // their bytes (the writer goroutine's)
}

// CreateRecordFile creates (truncating) the JSONL file at path.
func CreateRecordFile(path string) (*RecordWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	rw := NewRecordWriter(f)
	rw.c, rw.name = f, path
	return rw, nil
}

// NewRecordWriter writes records to w as they come; Close stops it.
func NewRecordWriter(w io.Writer) *RecordWriter {
	rw := &RecordWriter{w: w, name: result.RequestsFile, done: make(chan struct{}), failed: make(chan struct{})}
	rw.cond.L = &rw.mu
	go rw.loop()
	return rw
}

// Write queues rec (copied) for writing. It returns the first error seen so
// far; an error of this record shows in a later call or in Err.
func (rw *RecordWriter) Write(rec *result.Record) error {
	if rw == nil {
		return nil
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	switch {
	case rw.err != nil:
		return rw.err
	case rw.closed:
		return fmt.Errorf("%s: record %d after close", result.RequestsFile, rec.Index)
	}
	rw.queue = append(rw.queue, *rec)
	if len(rw.queue) == 1 && !rw.busy {
		rw.cond.Broadcast() // the writer sleeps on an empty queue
	}
	return nil
}

// flushWindow is how long the writer gathers records after the first one
// before writing them.
const flushWindow = 5 * time.Millisecond

// loop is the writer goroutine: take the whole queue, encode it, write it
// in one call, until closed and drained.
func (rw *RecordWriter) loop() {
	defer close(rw.done)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var batch []result.Record
	rw.mu.Lock()
	for {
		for len(rw.queue) == 0 && !rw.closed {
			rw.cond.Wait()
		}
		if len(rw.queue) == 0 {
			rw.mu.Unlock()
			return
		}
		rw.busy = true
		if !rw.closed {
			rw.mu.Unlock()
			time.Sleep(flushWindow) // let the records completing meanwhile join this write
			rw.mu.Lock()
		}
		batch, rw.queue = rw.queue, batch[:0]
		failed := rw.err != nil
		rw.mu.Unlock()

		buf.Reset()
		var err error
		for i := range batch {
			if err == nil {
				err = enc.Encode(&batch[i]) // ends the line with '\n'
			}
			batch[i] = result.Record{} // let the events go
		}
		if err != nil {
			err = fmt.Errorf("encoding a record for %s: %w", rw.name, err)
		} else if !failed {
			err = rw.write(buf.Bytes())
		}

		rw.mu.Lock()
		rw.busy = false
		if err != nil && rw.err == nil {
			rw.err = err
			close(rw.failed)
		}
		rw.cond.Broadcast()
	}
}

// write writes b, whole lines, and counts them. On a failure it counts the
// lines written whole, cuts a part line off a file, and says how many
// records the file keeps. Only the writer goroutine calls it.
func (rw *RecordWriter) write(b []byte) error {
	n, err := rw.w.Write(b)
	whole := bytes.LastIndexByte(b[:n], '\n') + 1
	rw.size += int64(whole)
	rw.mu.Lock()
	rw.kept += bytes.Count(b[:whole], []byte{'\n'})
	kept := rw.kept
	rw.mu.Unlock()
	if err == nil {
		return nil
	}
	if t, ok := rw.w.(interface{ Truncate(int64) error }); ok && whole < n {
		_ = t.Truncate(rw.size) // best effort: the reader skips a part last line anyway
	}
	var pe *fs.PathError
	if errors.As(err, &pe) { // "write PATH: CAUSE": the path is said once
		err = pe.Err
	}
	return fmt.Errorf("writing %s: %w: it keeps the %d records written before", rw.name, err, kept)
}

// Failed is closed at the first error writing the records: the run should
// stop, as nothing it measures from then on can be kept.
func (rw *RecordWriter) Failed() <-chan struct{} {
	if rw == nil {
		return nil
	}
	return rw.failed
}

// Kept is how many records the file holds whole so far (those written,
// not those queued).
func (rw *RecordWriter) Kept() int {
	if rw == nil {
		return 0
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.kept
}

// Err waits until everything queued is written and returns the first error
// (nil for a nil writer, like Write and Close).
func (rw *RecordWriter) Err() error {
	if rw == nil {
		return nil
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.wait()
	return rw.err
}

// wait blocks, with rw.mu held, until the queue is empty and no batch is out.
func (rw *RecordWriter) wait() {
	for len(rw.queue) > 0 || rw.busy {
		rw.cond.Wait()
	}
}

// Close writes everything queued, stops the writer and closes the file, if
// the writer opened one. It returns the first error; closing twice is safe.
func (rw *RecordWriter) Close() error {
	if rw == nil {
		return nil
	}
	rw.mu.Lock()
	already := rw.closed
	rw.closed = true
	rw.cond.Broadcast()
	rw.mu.Unlock()
	<-rw.done
	err := rw.Err()
	if rw.c == nil || already {
		return err
	}
	return errors.Join(err, rw.c.Close())
}

// NewRecord converts a client.Trace into the requests.jsonl line of request
// index of run. lag is how late the request started against its intended
// send time (open loop; 0 otherwise).
func NewRecord(run string, index int, warmup bool, tr *client.Trace, lag time.Duration) result.Record {
	rec := result.Record{
		Run:             run,
		Index:           index,
		Warmup:          warmup,
		Stream:          tr.Stream,
		Start:           tr.Start.UTC(),
		IntendedLagS:    lag.Seconds(),
		WrittenS:        tr.Written.Seconds(),
		TTFBS:           tr.FirstByte.Seconds(),
		FirstTokenS:     tr.FirstToken.Seconds(),
		FirstVisibleS:   tr.FirstVisible.Seconds(),
		E2ES:            tr.Done.Seconds(),
		UsableS:         tr.Usable.Seconds(),
		UsableError:     tr.UsableError,
		Status:          tr.Status,
		PromptTokens:    tr.PromptTokens,
		CachedTokens:    tr.CachedTokens,
		OutputTokens:    tr.OutputTokens,
		TokensFrom:      tr.TokensFrom,
		ContentEncoding: tr.Encoding,
		FinishReason:    tr.FinishReason,
		Error:           string(tr.Error),
		ErrorText:       tr.ErrorText,
		EventsDropped:   tr.EventsDropped,
	}
	if tr.HasEngine {
		e := &tr.Engine
		rec.Engine = &result.EngineRecord{TotalS: e.Total.Seconds(), LoadS: e.Load.Seconds(), PromptEvalS: e.PromptEval.Seconds(),
			EvalS: e.Eval.Seconds(), PromptEvalCount: e.PromptEvalCount, EvalCount: e.EvalCount}
	}
	rec.OtherReasoning = tr.OtherReasoning
	if tr.ReasoningTokens > 0 {
		rec.FirstReasoningS, rec.LastReasoningS = tr.FirstReasoning.Seconds(), tr.LastReasoning.Seconds()
		rec.ReasoningTokens = tr.ReasoningTokens
		if tr.OutputTokens > 0 { // the server's count bounds the text's estimate
			rec.ReasoningTokens = min(rec.ReasoningTokens, tr.OutputTokens)
		}
		rec.AnswerTokens = max(tr.OutputTokens-rec.ReasoningTokens, 0)
	}
	if len(tr.Arrivals) > 0 {
		rec.Arrivals = make([][3]float64, len(tr.Arrivals))
		for i, a := range tr.Arrivals {
			rec.Arrivals[i] = [3]float64{a.At.Seconds(), float64(a.Bytes), float64(a.Tokens)}
		}
	}
	rec.ArrivalsDropped = tr.ArrivalsDropped
	if tr.Events.Len() > 0 {
		// Which events were reasoning stays in the trace: requests.jsonl
		// has no field for it (FirstReasoningS and LastReasoningS bound them).
		rec.Events = keptEvents(tr.Events.Pairs())
		rec.Stutter = rec.Events.Stutter(0)
	}
	return rec
}

// keptEvents is what a record keeps of its trace's event pairs: the
// trace's own slice, not a copy, unless it has room for far more events
// than arrived (an answer much shorter than the room its max_tokens
// made): then a copy of just the events, so that the records a run holds
// in memory hold no empty room.
func keptEvents(pairs [][2]float64) result.Events {
	if cap(pairs)-len(pairs) > len(pairs)/4 {
		return append(result.Events(nil), pairs...)
	}
	return pairs
}
