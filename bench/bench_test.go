package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// BenchmarkNonStreamingRate measures how many non-streaming requests per
// second the harness drives through the bundled engine at its fastest
// settings (--speedup 1000, max_tokens 1), closed loop at several
// concurrencies. The figure is the harness plus engine on the same cores;
// compare it with hey/vegeta against the same engine process (see the
// README) rather than across machines.
func BenchmarkNonStreamingRate(b *testing.B) {
	e := simtest.Start(b, func(o *sim.Options) { o.Speedup = 1000 })
	for _, c := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			cl := client.New(client.Options{BaseURL: e.BaseURL(), MaxConns: c})
			defer cl.Close()
			r := &Runner{Client: cl}
			spec := RunSpec{Name: "bench", Workload: Workload{Mode: ModeConcurrent, Concurrency: c, Requests: b.N},
				Request: RequestSpec{Model: e.ServedModelName(), MaxTokens: 1, ExactLength: true}}
			b.ReportAllocs()
			b.ResetTimer()
			run, _, err := r.Run(context.Background(), spec)
			b.StopTimer()
			if err != nil || run.OK != b.N {
				b.Fatalf("ok %d of %d: %v (errors %v)", run.OK, b.N, err, run.Errors)
			}
			b.ReportMetric(float64(run.OK)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

// cannedDoer answers every request at once with a fixed 256-event trace:
// what is left is the harness's own cost per request.
type cannedDoer struct{ tr client.Trace }

func (c *cannedDoer) Do(context.Context, *client.Request) client.Trace {
	tr := c.tr
	tr.Start = time.Now()
	return tr
}

// BenchmarkRunnerOverhead measures the Runner's cost per request without a
// server: building the request, keeping the record, writing requests.jsonl
// (256 content events per line) and the final summaries. It bounds how fast
// servebench can drive any server.
func BenchmarkRunnerOverhead(b *testing.B) {
	tr := client.Trace{Stream: true, Status: 200, OutputTokens: 256, TokensFrom: "usage",
		FirstByte: time.Millisecond, FirstToken: 2 * time.Millisecond, FirstVisible: 2 * time.Millisecond, Done: 3 * time.Second}
	for i := range 256 {
		tr.Events = append(tr.Events, client.Event{At: time.Duration(i+2) * time.Millisecond, Tokens: 1})
	}
	for _, c := range []int{1, 16} {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			rw, err := CreateRecordFile(filepath.Join(b.TempDir(), "requests.jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			r := &Runner{Client: &cannedDoer{tr: tr}, Records: rw}
			spec := RunSpec{Name: "bench", Workload: Workload{Mode: ModeConcurrent, Concurrency: c, Requests: b.N},
				Request: RequestSpec{Model: "m", MaxTokens: 256, Stream: true}}
			b.ReportAllocs()
			b.ResetTimer()
			run, _, err := r.Run(context.Background(), spec)
			if cerr := rw.Close(); err != nil || cerr != nil || run.OK != b.N {
				b.Fatalf("ok %d of %d: %v %v", run.OK, b.N, err, cerr)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}
