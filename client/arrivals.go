package client

import (
	"io"
	"time"
)

// MaxArrivals caps Trace.Arrivals, as MaxEvents caps Events;
// ArrivalsDropped counts the reads past it.
const MaxArrivals = MaxEvents

// Arrival is one read of the response (Request.Arrivals): when it returned
// (offset from Trace.Start), the bytes it delivered and the generated
// tokens of the events it completed. Over plain http:// a read is one read
// of the connection, and the bytes are as sent on the wire (the response
// head in the first, HTTP chunk framing, compression); otherwise (https) a
// read of the response body. A proxy that holds a stream and lets it go in
// clumps shows as few arrivals of many tokens.
type Arrival struct {
	At     time.Duration
	Bytes  int
	Tokens int
}

// arrivalLog records a response's reads. It is used on the goroutine that
// reads the response only.
type arrivalLog struct {
	start   time.Time
	list    []Arrival
	dropped int
}

// read records a read of n bytes that returned now.
func (a *arrivalLog) read(n int) {
	if n <= 0 {
		return
	}
	if len(a.list) >= MaxArrivals {
		a.dropped++
		return
	}
	a.list = append(a.list, Arrival{At: time.Since(a.start), Bytes: n})
}

// finish gives each arrival the tokens of the events it completed (an
// event belongs to the last read that returned before it was parsed) and
// non-streaming, the whole answer's to the last read.
func (a *arrivalLog) finish(tr *Trace) {
	tr.Arrivals, tr.ArrivalsDropped = a.list, a.dropped
	if len(a.list) == 0 {
		return
	}
	if !tr.Stream {
		if tr.OK() {
			a.list[len(a.list)-1].Tokens = tr.OutputTokens
		}
		return
	}
	i := 0
	for _, ev := range tr.Events.All() {
		for i+1 < len(a.list) && a.list[i+1].At <= ev.At {
			i++
		}
		a.list[i].Tokens += ev.Tokens
	}
}

// arrivalBody records the reads of a response body (the paths that do not
// go through the inline transport's connection hook).
type arrivalBody struct {
	io.ReadCloser
	log *arrivalLog
}

func (b arrivalBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.log.read(n)
	return n, err
}
