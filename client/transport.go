package client

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"time"
)

// inlineTransport is an HTTP/1.1 keep-alive transport for plain http://
// servers that does all of an exchange's I/O on the caller's goroutine.
//
// net/http's Transport runs a reader and a writer goroutine per connection
// and hands every request and response between them and the caller over
// channels: three goroutine wake-ups per request, which on a small shared
// host cost as much CPU and latency as the server's own work on a short
// request and so cap the request rate a benchmark can drive. Here a
// request is one write of the whole request and the response is read where
// it is consumed. Requests over TLS (or any other scheme) go to fallback.
//
// It serves one host (the base URL's): requests to any other, which only a
// redirect would make, go to fallback too, so a pooled connection is never
// handed a request for another server.
//
// The pool holds at most maxConns connections, idle and busy; a request
// beyond that waits for one (httptrace GotConn says when it got it). A
// connection that failed, was cancelled, or whose body was not read to the
// end is closed, never reused.
type inlineTransport struct {
	host     string // host[:port] as in URLs
	addr     string // host:port to dial
	dialer   *net.Dialer
	fallback http.RoundTripper
	slots    chan struct{}    // one token per open connection
	idle     chan *inlineConn // connections ready for a request
	idleFor  time.Duration    // idle connections older than this are closed, not reused
	// checkAfter is the idle time after which a connection is checked for
	// a close by the server before it is reused. net/http's reader
	// goroutine notices such closes as they happen; here nothing reads an
	// idle connection, and servers close idle ones early (uvicorn, which
	// serves vLLM and SGLang, after 5 s). Sending on a closed connection
	// would fail and be sent again, but the failed try would count in the
	// request's timings.
	checkAfter time.Duration
}

type inlineConn struct {
	conn      net.Conn
	head      *headLimit // under br: bounds a response head
	br        *bufio.Reader
	bw        *bufio.Writer
	idleSince time.Time
}

// newInlineTransport serves base's host, dialled on http's default port
// when base names none, as net/http dials it.
func newInlineTransport(base *url.URL, dialer *net.Dialer, maxConns int, idleFor time.Duration, fallback http.RoundTripper) *inlineTransport {
	return &inlineTransport{host: base.Host, addr: net.JoinHostPort(base.Hostname(), cmp.Or(base.Port(), "80")),
		dialer: dialer, fallback: fallback, idleFor: idleFor, checkAfter: time.Second,
		slots: make(chan struct{}, maxConns), idle: make(chan *inlineConn, maxConns)}
}

// RoundTrip implements http.RoundTripper.
func (t *inlineTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" || req.URL.Host != t.host {
		return t.fallback.RoundTrip(req)
	}
	c := call{
		probe: req,
		close: req.Close,
		write: func(bw *bufio.Writer) error { return req.Write(bw) },
		hooks: traceHooks{httptrace.ContextClientTrace(req.Context())},
	}
	if req.GetBody != nil {
		c.rewind = func() (err error) {
			req.Body, err = req.GetBody()
			return err
		}
	}
	resp, err := t.do(req.Context(), c)
	if err != nil {
		closeBody(req)
	}
	return resp, err
}

// call is one request for do: how to write it, and whom to tell as it
// progresses.
type call struct {
	write  func(*bufio.Writer) error // the whole request
	rewind func() error              // makes write ready to send again; nil: it cannot be
	probe  *http.Request             // what http.ReadResponse reads the answer for (its method)
	close  bool                      // the request asked for the connection to be closed
	hooks  connHooks
	seen   func(n int) // hears of each read of the connection for this exchange; nil: none
}

// connHooks hear of an exchange's milestones, on the calling goroutine.
type connHooks interface {
	gotConn(conn net.Conn, reused bool)
	wrote()
	firstByte()
}

// traceHooks passes the milestones on to net/http/httptrace callbacks.
type traceHooks struct{ t *httptrace.ClientTrace }

func (h traceHooks) gotConn(conn net.Conn, reused bool) {
	if h.t != nil && h.t.GotConn != nil {
		h.t.GotConn(httptrace.GotConnInfo{Conn: conn, Reused: reused})
	}
}

func (h traceHooks) wrote() {
	if h.t != nil && h.t.WroteRequest != nil {
		h.t.WroteRequest(httptrace.WroteRequestInfo{})
	}
}

func (h traceHooks) firstByte() {
	if h.t != nil && h.t.GotFirstResponseByte != nil {
		h.t.GotFirstResponseByte()
	}
}

