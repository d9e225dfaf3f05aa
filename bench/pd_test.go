package bench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/scrape"
)

// TestReconcilePD: in a P/D deployment each request is finished twice
// (prefill and decode instance): twice the sent count is no foreign
// traffic, more than that is, and the count recorded stays the engines'.
func TestReconcilePD(t *testing.T) {
	for _, c := range []struct {
		name    string
		count   float64
		passes  int
		foreign bool
		note    string
	}{
		{"P/D, each request twice", 12, 2, false, "2 passes of 6"},
		{"P/D, plus someone else's", 14, 2, true, "foreign traffic"},
		{"one engine, twice the count", 12, 1, true, "foreign traffic"},
	} {
		run := &result.Run{OK: 6}
		rec := &result.Reconciliation{Sent: 6, OK: 6, Completed: 6, EngineCount: c.count}
		reconcileNote(run, rec, "", true, c.passes)
		if rec.Foreign != c.foreign || !strings.Contains(rec.Note, c.note) || rec.EngineCount != c.count {
			t.Errorf("%s: foreign %v, note %q, count %.0f; want foreign %v, a note with %q, count %.0f",
				c.name, rec.Foreign, rec.Note, rec.EngineCount, c.foreign, c.note, c.count)
		}
	}
}

// countServer is a vLLM /metrics whose finished-request count is the
// next of counts at each scrape (the last repeated).
type countServer struct {
	mu     sync.Mutex
	counts []int
	served int
}

func (c *countServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	n := c.counts[min(c.served, len(c.counts)-1)]
	c.served++
	c.mu.Unlock()
	fmt.Fprintf(w, "# TYPE vllm:request_success_total counter\nvllm:request_success_total{finished_reason=\"stop\",model_name=\"m\"} %d\n", n)
}

// TestSettlePD: in a P/D deployment the after-run scrape waits for both
// passes, not only the prefill instances' (which reach the client's count
// first), so the reconciliation does not read the decode instances' lag as
// a counter reset.
func TestSettlePD(t *testing.T) {
	for _, passes := range []int{1, 2} {
		// 6 succeeded: the prefill instances have finished 6, then the
		// decode instances catch up over two more scrapes.
		cs := &countServer{counts: []int{0, 6, 9, 12}}
		srv := httptest.NewServer(cs)
		t.Cleanup(srv.Close)
		dl, _ := scrape.Lookup("vllm")
		m := &Metrics{URLs: []string{srv.URL + "/metrics"}, Dialect: dl, Passes: passes}
		base := m.snapshot(t.Context())
		if base.err != nil {
			t.Fatal(base.err)
		}
		after := m.settle(t.Context(), base.snap, 6, 10*time.Second)
		n, _ := scrape.Diff(base.snap, after.snap, dl, m.Filter).Counter(scrape.EngineRequests)
		if want := float64(6 * passes); n != want {
			t.Errorf("passes %d: settled at %.0f finished requests, want %.0f", passes, n, want)
		}
	}
}

// TestPDPasses: a run reads a P/D router's instances and counts each
// request twice only when the router's answer is a deployment's list and
// the URLs read are all of its instances (order and trailing slashes
// aside); a subset, a server without /pd/instances, or an answer that is
// not such a list (some other server's) leaves the URLs given and one
// pass; a preset servebench started is not asked at all.
func TestPDPasses(t *testing.T) {
	const p, d = "http://127.0.0.1:41001", "http://127.0.0.1:41002"
	list := `{"instances":[{"role":"prefill","url":"` + p + `/"},{"role":"decode","url":"` + d + `"}]}`
	inst := []string{p + "/metrics", d + "/metrics"}
	given := []string{d + "/metrics/", p + "/metrics"}
	for _, c := range []struct {
		name   string
		answer string // /pd/instances' 200 body; "" a 404
		given  []string
		ask    bool
		urls   []string
		passes int
		asked  bool
	}{
		{"router, no --metrics-url", list, nil, true, inst, 2, true},
		{"router, all instances given", list, given, true, given, 2, true},
		{"router, the decode instance only", list, given[:1], true, given[:1], 0, true},
		{"router, instances and one more", list, append(slices.Clone(given), "http://127.0.0.1:41003/metrics"), true, nil, 0, true},
		{"no /pd/instances", "", nil, true, nil, 0, true},
		{"not JSON", "ok", nil, true, nil, 0, true},
		{"an instance without a URL", `{"instances":[{"role":"prefill","url":""},{"role":"decode","url":"` + d + `"}]}`, nil, true, nil, 0, true},
		{"an unknown role", `{"instances":[{"role":"prefill","url":"` + p + `"},{"role":"worker","url":"` + d + `"}]}`, nil, true, nil, 0, true},
		{"prefill instances only", `{"instances":[{"role":"prefill","url":"` + p + `"}]}`, nil, true, nil, 0, true},
		{"no instances", `{"instances":[]}`, nil, true, nil, 0, true},
		{"a preset started, not asked", list, nil, false, nil, 0, false},
	} {
		var asked atomic.Bool
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			asked.Store(asked.Load() || r.URL.Path == "/pd/instances")
			if c.answer == "" {
				http.NotFound(w, r)
				return
			}
			fmt.Fprint(w, c.answer)
		}))
		want := c.urls
		if want == nil {
			want = c.given
		}
		urls, passes := pdPasses(t.Context(), srv.URL, c.given, c.ask)
		srv.Close()
		if !slices.Equal(urls, want) || passes != c.passes || asked.Load() != c.asked {
			t.Errorf("%s: URLs %q, passes %d, asked %v; want %q, %d, %v", c.name, urls, passes, asked.Load(), want, c.passes, c.asked)
		}
	}
}
