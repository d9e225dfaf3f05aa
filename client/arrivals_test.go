package client

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// clumpedStream answers with a stream sent in three writes, as a proxy
// that holds it lets it go: role and two tokens, 60 ms later three
// tokens, then the end.
func clumpedStream(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	f := w.(http.Flusher)
	write := func(events ...string) {
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
		}
		f.Flush()
	}
	write(roleChunk, vllmChunk("a"), vllmChunk("b"))
	time.Sleep(60 * time.Millisecond)
	write(vllmChunk("c"), vllmChunk("d"), vllmChunk("e"))
	time.Sleep(20 * time.Millisecond)
	write(finishChunk, usageChunk(7, 5), "[DONE]")
}

// TestArrivals: the reads of a clumped stream come back as arrivals with
// their tokens (2, then 3), 60 ms apart; over the inline path (connection
// reads, head included) and over an http.Request (body reads) alike. Off
// by default.
func TestArrivals(t *testing.T) {
	for _, userinfo := range []bool{false, true} {
		c := newTestClient(t, clumpedStream, func(o *Options) {
			if userinfo { // not the direct path: an http.Request, whose body reads are counted
				o.BaseURL = strings.Replace(o.BaseURL, "http://", "http://u:p@", 1)
			}
		})
		req := chatReq(true)
		tr := c.Do(t.Context(), req)
		if !tr.OK() || tr.Arrivals != nil {
			t.Fatalf("off by default: %s %s, %d arrivals", tr.Error, tr.ErrorText, len(tr.Arrivals))
		}
		req.Arrivals = true
		tr = c.Do(t.Context(), req)
		if !tr.OK() {
			t.Fatalf("%s %s", tr.Error, tr.ErrorText)
		}
		var withTokens []Arrival
		sum, bytes := 0, 0
		for _, a := range tr.Arrivals {
			sum += a.Tokens
			bytes += a.Bytes
			if a.Tokens > 0 {
				withTokens = append(withTokens, a)
			}
		}
		if sum != 5 || len(withTokens) != 2 || withTokens[0].Tokens != 2 || withTokens[1].Tokens != 3 {
			t.Fatalf("userinfo=%v: arrivals %+v: want tokens 2 then 3", userinfo, tr.Arrivals)
		}
		if gap := withTokens[1].At - withTokens[0].At; gap < 50*time.Millisecond {
			t.Errorf("userinfo=%v: clumps %v apart, want about 60ms", userinfo, gap)
		}
		if withTokens[0].At > tr.FirstVisible || bytes < 5*len(vllmChunk("a")) || tr.ArrivalsDropped != 0 {
			t.Errorf("userinfo=%v: first clump at %v after first visible %v; %d bytes", userinfo, withTokens[0].At, tr.FirstVisible, bytes)
		}
	}
}

// TestArrivalsCap: past MaxArrivals reads are counted, not kept.
func TestArrivalsCap(t *testing.T) {
	a := &arrivalLog{start: time.Now()}
	for range MaxArrivals + 3 {
		a.read(10)
	}
	a.read(0) // nothing read: no arrival
	var tr Trace
	a.finish(&tr)
	if len(tr.Arrivals) != MaxArrivals || tr.ArrivalsDropped != 3 {
		t.Errorf("%d arrivals, %d dropped", len(tr.Arrivals), tr.ArrivalsDropped)
	}
}
