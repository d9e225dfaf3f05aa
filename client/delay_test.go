package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/stats"
)

// Added-delay benchmark set-up. Each stream sends its events an interval
// apart: 250 us per stream (at least 10 ms), so every level makes about
// 4,000 events/s per reader (100/s with one stream) and the 2 shared cores
// are not saturated: saturation measures the machine, not the reader.
// Streams are phase-shifted evenly across the interval, so the figure is
// the per-event cost of reading, not a synchronized burst of all streams.
// One stream sends 200 events so its p99 rests on more than a handful.
const delayLead = 50 * time.Millisecond // from the last request's arrival to the first event

func delayInterval(streams int) time.Duration {
	return max(10*time.Millisecond, time.Duration(streams)*250*time.Microsecond)
}

func delayEvents(streams int) int { return max(20, 200/streams) }

// stampServer streams stamped events. Each request names its stream index
// in "model"; the server records when it wrote each event (nanoseconds on
// the monotonic clock since base, the process-wide reference both readers
// also use) in stamps[stream][event], and puts the same stamp in the event.
type stampServer struct {
	base    time.Time
	t0      time.Time // when stream 0's first event is due, this round; set before ready closes
	ready   chan struct{}
	arrived atomic.Int64
	n       int // streams this round
	events  int // events per stream this round
	every   time.Duration
	stamps  [][]int64
}

func (s *stampServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct{ Model string }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	idx, err := strconv.Atoi(req.Model)
	if err != nil || idx < 0 || idx >= s.n {
		http.Error(w, "bad stream index "+req.Model, 400)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	f := w.(http.Flusher)
	f.Flush()
	// Barrier: the round starts once every stream's request is in, so the
	// storm of request handling never overlaps the measured events.
	if s.arrived.Add(1) == int64(s.n) {
		s.t0 = time.Now().Add(delayLead)
		close(s.ready)
	}
	select {
	case <-s.ready:
	case <-time.After(time.Minute):
		return
	}
	phase := time.Duration(idx) * s.every / time.Duration(s.n)
	buf := make([]byte, 0, 512)
	for i := 0; i < s.events; i++ {
		time.Sleep(time.Until(s.t0.Add(phase + time.Duration(i)*s.every)))
		stamp := time.Since(s.base).Nanoseconds()
		s.stamps[idx][i] = stamp
		buf = append(buf[:0], `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m",`+
			`"choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}],"stamp":`...)
		buf = strconv.AppendInt(buf, stamp, 10)
		buf = append(buf, "}\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return
		}
		f.Flush()
	}
	io.WriteString(w, "data: "+usageChunk(5, s.events)+"\n\ndata: [DONE]\n\n")
}

// round resets the server for n streams of events each.
func (s *stampServer) round(n, events int) {
	s.n, s.events = n, events
	s.stamps = make([][]int64, n)
	for i := range s.stamps {
		s.stamps[i] = make([]int64, events)
	}
	s.ready = make(chan struct{})
	s.arrived.Store(0)
}

// readDelays runs n streams for each reader at once, one goroutine per
// stream, and returns per reader every event's receive time minus its
// stamp, in milliseconds. The readers' streams interleave (server stream
// i*len(readers)+r is reader r's i-th), so both see the same server, the
// same phases and the same machine load: on a shared, noisy machine that is
// what makes their figures comparable.
func readDelays(tb testing.TB, srv *stampServer, n, events int, readers ...func(stream int) ([]int64, error)) [][]float64 {
	k := len(readers)
	srv.round(n*k, events)
	recv := make([][]int64, n*k)
	errs := make([]error, n*k)
	var wg sync.WaitGroup
	for i := 0; i < n*k; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recv[i], errs[i] = readers[i%k](i)
		}()
	}
	wg.Wait()
	out := make([][]float64, k)
	for i := range recv {
		if errs[i] != nil || len(recv[i]) != events {
			tb.Fatalf("stream %d (reader %d): %d events, %v", i, i%k, len(recv[i]), errs[i])
		}
		for j, at := range recv[i] {
			out[i%k] = append(out[i%k], float64(at-srv.stamps[i][j])/1e6)
		}
	}
	return out
}

