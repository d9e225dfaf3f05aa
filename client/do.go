package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Causes of the request context's cancellation, to tell the classes apart.
var (
	errRequestTimeout = errors.New("request timeout")
	errStalled        = errors.New("stall timeout")
	errDrained        = errors.New("drain done")
)

// Do sends req and records what happened. It never returns an error: a
// failure is a Trace whose Error says which class, with everything measured
// before the failure kept (the partial trace). Do is safe for concurrent
// use; concurrency beyond Options.MaxConns waits for a connection (Trace.Conn
// shows how long).
//
// Timings are offsets from Trace.Start on the monotonic clock: Conn, Written
// and FirstByte when the transport got a connection, had written the whole
// request and saw the first response byte; FirstToken at the first event with
// any generated text (content or reasoning); FirstVisible at the first event
// with non-empty content (a role-only chunk is not visible); Done at
// [DONE]. Non-streaming, FirstToken = FirstVisible = Done = the moment the
// whole body was read and parsed.
//
// Tokens per event are 1, unless the chunk also carries cumulative usage
// (vLLM's continuous_usage_stats), whose growth is used instead.
// OutputTokens is the server's usage.completion_tokens when it sent usage
// (TokensFrom "usage"), else the sum over events (TokensFrom "events").
//
// Classes: ErrConnect (no response), ErrHTTPStatus (non-2xx; ErrorText has
// the server's message, RetryAfter its Retry-After), ErrStreamError (an
// error event in a 2xx stream or body), ErrMalformed (an event or body that
// is not the expected JSON), ErrTruncated (no [DONE], or the body was cut),
// ErrTimeout (RequestTimeout or StallTimeout), ErrCanceled (ctx done),
// ErrRequest (req or the API key invalid; nothing sent).
func (c *Client) Do(ctx context.Context, req *Request) Trace {
	var path string
	var body []byte
	err := c.keyErr
	if err == nil {
		path, err = req.path()
	}
	if err == nil {
		body, err = req.body()
	}
	if err != nil {
		return Trace{Stream: req.Stream, Start: time.Now(), Error: ErrRequest, ErrorText: shorten(err.Error())}
	}

	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if c.opts.RequestTimeout > 0 {
		// A timer canceling rctx, not a child context with a deadline:
		// each context derived from another costs the parent a map of
		// children, and the request's own is enough (its cause says which).
		t := time.AfterFunc(c.opts.RequestTimeout, func() { cancel(errRequestTimeout) })
		defer t.Stop()
	}
	ph := new(phases)
	if req.Arrivals {
		ph.arrivals = &arrivalLog{}
	}
	send, err := c.sender(rctx, ph, req, path, body)
	if err != nil {
		return Trace{Stream: req.Stream, Start: time.Now(), Error: ErrRequest,
			ErrorText: c.short(fmt.Sprintf("base URL %q: %v", c.opts.BaseURL, err))}
	}

	// The trace lives in x, which stays on Do's stack: no allocation.
	x := exchange{c: c, tr: Trace{Stream: req.Stream}, parent: ctx, rctx: rctx, cancel: cancel, keepText: req.KeepText}
	tr := &x.tr
	if req.Usable != nil {
		x.usable = newUsableWatch(req.Usable)
	}
	ph.start = time.Now()
	tr.Start = ph.start
	if ph.arrivals != nil {
		ph.arrivals.start = ph.start
	}
	if req.Stream && c.opts.StallTimeout > 0 {
		x.stall = newStallWatch(tr.Start, c.opts.StallTimeout, cancel)
		defer x.stall.stop()
	}
	resp, err := send()
	if err != nil {
		ph.copyTo(tr)
		class := x.classify(err, ErrConnect)
		x.fail(class, x.describe(class, err))
		return *tr
	}
	defer resp.Body.Close()
	if ph.arrivals != nil && c.direct == nil { // the inline path hooks its connection instead
		resp.Body = arrivalBody{resp.Body, ph.arrivals}
	}
	tr.Status = resp.StatusCode
	x.readResponse(resp, req)
	ph.copyTo(tr) // WroteRequest may be reported late, from another goroutine
	if ph.arrivals != nil {
		ph.arrivals.finish(tr)
	}
	return *tr
}

