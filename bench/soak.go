package bench

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/servebench/servebench/bench/result"
)

// serverWaiter makes workers that could not connect wait for the server's
// /health (--continue-on-server-exit): a server restarted by its
// supervisor mid-soak costs the requests in flight and a few refused
// ones, not thousands of instant failures while it is down, and the run
// goes on when it is back. One worker polls; the others wait on its lock
// and find the server up with one request.
type serverWaiter struct {
	mu   sync.Mutex
	url  string // BASE/health
	http *http.Client
}

// healthPoll is how often a down server's /health is asked.
const healthPoll = 200 * time.Millisecond

func newServerWaiter(baseURL string) *serverWaiter {
	return &serverWaiter{url: strings.TrimRight(baseURL, "/") + "/health", http: &http.Client{Timeout: 2 * time.Second}}
}

// wait returns once /health answers 200 (true) or ctx is done (false).
func (w *serverWaiter) wait(ctx context.Context) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.url, nil)
		if err != nil {
			return false
		}
		if resp, err := w.http.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		if !sleepCtx(ctx, healthPoll) {
			return false
		}
	}
}

// restartWarnings names the windows in which the engine's counters went
// back: a server restart, whose failed requests the same window counts.
func restartWarnings(ws []result.Window) []string {
	var out []string
	for _, w := range ws {
		if w.Engine != nil && w.Engine.CounterReset {
			out = append(out, fmt.Sprintf("window %d (%.0f-%.0f s): /metrics counters reset (server restarted?); %d of its %d requests failed (%s); its engine deltas count from the restart",
				w.Index, w.StartS, w.EndS, w.Requests-w.OK, w.Requests, result.ErrorCounts(w.Errors)))
		}
	}
	return out
}