// clientReader reads with Client.Do: the receive time of an event is the
// trace's own offset for it.
func clientReader(c *Client, base time.Time, events int) func(int) ([]int64, error) {
	return func(stream int) ([]int64, error) {
		req := &Request{Endpoint: "chat", Model: strconv.Itoa(stream), Messages: []Message{{Role: "user", Content: "x"}},
			MaxTokens: events, Stream: true}
		tr := c.Do(context.Background(), req)
		if !tr.OK() {
			return nil, fmt.Errorf("%s: %s", tr.Error, tr.ErrorText)
		}
		off := tr.Start.Sub(base)
		out := make([]int64, tr.Events.Len())
		for i, e := range tr.Events.All() {
			out[i] = int64(off + e.At)
		}
		return out, nil
	}
}

// minimalReader is the floor: the same request over an equally configured
// transport, then a bare bufio loop stamping each "data:" line that is
// not [DONE]. No SSE grammar, no JSON.
func minimalReader(hc *http.Client, url string, base time.Time) func(int) ([]int64, error) {
	return func(stream int) ([]int64, error) {
		body := `{"model":"` + strconv.Itoa(stream) + `","messages":[{"role":"user","content":"x"}],"stream":true}`
		resp, err := hc.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		br := bufio.NewReaderSize(resp.Body, 4096)
		out := make([]int64, 0, 64)
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return out, err
			}
			if bytes.HasPrefix(line, []byte("data: [DONE]")) {
				return out, nil
			}
			if bytes.HasPrefix(line, []byte("data: {\"id\"")) {
				out = append(out, int64(time.Since(base)))
			}
		}
	}
}

// BenchmarkAddedDelay measures the client's added delay: receive time
// minus the server's write stamp, per event, for Client.Do and for the
// minimal reader side by side in one run, at 1, 64, 256 and 1,000
// concurrent streams per reader. Each iteration is one round in which both
// readers run their streams at the same time (see readDelays); figures
// pool all iterations. ratio_p50 / ratio_p99 are
// client over minimal (target <= 1.2). With -short only 1 and 64 streams.
// Run: go test ./client -run XXX -bench AddedDelay -benchtime 3x
func BenchmarkAddedDelay(b *testing.B) {
	levels := []int{1, 64, 256, 1000}
	if testing.Short() {
		levels = levels[:2]
	}
	base := time.Now()
	for _, n := range levels {
		b.Run("streams="+strconv.Itoa(n), func(b *testing.B) {
			srv := &stampServer{base: base, every: delayInterval(n)}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			c := New(Options{BaseURL: hs.URL, MaxConns: n})
			defer c.Close()
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n,
				DisableCompression: true}}
			defer hc.CloseIdleConnections()
			// Warm-up: open every connection of both readers outside the
			// measured rounds, so no round starts with a storm of dials.
			readDelays(b, srv, n, 1, clientReader(c, base, 1), minimalReader(hc, hs.URL, base))
			b.ResetTimer()
			var cl, mi []float64
			for i := 0; i < b.N; i++ {
				events := delayEvents(n)
				got := readDelays(b, srv, n, events, clientReader(c, base, events), minimalReader(hc, hs.URL, base))
				cl, mi = append(cl, got[0]...), append(mi, got[1]...)
			}
			cs, ms := stats.Summarize(cl), stats.Summarize(mi)
			b.ReportMetric(cs.Median, "client_p50_ms")
			b.ReportMetric(cs.P99, "client_p99_ms")
			b.ReportMetric(ms.Median, "minimal_p50_ms")
			b.ReportMetric(ms.P99, "minimal_p99_ms")
			b.ReportMetric(cs.Median/ms.Median, "ratio_p50")
			b.ReportMetric(cs.P99/ms.P99, "ratio_p99")
			b.ReportMetric(float64(srv.every)/1e6, "interval_ms")
			b.ReportMetric(0, "ns/op") // a round's duration is set by the pacing, not by speed
		})
	}
}
