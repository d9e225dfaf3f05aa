package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/client"
)

// RecordWriter appends result.Records to requests.jsonl, one line per
// request, each line written with a single Write call as the request
// completes, so an interrupted run leaves a valid file holding everything
// measured so far. It is safe for concurrent use.
type RecordWriter struct {
	mu  sync.Mutex
	w   io.Writer
	c   io.Closer
	buf bytes.Buffer
	n   int
	err error // first write error; later writes are skipped
}

// CreateRecordFile creates (truncating) the JSONL file at path.
func CreateRecordFile(path string) (*RecordWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	return &RecordWriter{w: f, c: f}, nil
}

// NewRecordWriter writes records to w (unbuffered: each record is one Write).
func NewRecordWriter(w io.Writer) *RecordWriter { return &RecordWriter{w: w} }

// Write appends rec as one JSON line.
func (rw *RecordWriter) Write(rec *result.Record) error {
	if rw == nil {
		return nil
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.err != nil {
		return rw.err
	}
	rw.buf.Reset()
	enc := json.NewEncoder(&rw.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil { // Encode ends the line with '\n'
		return fmt.Errorf("encoding record %d: %w", rec.Index, err)
	}
	if _, err := rw.w.Write(rw.buf.Bytes()); err != nil {
		rw.err = fmt.Errorf("writing %s: %w", result.RequestsFile, err)
		return rw.err
	}
	rw.n++
	return nil
}

// Count is the number of records written.
func (rw *RecordWriter) Count() int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.n
}

// Err is the first write error, if any.
func (rw *RecordWriter) Err() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.err
}

// Close closes the underlying file, if the writer opened one.
func (rw *RecordWriter) Close() error {
	if rw == nil || rw.c == nil {
		return nil
	}
	return rw.c.Close()
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
