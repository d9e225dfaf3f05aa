package sim

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkPacing measures pacing accuracy: for every streamed token, the
// time its chunk was written and flushed minus the time the performance
// model says the step that produced it ended, at 1, 64 and 256 concurrent
// streams, real time (speedup 1), with the HTTP clients reading on the same
// cores: a minimal raw-socket reader (client=raw) and net/http's client
// (client=nethttp). One decode step emits a token to every running stream at
// once, so at high concurrency a step's writes form a burst and the last
// writes of the burst are the late ones.
//
//	go test ./engine/sim -run '^$' -bench Pacing -benchtime 1x
//
// It also logs the engine loop's own lateness (step completion minus
// modelled step end), which is what the writes start from.
//
// client=floor is the same burst without the engine or HTTP: one goroutine
// per TCP connection writes one token's bytes (an SSE chunk in HTTP chunked
// framing) when a step loop wakes it, and a bufio reader per connection
// reads them, its lateness counted from the moment the loop woke (so it
// leaves out timer lateness too). It is what one write(2) per token and
// stream costs on this host, and a floor for the engine's figures.
// client=floor-http is the same with the writes made by a net/http handler
// (no engine): what net/http adds to that.
func BenchmarkPacing(b *testing.B) {
	for _, client := range []string{"raw", "nethttp", "floor", "floor-http"} {
		for _, c := range []struct{ streams, tokens int }{{1, 128}, {64, 64}, {256, 16}} {
			b.Run(fmt.Sprintf("client=%s/streams=%d", client, c.streams), func(b *testing.B) {
				var lates []float64
				if variant, ok := strings.CutPrefix(client, "floor"); ok {
					lates = runFloor(b, c.streams, c.tokens, variant == "-http")
				} else {
					lates = runPacing(b, client, c.streams, c.tokens)
				}
				s := summarizeMs(lates)
				if s == nil {
					b.Fatal("no tokens measured")
				}
				b.ReportMetric(s.Median, "p50-ms")
				b.ReportMetric(s.P99, "p99-ms")
				b.ReportMetric(s.Max, "max-ms")
				b.ReportMetric(float64(s.N)/float64(b.N), "tokens/op")
			})
		}
	}
}

// msSummary is the median, 99th percentile and maximum of n samples.
type msSummary struct {
	Median, P99, Max float64
	N                int
}

// summarizeMs summarises xs as bench/stats does (the median averages the
// middle two; p99 is the nearest rank, a sample that was observed), here
// because engine may not import bench. It returns nil when xs is empty.
func summarizeMs(xs []float64) *msSummary {
	n := len(xs)
	if n == 0 {
		return nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return &msSummary{Median: med, P99: s[int(math.Ceil(0.99*float64(n)))-1], Max: s[n-1], N: n}
}

// rawStream is the leanest client: one TCP connection, a hand-written
// HTTP/1.1 request, and a bufio loop over the lines until [DONE] (the
// chunked framing lines are read as lines too; no JSON is parsed).
func rawStream(addr, body string) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	req := "POST /v1/chat/completions HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(conn, req); err != nil {
		return err
	}
	br := bufio.NewReader(conn)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if bytes.HasPrefix(line, []byte("data: [DONE]")) {
			return nil
		}
	}
}

func runPacing(b *testing.B, client string, streams, tokens int) []float64 {
	body := fmt.Sprintf(`{"messages":[{"role":"user","content":"pace"}],"max_tokens":%d,"ignore_eos":true,"stream":true}`, tokens)
	lates, steps := runPacingWith(b, client, streams, func(int) string { return body }, tokens, nil)
	if s := summarizeMs(steps); s != nil {
		b.Logf("loop lateness over %d steps: p50 %.3f p99 %.3f max %.3f ms", s.N, s.Median, s.P99, s.Max)
	}
	return lates
}

