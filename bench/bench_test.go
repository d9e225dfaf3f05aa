package bench

import (
	"context"
	"fmt"
	"testing"

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
