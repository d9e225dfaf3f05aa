package bench

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/scrape"
)

// kvServer serves vLLM's KV-cache usage gauge (the name and labels of
// vLLM V1's /metrics, as in scrape's fixtures), the next of values at each
// scrape (the last one once they run out), and records what it served.
type kvServer struct {
	mu     sync.Mutex
	values []float64
	served []float64
}

func (k *kvServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	k.mu.Lock()
	v := k.values[min(len(k.served), len(k.values)-1)]
	k.served = append(k.served, v)
	k.mu.Unlock()
	fmt.Fprintf(w, "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"+
		"# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} %g\n", v)
}

func (k *kvServer) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.served)
}

// TestGaugeSampler: each replica's KV usage is the mean and the maximum
// of every scrape of it from the before-run snapshot to the after-run one,
// exactly: what avg_over_time and max_over_time give over Prometheus'
// scrapes.
func TestGaugeSampler(t *testing.T) {
	servers := []*kvServer{
		{values: []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5}},
		{values: []float64{0.5, 0.5, 0.9, 0.5}},
	}
	var urls []string
	for _, s := range servers {
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL+"/metrics")
	}
	dl, _ := scrape.Lookup("vllm")
	m := &Metrics{URLs: urls, Dialect: dl, GaugeEvery: 5 * time.Millisecond}
	before, err := scrape.FetchAll(t.Context(), nil, urls)
	if err != nil {
		t.Fatal(err)
	}
	g := m.startGauges(t.Context(), before)
	if g == nil {
		t.Fatal("no sampler for two URLs")
	}
	for deadline := time.Now().Add(10 * time.Second); servers[0].count() < 8 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	g.stop() // as the run ends; then the after-run snapshot
	after, err := scrape.FetchAll(t.Context(), nil, urls)
	if err != nil {
		t.Fatal(err)
	}
	reps := make([]result.Replica, 2)
	g.fill(reps, after)
	for i, s := range servers {
		sum, mx := 0.0, 0.0
		for _, v := range s.served {
			sum += v
			mx = max(mx, v)
		}
		want := result.Gauge{Mean: sum / float64(len(s.served)), Max: mx, Samples: len(s.served)}
		got := reps[i].KVUsage
		if got == nil || got.Samples != want.Samples || math.Abs(got.Mean-want.Mean) > 1e-12 || got.Max != want.Max {
			t.Errorf("replica %d served %v: KV usage %+v, want %+v", i, s.served, got, want)
		}
	}
	if m.startGauges(t.Context(), nil) != nil || (&Metrics{URLs: urls[:1], Dialect: dl, GaugeEvery: time.Second}).startGauges(t.Context(), before) != nil {
		t.Error("a sampler without a before-run snapshot, or for one URL (no replicas)")
	}
}