// runPacingWith is runPacing with stream j's request body from body(j) and
// the engine's options adjusted by mutate (may be nil); it returns the
// token lateness and the loop's step lateness, in ms.
func runPacingWith(b *testing.B, client string, streams int, body func(j int) string, tokens int, mutate func(*Options)) (lates, steps []float64) {
	o := DefaultOptions()
	o.Port = 0
	if mutate != nil {
		mutate(&o)
	}
	quickStart(&o)
	e, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	lates = make([]float64, 0, streams*tokens*b.N)
	stopTiming := observeTiming(func(ns int64) {
		mu.Lock()
		lates = append(lates, float64(ns)/1e6)
		mu.Unlock()
	}, func(ns int64) { steps = append(steps, float64(ns)/1e6) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	defer func() { cancel(); <-done; stopTiming() }()
	<-e.Ready()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams + 1}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		for j := 0; j < streams; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if client == "raw" {
					if err := rawStream(strings.TrimPrefix(e.BaseURL(), "http://"), body(j)); err != nil {
						b.Error(err)
					}
					return
				}
				resp, err := hc.Post(e.BaseURL()+"/v1/chat/completions", "application/json", strings.NewReader(body(j)))
				if err != nil {
					b.Error(err)
					return
				}
				defer resp.Body.Close()
				br := bufio.NewReader(resp.Body)
				for {
					if _, err := br.ReadSlice('\n'); err != nil {
						if err != io.EOF {
							b.Error(err)
						}
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	// A client can see [DONE] before its writer has recorded the last flush.
	want := streams * tokens * b.N
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		mu.Lock()
		n := len(lates)
		mu.Unlock()
		if n >= want {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return lates, steps
}

// runFloor times the write burst without the engine (see BenchmarkPacing):
// streams connections on 127.0.0.1, tokens steps of one token's chunk per
// connection, written on bare TCP or, viaHTTP, by a net/http handler
// (ResponseWriter.Write and Flush, as the engine's are).
func runFloor(b *testing.B, streams, tokens int, viaHTTP bool) []float64 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c := newChunker(true, "chatcmpl-0123456789abcdef0123456789abcdef", "Qwen/Qwen2.5-7B-Instruct-AWQ", 1796025729)
	chunk := c.appendTokens(nil, &request{key: 42, target: 1 << 30, natural: "length"}, 7, 8, "")

	var mu sync.Mutex
	lates := make([]float64, 0, streams*tokens*b.N)
	wake := make([]chan time.Time, streams)
	for i := range wake {
		wake[i] = make(chan time.Time, 1)
	}
	// serve writes stream i's token at every step until the steps end.
	serve := func(i int, write func() error) {
		for at := range wake[i] {
			if err := write(); err != nil {
				b.Error(err)
				return
			}
			late := float64(time.Since(at)) / 1e6
			mu.Lock()
			lates = append(lates, late)
			mu.Unlock()
		}
	}
	var ready, readers sync.WaitGroup
	ready.Add(streams)
	read := func(conn net.Conn) {
		defer readers.Done()
		defer conn.Close()
		br := bufio.NewReader(conn)
		for {
			if _, err := br.ReadSlice('\n'); err != nil {
				return
			}
		}
	}
	if viaHTTP {
		var next atomic.Int64
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			i := int(next.Add(1) - 1)
			w.Header().Set("Content-Type", "text/event-stream")
			f := w.(http.Flusher)
			f.Flush()
			ready.Done()
			serve(i, func() error {
				if _, err := w.Write(chunk); err != nil {
					return err
				}
				f.Flush()
				return nil
			})
		})}
		go srv.Serve(ln)
		defer srv.Close()
		for range streams {
			cc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.WriteString(cc, "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"); err != nil {
				b.Fatal(err)
			}
			readers.Add(1)
			go read(cc)
		}
	} else {
		payload := append(append(fmt.Appendf(nil, "%x\r\n", len(chunk)), chunk...), "\r\n"...)
		for i := range streams {
			cc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			sc, err := ln.Accept()
			if err != nil {
				b.Fatal(err)
			}
			readers.Add(1)
			go read(cc)
			go func() {
				defer sc.Close() // ends the reader
				serve(i, func() error { _, err := sc.Write(payload); return err })
			}()
			ready.Done()
		}
	}
	ready.Wait()
	// Steps 30 ms apart: longer than any burst here, as the engine's decode
	// steps (15-64 ms on the default profile) are.
	b.ResetTimer()
	for range tokens * b.N {
		time.Sleep(30 * time.Millisecond)
		at := time.Now()
		for _, w := range wake {
			w <- at
		}
	}
	for _, w := range wake {
		close(w)
	}
	readers.Wait() // each reader ends after its writer's last token
	b.StopTimer()
	mu.Lock()
	defer mu.Unlock()
	return lates
}

