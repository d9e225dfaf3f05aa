package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// Writes are group-committed: a record is encoded by its caller, and
// whichever caller finds no write in progress writes every line pending at
// that moment in one call, repeating until none is left. Under load one
// syscall carries many lines; at low rates each line is written at once.
// Lines are only ever written whole.
type RecordWriter struct {
	mu       sync.Mutex
	idle     sync.Cond // signalled when a flush ends
	w        io.Writer
	c        io.Closer
	pending  []byte
	spare    []byte
	flushing bool
	n        int
	err      error // first write error; later writes are skipped
}

var encodeBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// CreateRecordFile creates (truncating) the JSONL file at path.
func CreateRecordFile(path string) (*RecordWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	rw := NewRecordWriter(f)
	rw.c = f
	return rw, nil
}

// NewRecordWriter writes records to w (no buffering beyond group commit).
func NewRecordWriter(w io.Writer) *RecordWriter {
	rw := &RecordWriter{w: w}
	rw.idle.L = &rw.mu
	return rw
}

// Write appends rec as one JSON line. It returns the first write error.
func (rw *RecordWriter) Write(rec *result.Record) error {
	if rw == nil {
		return nil
	}
	buf := encodeBufs.Get().(*bytes.Buffer)
	defer encodeBufs.Put(buf)
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil { // Encode ends the line with '\n'
		return fmt.Errorf("encoding record %d: %w", rec.Index, err)
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.err != nil {
		return rw.err
	}
	rw.pending = append(rw.pending, buf.Bytes()...)
	if rw.flushing {
		return nil // the flushing caller writes this line next
	}
	rw.flushing = true
	for len(rw.pending) > 0 && rw.err == nil {
		out := rw.pending
		rw.pending = rw.spare[:0]
		rw.mu.Unlock()
		_, err := rw.w.Write(out)
		rw.mu.Lock()
		rw.spare = out[:0]
		if err != nil {
			rw.err = fmt.Errorf("writing %s: %w", result.RequestsFile, err)
		} else {
			rw.n += bytes.Count(out, []byte{'\n'})
		}
	}
	rw.flushing = false
	rw.idle.Broadcast()
	return rw.err
}

// Count is the number of records written.
func (rw *RecordWriter) Count() int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	for rw.flushing {
		rw.idle.Wait()
	}
	return rw.n
}

// Err waits for a write in progress and returns the first write error.
func (rw *RecordWriter) Err() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	for rw.flushing {
		rw.idle.Wait()
	}
	return rw.err
}

// Close waits for a write in progress and closes the file, if the writer
// opened one.
func (rw *RecordWriter) Close() error {
	if rw == nil {
		return nil
	}
	err := rw.Err()
	if rw.c == nil {
		return err
	}
	return errors.Join(err, rw.c.Close())
}

// NewRecord converts a client.Trace into the requests.jsonl line of request
// index of run. lag is how late the request started against its intended
// send time (open loop; 0 otherwise).
func NewRecord(run string, index int, warmup bool, tr *client.Trace, lag time.Duration) result.Record {
	rec := result.Record{
		Run:           run,
		Index:         index,
		Warmup:        warmup,
		Stream:        tr.Stream,
		Start:         tr.Start.UTC(),
		IntendedLagS:  lag.Seconds(),
		WrittenS:      tr.Written.Seconds(),
		TTFBS:         tr.FirstByte.Seconds(),
		FirstTokenS:   tr.FirstToken.Seconds(),
		FirstVisibleS: tr.FirstVisible.Seconds(),
		E2ES:          tr.Done.Seconds(),
		Status:        tr.Status,
		PromptTokens:  tr.PromptTokens,
		OutputTokens:  tr.OutputTokens,
		TokensFrom:    tr.TokensFrom,
		FinishReason:  tr.FinishReason,
		Error:         string(tr.Error),
		ErrorText:     tr.ErrorText,
		EventsDropped: tr.EventsDropped,
	}
	if len(tr.Events) > 0 {
		rec.Events = make([][2]float64, len(tr.Events))
		for i, ev := range tr.Events {
			rec.Events[i] = [2]float64{ev.At.Seconds(), float64(ev.Tokens)}
		}
	}
	return rec
}
