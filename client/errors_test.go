package client

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// block waits for the client to go away (bounded, so a broken test ends).
func block(r *http.Request) {
	io.Copy(io.Discard, r.Body) // the server notices a gone client only once the body is read
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

// hijackCut answers with headers and one event of a chunked stream, then
// drops the connection mid-body.
func hijackCut(w http.ResponseWriter, r *http.Request) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	ev := "data: " + vllmChunk("a") + "\n\n"
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(ev), ev)
	buf.Flush()
}

func TestDoErrorClasses(t *testing.T) {
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		opts     func(*Options)
		req      func(*Request)
		cancelOn bool // cancel the caller's context once the handler says so
		want     ErrorClass
		wantText string
		wantStat int
		wantEvts int // token events kept in the partial trace
	}{
		// Nothing listens on the port.
		{name: "connect refused", opts: func(o *Options) { o.BaseURL = closedPortURL(t) },
			want: ErrConnect, wantText: "refused"},
		// vLLM's 400 for a prompt over max_model_len, OpenAI error shape.
		{name: "http 400", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"This model's maximum context length is 4096 tokens","type":"BadRequestError","code":400}}`)
		}, want: ErrHTTPStatus, wantText: "HTTP 400: This model's maximum context length is 4096 tokens", wantStat: 400},
		// Older vLLM: the message at top level.
		{name: "http 500 top-level message", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			io.WriteString(w, `{"object":"error","message":"engine dead","type":"InternalServerError","code":500}`)
		}, want: ErrHTTPStatus, wantText: "HTTP 500: engine dead", wantStat: 500},
		// A plain-text error body is kept, shortened.
		{name: "http 503 text", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(503)
			io.WriteString(w, "Service Unavailable\n"+strings.Repeat("x", 1000))
		}, want: ErrHTTPStatus, wantText: "HTTP 503: Service Unavailable xxx", wantStat: 503},
		// vLLM's mid-stream error: HTTP 200, an error event, then [DONE].
		{name: "stream error", handler: func(w http.ResponseWriter, r *http.Request) {
			writeEvents(w, r, roleChunk, vllmChunk("a"), vllmChunk("b"),
				`{"error":{"object":"error","message":"out of KV cache","type":"InternalServerError","code":500}}`, "[DONE]")
		}, want: ErrStreamError, wantText: "out of KV cache", wantStat: 200, wantEvts: 2},
		// An event that is not JSON.
		{name: "malformed event", handler: func(w http.ResponseWriter, r *http.Request) {
			writeEvents(w, r, vllmChunk("a"), `{"choices":[{"delta":{"content":"b"`, "[DONE]")
		}, want: ErrMalformed, wantText: "malformed event", wantStat: 200, wantEvts: 1},
		// A non-streaming body that is not JSON.
		{name: "malformed body", req: func(r *Request) { r.Stream = false }, handler: func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "<html>gateway</html>")
		}, want: ErrMalformed, wantText: "malformed body", wantStat: 200},
		// A streaming request answered with JSON (server ignored stream).
		{name: "json instead of stream", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"choices":[{"message":{"content":"x"}}]}`)
		}, want: ErrMalformed, wantText: "expected text/event-stream", wantStat: 200},
		// The body ends cleanly but without [DONE].
		{name: "truncated no done", handler: func(w http.ResponseWriter, r *http.Request) {
			writeEvents(w, r, vllmChunk("a"), vllmChunk("b"))
		}, want: ErrTruncated, wantText: "without [DONE] after 2", wantStat: 200, wantEvts: 2},
		// The connection drops mid-body.
		{name: "truncated cut", handler: hijackCut, want: ErrTruncated, wantText: "stream cut after 1", wantStat: 200, wantEvts: 1},
		// Whole-request timeout, before any response.
		{name: "request timeout", opts: func(o *Options) { o.RequestTimeout = 100 * time.Millisecond },
			handler: func(w http.ResponseWriter, r *http.Request) { block(r) }, want: ErrTimeout, wantText: "request timeout after 100ms"},
		// Whole-request timeout mid-stream keeps the events so far.
		{name: "request timeout mid-stream", opts: func(o *Options) { o.RequestTimeout = 300 * time.Millisecond },
			handler: func(w http.ResponseWriter, r *http.Request) {
				writeEvents(w, r, vllmChunk("a"), "sleep:10s")
			}, want: ErrTimeout, wantText: "request timeout", wantStat: 200, wantEvts: 1},
		// Stall: events stop coming; the stall timer started at the last event.
		// Stall: the events stop coming.
		{name: "stall", opts: func(o *Options) { o.StallTimeout = 200 * time.Millisecond },
			handler: func(w http.ResponseWriter, r *http.Request) {
				writeEvents(w, r, vllmChunk("a"), "sleep:10s")
			}, want: ErrTimeout, wantText: "stall timeout: no event for 200ms", wantStat: 200, wantEvts: 1},
		// The caller cancels mid-stream.
		{name: "canceled", cancelOn: true, handler: func(w http.ResponseWriter, r *http.Request) {
			writeEvents(w, r, vllmChunk("a"), "sleep:10s")
		}, want: ErrCanceled, wantText: "canceled", wantStat: 200, wantEvts: 1},
		// A request that cannot be built is not sent.
		{name: "bad endpoint", req: func(r *Request) { r.Endpoint = "embeddings" }, handler: func(w http.ResponseWriter, r *http.Request) {
			t.Error("request was sent")
		}, want: ErrRequest, wantText: `endpoint "embeddings": expected one of chat, completions`},
		// A chat request needs messages.
		{name: "chat without messages", req: func(r *Request) { r.Messages = nil },
			want: ErrRequest, wantText: "no messages"},
		// Exact length needs a length.
		{name: "exact length without max tokens", req: func(r *Request) { r.ExactLength, r.MaxTokens = true, 0 },
			want: ErrRequest, wantText: "exact length needs max tokens > 0, got 0"},
		// A base URL that is not a URL.
		{name: "bad base URL", opts: func(o *Options) { o.BaseURL = "http://[::1" },
			want: ErrRequest, wantText: `base URL "http://[::1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h := tt.handler
			if tt.cancelOn {
				inner := h
				h = func(w http.ResponseWriter, r *http.Request) {
					time.AfterFunc(200*time.Millisecond, cancel)
					inner(w, r)
				}
			}
			if h == nil {
				h = func(w http.ResponseWriter, r *http.Request) {}
			}
			c := newTestClient(t, h, tt.opts)
			req := chatReq(true)
			if tt.req != nil {
				tt.req(req)
			}
			began := time.Now()
			tr := c.Do(ctx, req)
			if took := time.Since(began); took > 5*time.Second {
				t.Errorf("Do took %v", took)
			}
			if tr.Error != tt.want || !strings.Contains(tr.ErrorText, tt.wantText) {
				t.Errorf("got %q %q, want %q containing %q", tr.Error, tr.ErrorText, tt.want, tt.wantText)
			}
			if tr.Status != tt.wantStat || tr.Events.Len() != tt.wantEvts || tr.OutputTokens != tt.wantEvts {
				t.Errorf("partial trace: status %d, %d events, %d tokens; want %d, %d", tr.Status, tr.Events.Len(), tr.OutputTokens, tt.wantStat, tt.wantEvts)
			}
			if len(tr.ErrorText) > maxErrorText+3 {
				t.Errorf("ErrorText of %d bytes", len(tr.ErrorText))
			}
			if tr.Start.IsZero() || (tt.want != ErrRequest && tr.Done <= 0) {
				t.Errorf("start %v, done %v", tr.Start, tr.Done)
			}
		})
	}
}

// closedPortURL returns the URL of a port that was just listening and is
// now closed.
func closedPortURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestRetryAfter: a 429's Retry-After is kept for the caller's backoff.
func TestRetryAfter(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"rate limited"}}`)
	}, nil)
	tr := c.Do(context.Background(), chatReq(false))
	if tr.Error != ErrHTTPStatus || tr.Status != 429 || tr.RetryAfter != 3*time.Second {
		t.Errorf("trace: %+v", tr)
	}
}