// readResponse reads resp, decoded as it came (gzip), by the shape its
// endpoint, mode and status give it into x's trace.
func (x *exchange) readResponse(resp *http.Response, req *Request) {
	rbody, ok := x.decoded(resp)
	if g, isGzip := rbody.(*gunzip); isGzip {
		defer g.release()
	}
	switch {
	case !ok:
	case resp.StatusCode/100 != 2:
		x.httpError(resp, rbody)
	case req.Endpoint == EndpointOllamaChat && req.Stream:
		if x.readNDJSON(rbody, req.MaxTokens) {
			x.drain(resp.Body)
		}
	case req.Endpoint == EndpointOllamaChat:
		x.readOllamaBody(rbody)
	case req.Stream && !isEventStream(resp.Header.Get("Content-Type")):
		x.unexpectedBody(resp, rbody)
	case isAPIEndpoint(req.Endpoint) && req.Stream:
		if x.readAPIStream(rbody, req.MaxTokens) {
			x.drain(resp.Body) // the rest of the raw body: a gzip trailer, the last chunk
		}
	case req.Stream:
		if x.readStream(rbody, req.MaxTokens) {
			x.drain(resp.Body) // the rest of the raw body: a gzip trailer, the last chunk
		}
	case isAPIEndpoint(req.Endpoint):
		x.readAPIBody(rbody, req.Endpoint)
	default:
		x.readBody(rbody)
	}
}

// sender builds the POST of body to path, timed by ph: written by the
// client's own inline transport when it has one (c.direct), else an
// http.Request for c.hc. An error is the base URL's.
func (c *Client) sender(rctx context.Context, ph *phases, req *Request, path string, body []byte) (func() (*http.Response, error), error) {
	hdrs := apiHeaders(req.Endpoint, c.opts.APIKey)
	if d := c.direct; d != nil {
		pool := c.hc.Transport.(*inlineTransport)
		return func() (*http.Response, error) {
			return pool.do(rctx, call{probe: postProbe, hooks: ph, seen: ph.seen(),
				write:  func(bw *bufio.Writer) error { return d.write(bw, path, body, req.Stream, req.ID, hdrs) },
				rewind: func() error { return nil }})
		}, nil
	}
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(rctx, ph.clientTrace()),
		http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	if req.Stream {
		hreq.Header.Set("Accept", "text/event-stream")
	}
	c.auth(hreq)
	if req.ID != "" {
		hreq.Header.Set(RequestIDHeader, req.ID)
	}
	for _, h := range hdrs {
		hreq.Header.Set(h[0], h[1])
	}
	return func() (*http.Response, error) { return c.hc.Do(hreq) }, nil
}

// decoded is resp's body as the client reads it: decompressed as it
// arrives when the server (or a proxy) gzipped it. An encoding it did not
// ask for fails the request (false).
func (x *exchange) decoded(resp *http.Response) (io.Reader, bool) {
	enc := resp.Header.Get("Content-Encoding")
	x.tr.Encoding = enc
	switch {
	case enc == "" || strings.EqualFold(enc, EncodingIdentity):
		x.tr.Encoding = ""
		return resp.Body, true
	case strings.EqualFold(enc, EncodingGzip) || strings.EqualFold(enc, "x-gzip"):
		return newGunzip(resp.Body), true
	}
	x.fail(ErrMalformed, fmt.Sprintf("response Content-Encoding %q: the client asked for %s", enc, x.c.opts.AcceptEncoding))
	return nil, false
}

// exchange is the state of one Do call after the request was built.
type exchange struct {
	c      *Client
	tr     Trace           // returned by Do; its Start is the exchange's
	parent context.Context // the caller's: done means canceled
	rctx   context.Context // the request's: its cause tells timeouts apart
	cancel context.CancelCauseFunc
	stall  *stallWatch
	// keepText: gather the answer's content into Trace.Text (Request.KeepText).
	keepText bool
	usable   *usableWatch // nil: Trace.Usable not measured
}

func (x *exchange) since() time.Duration { return time.Since(x.tr.Start) }

// fail records a failure seen now.
func (x *exchange) fail(class ErrorClass, text string) {
	x.tr.Done = x.since()
	x.tr.Error = class
	x.tr.ErrorText = x.c.short(text)
}

// classify names the class of a transport or read error, or otherwise.
func (x *exchange) classify(err error, otherwise ErrorClass) ErrorClass {
	switch context.Cause(x.rctx) {
	case errRequestTimeout, errStalled:
		return ErrTimeout
	}
	if x.parent.Err() != nil {
		return ErrCanceled
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ErrTimeout // e.g. dial timeout
	}
	return otherwise
}