// BenchmarkAppendToken is the per-token cost of rendering an SSE chunk into
// a stream's reused buffer (target: 0 allocations).
func BenchmarkAppendToken(b *testing.B) {
	c := newChunker(true, "chatcmpl-0123456789abcdef0123456789abcdef", "Qwen/Qwen2.5-7B-Instruct-AWQ", 1796025729)
	buf := make([]byte, 0, 4096)
	r := &request{key: 42, target: 1 << 30, natural: "length"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = c.appendTokens(buf[:0], r, i, i+1, "")
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkPacingPrefixCache shows what prefix caching costs the engine
// loop: 256 streams of ~260-token prompts (16 blocks) and 256 tokens each,
// run with prefix caching off and on, twice each, alternating, reporting
// the loop's p99 lateness (step completion minus modelled step end) over
// each mode's steps and their ratio. prompts=distinct: every prompt
// differs in its first block, so both modes run the same steps and the
// cache only adds its bookkeeping (hash chains, a lookup per admission,
// every full block cached, evictions); prompts=shared: the prompts share
// a 15-block system prompt, so with the cache each admission also touches
// 15 cached blocks, and the prefills (and so the steps) are shorter. At
// --speedup 10: without the cache, the 256 prefills take a minute at real
// time on the default profile.
//
//	go test ./engine/sim -run '^$' -bench PacingPrefixCache -benchtime 1x
func BenchmarkPacingPrefixCache(b *testing.B) {
	const streams, tokens = 256, 256
	system := strings.Repeat("You are a helpful assistant. ", 35) // ~250 tokens
	for _, shared := range []bool{false, true} {
		name := "prompts=distinct"
		if shared {
			name = "prompts=shared"
		}
		b.Run(name, func(b *testing.B) {
			body := func(j int) string {
				sys := system
				if !shared {
					sys = fmt.Sprintf("Stream %d. %s", j, system)
				}
				return fmt.Sprintf(`{"messages":[{"role":"system","content":%q},{"role":"user","content":"stream %d"}],"max_tokens":%d,"ignore_eos":true,"stream":true}`, sys, j, tokens)
			}
			steps := map[bool][]float64{}
			for range 2 {
				for _, on := range []bool{false, true} {
					_, st := runPacingWith(b, "raw", streams, body, tokens, func(o *Options) { o.NoPrefixCaching = !on; o.Speedup = 10 })
					if s := summarizeMs(st); s != nil {
						b.Logf("  round: prefix caching on=%v: p99 %.3f ms over %d steps", on, s.P99, s.N) // the spread between rounds is the noise
					}
					steps[on] = append(steps[on], st...)
				}
			}
			p99 := map[bool]float64{}
			for _, on := range []bool{false, true} {
				s := summarizeMs(steps[on])
				if s == nil {
					b.Fatal("no steps measured")
				}
				p99[on] = s.P99
				b.Logf("prefix caching on=%v: loop lateness over %d steps: p50 %.3f p99 %.3f max %.3f ms", on, s.N, s.Median, s.P99, s.Max)
			}
			b.ReportMetric(p99[false], "loop-p99-off-ms")
			b.ReportMetric(p99[true], "loop-p99-on-ms")
			b.ReportMetric(p99[true]/p99[false], "on/off")
		})
	}
}