// TestAPIKeyNeverRecorded: a server that echoes the Authorization header
// in its error messages (status errors, stream errors, malformed events)
// must not get the key into the Trace.
func TestAPIKeyNeverRecorded(t *testing.T) {
	const key = "sk-SECRET-0123456789abcdef"
	for _, mode := range []string{"status", "stream", "malformed", "nonstream-error", "clip", "long"} {
		t.Run(mode, func(t *testing.T) {
			c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
				auth := r.Header.Get("Authorization")
				if auth != "Bearer "+key {
					t.Errorf("Authorization %q", auth)
				}
				switch mode {
				case "status":
					w.WriteHeader(401)
					fmt.Fprintf(w, `{"error":{"message":"invalid key %s"}}`, auth)
				case "stream":
					writeEvents(w, r, fmt.Sprintf(`{"error":{"message":"%s"}}`, auth))
				case "malformed":
					writeEvents(w, r, "not json "+auth)
				case "nonstream-error":
					fmt.Fprintf(w, `{"error":"%s"}`, auth)
				case "clip":
					// The key straddles the 80-byte quote of a bad event.
					writeEvents(w, r, strings.Repeat("z", 60)+auth)
				case "long":
					// The key straddles the ErrorText cut.
					w.WriteHeader(500)
					io.WriteString(w, strings.Repeat("y", maxErrorText-30)+auth)
				}
			}, func(o *Options) { o.APIKey = key })
			req := chatReq(mode != "nonstream-error")
			tr := c.Do(context.Background(), req)
			if tr.OK() {
				t.Fatal("expected a failure")
			}
			dump := fmt.Sprintf("%#v", tr)
			for _, part := range []string{key, key[:12], key[len(key)-12:]} {
				if strings.Contains(dump, part) {
					t.Errorf("key fragment %q in trace: %s", part, dump)
				}
			}
		})
	}
}

