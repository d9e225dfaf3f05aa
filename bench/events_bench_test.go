package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine/launch/launchtest"
)

// BenchmarkStreamRecord measures what one streamed request costs the
// client: client.Do reading the answer's events into a Trace, then
// store.NewRecord turning it into its requests.jsonl record, against the
// bundled engine as a child process (H200, --speedup 100000), so B/op and
// allocs/op are servebench's own and none of the engine's.
//
//   - exact256: max_tokens 256 answered exactly (ignore_eos), sequential.
//
//   - natural: max_tokens 8192 (a chat's usual cap), the engine stopping
//     by itself (its lengths average 256 tokens; tokens/op says the mean).
//
//   - exact8192: max_tokens 8192 answered exactly: the longest trace.
//
//   - c=64: exact256 from 64 goroutines at once.
//
//   - floor: exact256's request on a bare net/http client, the body read
//     into io.Discard: what HTTP alone allocates, the reference.
//
//     go test ./bench -run '^$' -bench StreamRecord -benchmem
func BenchmarkStreamRecord(b *testing.B) {
	srv, err := StartServer(context.Background(), ServerOptions{Self: launchtest.Servebench(b), Speedup: 100000,
		EngineArgs: []string{"--gpu", "h200-141gb", "--max-model-len", "16384"}, ReadyTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	exact := func(n int) client.Request {
		return client.Request{Endpoint: "chat", Model: srv.Model, Messages: []client.Message{{Role: "user", Content: workload.DefaultPrompt}},
			MaxTokens: n, ExactLength: true, Stream: true}
	}
	b.Run("exact256", func(b *testing.B) { benchRecords(b, srv.BaseURL, 1, exact(256), false) })
	b.Run("natural", func(b *testing.B) {
		req := exact(8192)
		req.ExactLength = false
		benchRecords(b, srv.BaseURL, 1, req, true)
	})
	b.Run("exact8192", func(b *testing.B) { benchRecords(b, srv.BaseURL, 1, exact(8192), false) })
	b.Run("c=64", func(b *testing.B) { benchRecords(b, srv.BaseURL, 64, exact(256), false) })
	b.Run("floor", func(b *testing.B) { benchFloor(b, srv.BaseURL, srv.Model) })
}

// benchRecords sends req b.N times from c goroutines and makes each
// answer's record. vary gives each request its own prompt (of 64), so the
// engine's natural lengths vary as a workload's would.
func benchRecords(b *testing.B, baseURL string, c int, req client.Request, vary bool) {
	cl := client.New(client.Options{BaseURL: baseURL, MaxConns: c, RequestTimeout: time.Minute})
	defer cl.Close()
	var prompts [64][]client.Message // made here, not on the clock
	for i := range prompts {
		prompts[i] = []client.Message{{Role: "user", Content: fmt.Sprintf("%s (%d)", workload.DefaultPrompt, i)}}
	}
	var n, tokens atomic.Int64
	send := func() {
		r := req
		for i := n.Add(1); i <= int64(b.N); i = n.Add(1) {
			if vary {
				r.Messages = prompts[i%64]
			}
			tr := cl.Do(context.Background(), &r)
			rec := store.NewRecord("bench", int(i), false, &tr, 0)
			if rec.Error != "" || rec.OutputTokens == 0 || (req.ExactLength && rec.OutputTokens != req.MaxTokens) {
				b.Errorf("request %d: %d tokens, error %q %s", i, rec.OutputTokens, rec.Error, rec.ErrorText)
				return
			}
			tokens.Add(int64(rec.OutputTokens))
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() { defer wg.Done(); send() }()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(tokens.Load())/float64(b.N), "tokens/op")
}

// benchFloor sends exact256's request b.N times on a bare net/http client
// and discards the answer.
func benchFloor(b *testing.B, baseURL, model string) {
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"max_tokens":256,"min_tokens":256,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`,
		model, workload.DefaultPrompt)
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		resp, err := hc.Post(baseURL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("floor: HTTP %d, %v", resp.StatusCode, err)
		}
	}
}
