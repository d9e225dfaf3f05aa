package client

import (
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// gzipEvents answers a stream gzipped, as a compressing proxy does: with
// flush, each event is sync-flushed as it is written (nginx with
// proxy_buffering off); without, the compressor holds everything to the end
// (nginx's gzip with buffering on).
func gzipEvents(flush bool, n int, gap time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != EncodingGzip {
			writeEvents(w, r, vllmChunk("a"), "[DONE]")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		for i := 0; i < n; i++ {
			fmt.Fprintf(zw, "data: %s\n\n", vllmChunk(" word"))
			if flush {
				zw.Flush()
				w.(http.Flusher).Flush()
			}
			time.Sleep(gap)
		}
		fmt.Fprintf(zw, "data: %s\n\ndata: [DONE]\n\n", usageChunk(3, n))
		zw.Close()
	}
}

// TestDoGzipStream: a gzipped stream is timed as its decompressed content
// arrives: flushed per event it streams, held by the compressor it arrives
// at once; tokens and events are counted from the decompressed events.
func TestDoGzipStream(t *testing.T) {
	const n, gap = 8, 15 * time.Millisecond
	for _, flush := range []bool{true, false} {
		c := newTestClient(t, gzipEvents(flush, n, gap), nil)
		tr := c.Do(context.Background(), chatReq(true))
		if !tr.OK() || tr.Encoding != "gzip" || tr.OutputTokens != n || tr.Events.Len() != n {
			t.Fatalf("flush %v: ok %v (%s %s), encoding %q, %d tokens in %d events; want gzip, %d in %d",
				flush, tr.OK(), tr.Error, tr.ErrorText, tr.Encoding, tr.OutputTokens, tr.Events.Len(), n, n)
		}
		spread := tr.Events.Event(n-1).At - tr.Events.Event(0).At
		if flush && spread < (n-2)*gap {
			t.Errorf("flushed per event: events spread over %v, want about %v: the client waited for more than each flush", spread, (n-1)*gap)
		}
		if !flush && (spread > gap || tr.Done-tr.FirstVisible > gap) {
			t.Errorf("held by the compressor: events spread over %v, first visible %v before done; want all at once", spread, tr.Done-tr.FirstVisible)
		}
	}
}

// TestDoIdentityEncoding: --accept-encoding identity asks for no
// compression, so the same server streams plainly.
func TestDoIdentityEncoding(t *testing.T) {
	c := newTestClient(t, gzipEvents(false, 8, time.Millisecond), func(o *Options) { o.AcceptEncoding = EncodingIdentity })
	tr := c.Do(context.Background(), chatReq(true))
	if !tr.OK() || tr.Encoding != "" || tr.OutputTokens != 1 {
		t.Fatalf("ok %v (%s), encoding %q, %d tokens; want a plain stream of 1", tr.OK(), tr.ErrorText, tr.Encoding, tr.OutputTokens)
	}
	if c.AcceptEncoding() != EncodingIdentity {
		t.Errorf("AcceptEncoding() = %q", c.AcceptEncoding())
	}
	bad := New(Options{BaseURL: "http://127.0.0.1:1", AcceptEncoding: "br"})
	if tr := bad.Do(context.Background(), chatReq(true)); tr.Error != ErrRequest {
		t.Errorf("--accept-encoding br: %s %q; want a request error, nothing sent", tr.Error, tr.ErrorText)
	}
}

// TestDoGzipBody: a gzipped non-streaming answer and a gzipped error are
// read decompressed.
func TestDoGzipBody(t *testing.T) {
	for _, status := range []int{200, 400} {
		c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(status)
			zw := gzip.NewWriter(w)
			if status == 200 {
				fmt.Fprint(zw, `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`)
			} else {
				fmt.Fprint(zw, `{"error":{"message":"too long"}}`)
			}
			zw.Close()
		}, nil)
		tr := c.Do(context.Background(), chatReq(false))
		if status == 200 && (!tr.OK() || tr.OutputTokens != 1 || tr.Encoding != "gzip") {
			t.Errorf("200: ok %v (%s), %d tokens, encoding %q", tr.OK(), tr.ErrorText, tr.OutputTokens, tr.Encoding)
		}
		if status == 400 && tr.ErrorText != "HTTP 400: too long" {
			t.Errorf("400: error text %q; want the decompressed message", tr.ErrorText)
		}
	}
}