// do sends c on a pooled connection and returns the response, whose body
// the caller reads and closes.
func (t *inlineTransport) do(ctx context.Context, c call) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		pc, reused, err := t.get(ctx)
		if err != nil {
			return nil, err
		}
		c.hooks.gotConn(pc.conn, reused)
		resp, err := t.exchange(ctx, pc, c)
		if err == nil {
			return resp, nil
		}
		t.discard(pc)
		// A kept-alive connection the server has since closed fails before
		// any byte of an answer: the server never saw the request, so it
		// is sent again, once, on a new connection (as net/http does).
		var fresh errNoAnswer
		if !reused || attempt > 0 || !errors.As(err, &fresh) || c.rewind == nil || ctx.Err() != nil {
			return nil, err
		}
		if err := c.rewind(); err != nil {
			return nil, err
		}
	}
}

// errNoAnswer is a failure before the first response byte.
type errNoAnswer struct{ error }

func (e errNoAnswer) Unwrap() error { return e.error }

// exchange writes c on pc and reads the response head; the body is read
// by the caller through the returned response.
func (t *inlineTransport) exchange(ctx context.Context, pc *inlineConn, c call) (*http.Response, error) {
	// Cancelling ctx unblocks whatever I/O is in progress on this
	// goroutine; the connection is then closed, not reused.
	stop := context.AfterFunc(ctx, func() { pc.conn.SetDeadline(time.Unix(1, 0)) })
	pc.head.seen = c.seen
	fail := func(err error) (*http.Response, error) {
		stop()
		pc.head.seen = nil
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if err := c.write(pc.bw); err != nil {
		return fail(errNoAnswer{err})
	}
	if err := pc.bw.Flush(); err != nil {
		return fail(errNoAnswer{err})
	}
	c.hooks.wrote()
	if _, err := pc.br.Peek(1); err != nil {
		return fail(errNoAnswer{err})
	}
	c.hooks.firstByte()
	for {
		pc.head.left = maxHeadBytes
		resp, err := http.ReadResponse(pc.br, c.probe)
		pc.head.left = -1
		if err != nil {
			return fail(fmt.Errorf("reading response head: %w", err))
		}
		// An interim 1xx answer (e.g. 100 Continue) is followed by the real one.
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		resp.Body = &inlineBody{t: t, pc: pc, rc: resp.Body, stop: stop, keep: !resp.Close && !c.close,
			eof: resp.Body == http.NoBody}
		return resp, nil
	}
}

// directPath writes Do's requests straight onto a pooled connection,
// without building an http.Request (URL parsing, header maps, the
// http.Client's bookkeeping: a quarter of the client's own CPU time per
// short request). Only for what it can write exactly as net/http would: a
// plain http:// base URL without userinfo, query or fragment (Do sends
// nothing with an API key that does not fit in a header).
type directPath struct {
	prefix string    // the base URL's path, escaped, e.g. "" or "/proxy"
	head   [2]string // from " HTTP/1.1" to the field before Content-Length, without and with Accept: text/event-stream
}

// postProbe is the request http.ReadResponse is told the answers are for.
var postProbe = &http.Request{Method: http.MethodPost}

func newDirectPath(u *url.URL, apiKey, acceptEncoding string) *directPath {
	if u.Scheme != "http" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" ||
		u.Host == "" {
		return nil
	}
	head := " HTTP/1.1\r\nHost: " + u.Host
	for _, h := range sdkHeaders(acceptEncoding) {
		head += "\r\n" + h[0] + ": " + h[1]
	}
	head += "\r\nContent-Type: application/json"
	if apiKey != "" {
		head += "\r\nAuthorization: Bearer " + apiKey
	}
	return &directPath{prefix: u.EscapedPath(), head: [2]string{head, head + "\r\nAccept: text/event-stream"}}
}

// write writes a POST of body to path (which needs no escaping), with an
// X-Request-Id header when id is not empty and the endpoint's own headers
// (apiHeaders: checked values, canonical names).
func (d *directPath) write(bw *bufio.Writer, path string, body []byte, stream bool, id string, hdrs [][2]string) error {
	bw.WriteString("POST ")
	bw.WriteString(d.prefix)
	bw.WriteString(path)
	if stream {
		bw.WriteString(d.head[1])
	} else {
		bw.WriteString(d.head[0])
	}
	if id != "" {
		bw.WriteString("\r\n" + RequestIDHeader + ": ")
		bw.WriteString(id)
	}
	for _, h := range hdrs {
		bw.WriteString("\r\n" + h[0] + ": ")
		bw.WriteString(h[1])
	}
	bw.WriteString("\r\nContent-Length: ")
	bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(len(body)), 10))
	bw.WriteString("\r\n\r\n")
	_, err := bw.Write(body)
	return err
}

