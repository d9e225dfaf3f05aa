package client

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer is a real HTTP server that counts the connections it
// accepted and the requests it answered.
type countingServer struct {
	*httptest.Server
	conns, requests atomic.Int64
}

func newCountingServer(t *testing.T, h http.HandlerFunc) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func jsonAnswer(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`)
}

// TestInlineTransportReuses sends sequential requests, streaming and not,
// over one connection.
func TestInlineTransportReuses(t *testing.T) {
	s := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") == "text/event-stream" {
			writeEvents(w, r, vllmChunk("a"), "[DONE]")
			return
		}
		jsonAnswer(w, r)
	})
	c := New(Options{BaseURL: s.URL})
	defer c.Close()
	for i := range 6 {
		tr := c.Do(context.Background(), chatReq(i%2 == 0))
		if !tr.OK() || tr.ConnReused != (i > 0) || tr.Written <= 0 || tr.FirstByte < tr.Written {
			t.Fatalf("request %d: ok %v (%s %s), reused %v, written %v, first byte %v", i, tr.OK(), tr.Error, tr.ErrorText,
				tr.ConnReused, tr.Written, tr.FirstByte)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("server accepted %d connections for 6 sequential requests; want 1", n)
	}
}

// TestInlineTransportServerClosedIdle: a kept-alive connection the server
// has closed since is replaced, and the request is sent once, not lost.
func TestInlineTransportServerClosedIdle(t *testing.T) {
	s := newCountingServer(t, jsonAnswer)
	c := New(Options{BaseURL: s.URL})
	defer c.Close()
	if tr := c.Do(context.Background(), chatReq(false)); !tr.OK() {
		t.Fatalf("first: %s %s", tr.Error, tr.ErrorText)
	}
	s.CloseClientConnections()
	time.Sleep(20 * time.Millisecond) // let the FIN arrive
	tr := c.Do(context.Background(), chatReq(false))
	if !tr.OK() || tr.ConnReused {
		t.Fatalf("after the server closed the idle connection: ok %v (%s %s), reused %v", tr.OK(), tr.Error, tr.ErrorText, tr.ConnReused)
	}
	if got := s.requests.Load(); got != 2 {
		t.Errorf("server answered %d requests; want 2", got)
	}
}

// TestInlineTransportConnectionClose: a response with Connection: close is
// not followed by another request on its connection.
func TestInlineTransportConnectionClose(t *testing.T) {
	s := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		jsonAnswer(w, r)
	})
	c := New(Options{BaseURL: s.URL})
	defer c.Close()
	for i := range 3 {
		if tr := c.Do(context.Background(), chatReq(false)); !tr.OK() || tr.ConnReused {
			t.Fatalf("request %d: ok %v (%s), reused %v", i, tr.OK(), tr.ErrorText, tr.ConnReused)
		}
	}
	if n := s.conns.Load(); n != 3 {
		t.Errorf("server accepted %d connections; want 3", n)
	}
}

// TestInlineTransportCancelMidStream: a request cancelled while its stream
// is being read ends as canceled, promptly, and its connection (in an
// unknown state) is closed and never reused.
func TestInlineTransportCancelMidStream(t *testing.T) {
	s := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "text/event-stream" {
			jsonAnswer(w, r)
			return
		}
		writeEvents(w, r, vllmChunk("a"), "sleep:10s", vllmChunk("b"), "[DONE]")
	})
	c := New(Options{BaseURL: s.URL, MaxConns: 1})
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	tr := c.Do(ctx, chatReq(true))
	if tr.Error != ErrCanceled || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled stream: error %q after %v; want %q well before the 10 s stall", tr.Error, time.Since(start), ErrCanceled)
	}
	// MaxConns is 1: this only gets a connection if the cancelled one's slot was freed.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	next := c.Do(ctx2, chatReq(false))
	if !next.OK() || next.ConnReused || s.conns.Load() != 2 {
		t.Errorf("request after a cancel: ok %v (%s %s), reused %v, %d connections; want it answered on a second connection",
			next.OK(), next.Error, next.ErrorText, next.ConnReused, s.conns.Load())
	}
}

// TestInlineTransportFallback: schemes other than http, and hosts other
// than the base URL's, go to the fallback transport (net/http's).
func TestInlineTransportFallback(t *testing.T) {
	var fell atomic.Int64
	fb := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		fell.Add(1)
		return nil, io.ErrUnexpectedEOF
	})
	tp := newInlineTransport(mustParseURL(t, "http://127.0.0.1:1"), &net.Dialer{}, 1, time.Minute, fb)
	for i, u := range []string{"https://127.0.0.1:1/v1/models", "http://127.0.0.2:1/v1/models"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if _, err := tp.RoundTrip(req); err != io.ErrUnexpectedEOF || fell.Load() != int64(i+1) {
			t.Errorf("%s: err %v, fallback calls %d; want the fallback's error", u, err, fell.Load())
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// writtenRequest parses what write writes as a server would, returning the
// request and its body.
func writtenRequest(t *testing.T, write func(*bufio.Writer) error) (*http.Request, string) {
	t.Helper()
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	if err := write(bw); err != nil {
		t.Fatal(err)
	}
	bw.Flush()
	r, err := http.ReadRequest(bufio.NewReader(&buf))
	if err != nil {
		t.Fatalf("%q: %v", buf.String(), err)
	}
	b, _ := io.ReadAll(r.Body)
	return r, string(b)
}

// sameRequest fails t unless ours (with body ob) reads as std (body sb).
func sameRequest(t *testing.T, what string, ours *http.Request, ob string, std *http.Request, sb string) {
	t.Helper()
	if ours.Method != std.Method || ours.RequestURI != std.RequestURI || ours.Host != std.Host ||
		ours.ContentLength != std.ContentLength || ob != sb || !reflect.DeepEqual(ours.Header, std.Header) {
		t.Errorf("%s: %s %s host %s len %d body %q headers %v;\nnet/http: %s %s host %s len %d body %q headers %v", what,
			ours.Method, ours.RequestURI, ours.Host, ours.ContentLength, ob, ours.Header,
			std.Method, std.RequestURI, std.Host, std.ContentLength, sb, std.Header)
	}
}

// TestDirectPathMatchesNetHTTP: what Do writes straight onto the
// connection parses as the request net/http would have written for it.
func TestDirectPathMatchesNetHTTP(t *testing.T) {
	const base, key, path, body = "http://127.0.0.1:8000/pre%20fix", "k", "/v1/chat/completions", `{"model":"m"}`
	for _, enc := range AcceptEncodings {
		testDirectPathMatches(t, base, key, path, body, enc)
	}
	for _, b := range []string{"https://127.0.0.1:8000", "http://u:p@127.0.0.1:8000", "http://127.0.0.1:8000?x=1"} {
		if newDirectPath(mustParseURL(t, b), "", EncodingGzip) != nil {
			t.Errorf("direct path for %s; want requests to go through net/http's client", b)
		}
	}
}

func testDirectPathMatches(t *testing.T, base, key, path, body, enc string) {
	d := newDirectPath(mustParseURL(t, base), key, enc)
	if d == nil {
		t.Fatal("no direct path for a plain http base URL")
	}
	for _, endpoint := range []string{"chat", EndpointMessages} {
		hdrs := apiHeaders(endpoint, key) // Anthropic's x-api-key and version on messages
		for _, stream := range []bool{false, true} {
			ours, ob := writtenRequest(t, func(bw *bufio.Writer) error { return d.write(bw, path, []byte(body), stream, "sb-x-1-ab", hdrs) })
			std, sb := writtenRequest(t, func(bw *bufio.Writer) error {
				req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if stream {
					req.Header.Set("Accept", "text/event-stream")
				}
				(&Client{opts: Options{APIKey: key, AcceptEncoding: enc}}).auth(req)
				req.Header.Set(RequestIDHeader, "sb-x-1-ab")
				if endpoint == EndpointMessages {
					req.Header.Set("x-api-key", key)
					req.Header.Set("anthropic-version", AnthropicVersion)
				}
				return req.Write(bw)
			})
			sameRequest(t, fmt.Sprintf("direct path, %s, %s, stream %v", enc, endpoint, stream), ours, ob, std, sb)
			if got := ours.Header.Get("Accept-Encoding"); got != enc {
				t.Errorf("Accept-Encoding %q, want %q", got, enc)
			}
		}
	}
}

// TestAPIKeyWithLineBreak: an API key a header cannot carry (here with the
// line break an environment file left in it) fails Do as a request error
// and Models with an error, both naming the key, never quoting it, and
// nothing is dialled, on the direct path and through net/http's client.
func TestAPIKeyWithLineBreak(t *testing.T) {
	const key = "sk-SECRET-0123\r\nX-Injected: 1"
	s := newCountingServer(t, jsonAnswer)
	for _, base := range []string{s.URL, strings.Replace(s.URL, "http://", "http://u:p@", 1)} {
		c := New(Options{BaseURL: base, APIKey: key})
		defer c.Close()
		tr := c.Do(context.Background(), chatReq(true))
		if tr.Error != ErrRequest || !strings.Contains(tr.ErrorText, "API key") || strings.Contains(tr.ErrorText, "SECRET") {
			t.Errorf("%s: Do: %q %q; want %q naming the API key without quoting it", base, tr.Error, tr.ErrorText, ErrRequest)
		}
		_, err := c.Models(context.Background())
		if err == nil || !strings.Contains(err.Error(), "API key") || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: Models: %v; want an error naming the API key without quoting it", base, err)
		}
	}
	if n := s.conns.Load(); n != 0 {
		t.Errorf("server accepted %d connections; want none", n)
	}
}

func mustParseURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestDoThroughHTTPClient: a base URL the direct path does not take (here
// with userinfo) still works, through net/http's client and the inline
// transport's Request.Write path, basic auth included.
func TestDoThroughHTTPClient(t *testing.T) {
	var user, pass string
	s := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ = r.BasicAuth()
		jsonAnswer(w, r)
	})
	c := New(Options{BaseURL: strings.Replace(s.URL, "http://", "http://u:p@", 1)})
	defer c.Close()
	if c.direct != nil {
		t.Fatal("direct path taken for a base URL with userinfo")
	}
	for i := range 2 {
		if tr := c.Do(context.Background(), chatReq(false)); !tr.OK() || tr.ConnReused != (i > 0) || tr.Written <= 0 {
			t.Fatalf("request %d: ok %v (%s %s), reused %v, written %v", i, tr.OK(), tr.Error, tr.ErrorText, tr.ConnReused, tr.Written)
		}
	}
	if user != "u" || pass != "p" {
		t.Errorf("basic auth %q:%q; want u:p", user, pass)
	}
}

// TestInlineTransportChecksIdleConnections: a kept-alive connection idle
// past checkAfter is peeked at before reuse: a live one is reused, one the
// server closed is replaced without first sending on it (a failed try
// would count in the request's timings).
func TestInlineTransportChecksIdleConnections(t *testing.T) {
	s := newCountingServer(t, jsonAnswer)
	tp := newInlineTransport(mustParseURL(t, s.URL), &net.Dialer{}, 2, time.Minute, http.DefaultTransport)
	tp.checkAfter = 0
	defer tp.CloseIdleConnections()
	send := func() (conns []bool) {
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { conns = append(conns, i.Reused) }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace),
			http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(`{}`))
		resp, err := tp.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return conns
	}
	send()
	if got := send(); !reflect.DeepEqual(got, []bool{true}) {
		t.Errorf("live idle connection: connections got %v; want one, reused", got)
	}
	s.CloseClientConnections()
	time.Sleep(20 * time.Millisecond) // let the FIN arrive
	if got := send(); !reflect.DeepEqual(got, []bool{false}) {
		t.Errorf("idle connection closed by the server: connections got %v; want one new one, no try on the closed one", got)
	}
}

// TestInlineTransportBytesAfterResponse: a server that sends more than its
// response says (here a stray line after the body) does not get its extra
// bytes read as the next answer: the connection is not reused.
func TestInlineTransportBytesAfterResponse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					body := `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"length"}]}`
					fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s\r\nstray\r\n", len(body), body)
				}
			}()
		}
	}()
	c := New(Options{BaseURL: "http://" + ln.Addr().String()})
	defer c.Close()
	for i := range 2 {
		if tr := c.Do(context.Background(), chatReq(false)); !tr.OK() || tr.ConnReused {
			t.Fatalf("request %d: ok %v (%s %s), reused %v; want an answer on a fresh connection", i, tr.OK(), tr.Error, tr.ErrorText, tr.ConnReused)
		}
	}
}

// TestInlineTransportEndlessHead: a server that never ends its response
// head gets a clear error once the head passes maxHeadBytes.
func TestInlineTransportEndlessHead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		http.ReadRequest(bufio.NewReader(conn))
		io.WriteString(conn, "HTTP/1.1 200 OK\r\n")
		line := []byte("X-Filler: " + strings.Repeat("x", 1000) + "\r\n")
		for i := 0; i < 2*maxHeadBytes/len(line); i++ { // bounded: twice the limit
			if _, err := conn.Write(line); err != nil {
				return
			}
		}
	}()
	c := New(Options{BaseURL: "http://" + ln.Addr().String()})
	defer c.Close()
	tr := c.Do(context.Background(), chatReq(false))
	if tr.OK() || !strings.Contains(tr.ErrorText, "response head over") {
		t.Errorf("endless head: ok %v, error %q (%s); want a response-head error", tr.OK(), tr.Error, tr.ErrorText)
	}
}