// describe is ErrorText for err of class: the timeout that fired, or the
// error itself.
func (x *exchange) describe(class ErrorClass, err error) string {
	switch {
	case class == ErrTimeout && context.Cause(x.rctx) == errStalled:
		return fmt.Sprintf("stall timeout: no event for %s", x.c.opts.StallTimeout)
	case class == ErrTimeout && context.Cause(x.rctx) == errRequestTimeout:
		return fmt.Sprintf("request timeout after %s", x.c.opts.RequestTimeout)
	case class == ErrCanceled:
		return "canceled: " + context.Cause(x.parent).Error()
	}
	return err.Error()
}

// drain reads what is left after [DONE] (normally just the end of the
// chunked body), at most 64 KiB, so the connection can be reused, waiting
// at most a second: a server that keeps the stream open must not hold the
// caller. io.Discard reads into a buffer it pools: none per request; the
// timer holds only cancel, so x and its trace can stay on Do's stack.
func (x *exchange) drain(body io.Reader) {
	cancel := x.cancel
	t := time.AfterFunc(time.Second, func() { cancel(errDrained) })
	defer t.Stop()
	_, _ = io.CopyN(io.Discard, body, 64<<10)
}

func isEventStream(ct string) bool {
	// Servers differ in parameters (charset); some send none at all, which
	// is read as a stream too.
	return ct == "" || len(ct) >= 17 && ct[:17] == "text/event-stream"
}

// retryAfter parses a Retry-After header in its seconds form.
func retryAfter(h string) time.Duration {
	if n, err := strconv.Atoi(h); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	return 0
}

// phases hears of an exchange's milestones: from the inline transport on
// the calling goroutine, or as httptrace callbacks, which net/http's
// Transport (https) runs on its own goroutines: hence atomics.
type phases struct {
	start                    time.Time
	arrivals                 *arrivalLog // nil: reads not recorded
	conn, written, firstRead atomic.Int64
	reused                   atomic.Bool
}

func (p *phases) clientTrace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn:              func(i httptrace.GotConnInfo) { p.gotConn(i.Conn, i.Reused) },
		WroteRequest:         func(httptrace.WroteRequestInfo) { p.wrote() },
		GotFirstResponseByte: p.firstByte,
	}
}

func (p *phases) at(v *atomic.Int64) { v.Store(int64(time.Since(p.start))) }

func (p *phases) gotConn(_ net.Conn, reused bool) {
	p.at(&p.conn)
	p.reused.Store(reused)
}

// seen is the connection read hook recording arrivals; nil without them.
func (p *phases) seen() func(int) {
	if p.arrivals == nil {
		return nil
	}
	return p.arrivals.read
}

func (p *phases) wrote()     { p.at(&p.written) }
func (p *phases) firstByte() { p.at(&p.firstRead) }

func (p *phases) copyTo(tr *Trace) {
	tr.Conn = time.Duration(p.conn.Load())
	tr.ConnReused = p.reused.Load()
	tr.Written = time.Duration(p.written.Load())
	tr.FirstByte = time.Duration(p.firstRead.Load())
}

// stallWatch cancels a streaming request when no event arrived for limit.
// The hot path only stores the last event's offset; the timer re-arms
// itself from that, so there is no timer reset per event.
type stallWatch struct {
	start   time.Time
	limit   time.Duration
	last    atomic.Int64
	cancel  context.CancelCauseFunc
	mu      sync.Mutex // guards timer and stopped against fire
	timer   *time.Timer
	stopped bool
}

func newStallWatch(start time.Time, limit time.Duration, cancel context.CancelCauseFunc) *stallWatch {
	w := &stallWatch{start: start, limit: limit, cancel: cancel}
	w.mu.Lock()
	w.timer = time.AfterFunc(limit, w.fire)
	w.mu.Unlock()
	return w
}

func (w *stallWatch) event(at time.Duration) { w.last.Store(int64(at)) }

func (w *stallWatch) fire() {
	idle := time.Since(w.start) - time.Duration(w.last.Load())
	if idle >= w.limit {
		w.cancel(errStalled)
		return
	}
	w.mu.Lock()
	if !w.stopped {
		w.timer.Reset(w.limit - idle)
	}
	w.mu.Unlock()
}

func (w *stallWatch) stop() {
	w.mu.Lock()
	w.stopped = true
	w.timer.Stop()
	w.mu.Unlock()
}