// maxHeadBytes bounds what is read while a response head is parsed, as
// net/http's Transport bounds it (10 MB there; 1 MiB is plenty for any
// inference server's few headers).
const maxHeadBytes = 1 << 20

// headLimit fails reads past left bytes while left >= 0, so a server that
// sends an endless head gets an error, not all of the client's memory.
type headLimit struct {
	net.Conn
	left int64       // -1: no limit
	seen func(n int) // the exchange's read hook (call.seen); nil: none
}

var errHeadTooLarge = fmt.Errorf("response head over %d bytes", maxHeadBytes)

func (h *headLimit) Read(p []byte) (int, error) {
	if h.left < 0 {
		n, err := h.Conn.Read(p)
		if h.seen != nil {
			h.seen(n)
		}
		return n, err
	}
	if h.left == 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > h.left {
		p = p[:h.left]
	}
	n, err := h.Conn.Read(p)
	h.left -= int64(n)
	if h.seen != nil {
		h.seen(n)
	}
	return n, err
}

// get returns an idle connection to host, or dials one when the pool has
// room; otherwise it waits for whichever comes first, a connection coming
// back or room for a new one.
func (t *inlineTransport) get(ctx context.Context) (*inlineConn, bool, error) {
	for {
		var pc *inlineConn
		select {
		case pc = <-t.idle:
		default:
			select {
			case pc = <-t.idle:
			case t.slots <- struct{}{}:
				return t.dial(ctx)
			case <-ctx.Done():
				return nil, false, ctx.Err()
			}
		}
		idle := time.Since(pc.idleSince)
		if idle < t.idleFor && (idle < t.checkAfter || !peerClosed(pc.conn)) {
			return pc, true, nil
		}
		t.discard(pc) // idle too long, or the server has closed it
	}
}

func (t *inlineTransport) dial(ctx context.Context) (*inlineConn, bool, error) {
	conn, err := t.dialer.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		<-t.slots
		return nil, false, err
	}
	head := &headLimit{Conn: conn, left: -1}
	return &inlineConn{conn: conn, head: head, br: bufio.NewReaderSize(head, 16<<10), bw: bufio.NewWriterSize(conn, 4<<10)}, false, nil
}

// put returns a connection whose exchange ended cleanly to the pool. It
// never blocks: idle has room for every connection the slots allow.
func (t *inlineTransport) put(pc *inlineConn) {
	pc.idleSince = time.Now()
	t.idle <- pc
}

// discard closes a connection that cannot be reused and frees its slot.
func (t *inlineTransport) discard(pc *inlineConn) {
	pc.conn.Close()
	<-t.slots
}

// CloseIdleConnections closes the idle connections (http.Client calls it).
func (t *inlineTransport) CloseIdleConnections() {
	for {
		select {
		case pc := <-t.idle:
			t.discard(pc)
		default:
			if c, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
				c.CloseIdleConnections()
			}
			return
		}
	}
}

// inlineBody is a response body read straight from its connection, which
// goes back to the pool once the body has been read to its end and closed.
type inlineBody struct {
	t    *inlineTransport
	pc   *inlineConn
	rc   io.ReadCloser
	stop func() bool // unregisters the cancellation hook
	keep bool        // the server allows another request on this connection
	eof  bool
	bad  bool // a read failed: the connection's state is unknown
	done bool
}

func (b *inlineBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, errors.New("read on closed response body")
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.eof = true
	case err != nil:
		b.bad = true
	}
	return n, err
}

func (b *inlineBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	b.pc.head.seen = nil // the next exchange on this connection is another request's
	// Unregistering fails when cancellation already set a past deadline.
	cancelled := !b.stop()
	// Bytes read past the end of the response are no answer to anything
	// (a server out of step with its own framing): the next request would
	// read them as its response.
	if b.eof && b.keep && !b.bad && !cancelled && b.pc.br.Buffered() == 0 {
		b.t.put(b.pc)
		return nil
	}
	b.t.discard(b.pc)
	return nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