// TestStallTimeoutNotForNonStreaming: a slow non-streaming answer is not a
// stall (only RequestTimeout bounds it).
func TestStallTimeoutNotForNonStreaming(t *testing.T) {
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(150 * time.Millisecond)
		io.WriteString(w, `{"choices":[{"message":{"content":"x"}}]}`)
	}, func(o *Options) { o.StallTimeout = 50 * time.Millisecond })
	if tr := c.Do(context.Background(), chatReq(false)); !tr.OK() {
		t.Errorf("failed: %s %s", tr.Error, tr.ErrorText)
	}
}

// TestStallTimerRestartsPerEvent: gaps under the stall limit never fire it,
// however long the stream lasts (six gaps of 150 ms against 600 ms; the
// margin absorbs a loaded machine).
func TestStallTimerRestartsPerEvent(t *testing.T) {
	items := []string{vllmChunk("a")}
	for i := 0; i < 6; i++ {
		items = append(items, "sleep:150ms", vllmChunk("b"))
	}
	c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeEvents(w, r, append(items, "[DONE]")...)
	}, func(o *Options) { o.StallTimeout = 600 * time.Millisecond })
	tr := c.Do(context.Background(), chatReq(true))
	if !tr.OK() || tr.Events.Len() != 7 {
		t.Errorf("got %s %q with %d events", tr.Error, tr.ErrorText, tr.Events.Len())
	}
	if tr.Done < 600*time.Millisecond {
		t.Errorf("stream lasted %v, under the stall limit: the test proves nothing", tr.Done)
	}
}
