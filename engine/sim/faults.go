package sim

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FaultNames lists the --fault values the engine understands, for help text.
var FaultNames = []string{
	"never-ready", "exit-during-load", "crash-after=N", "http-error=RATE:STATUS",
	"mid-stream-error-after=K", "drop-connection-after=K", "stall-after=K:DURATION",
	"malformed-event-after=K", "buffer-stream=N", "metrics-unavailable", "metrics-reset[=N]",
	"close-connection-every=N",
}

// faults is the parsed --fault set. Token-count thresholds are -1 when off.
//
// What each does:
//   - never-ready: start-up stops before the API server starts; with
//     --health-during-load 503, /health answers 503 for ever.
//   - exit-during-load: the engine core dies after loading weights; Run
//     returns ErrLoadFailed (the command exits 3).
//   - crash-after=N: once N responses have completed, every connection is
//     dropped and Run returns ErrCrashed (the command exits 3).
//   - http-error=RATE:STATUS: that fraction of generation requests (seeded
//     draws) get STATUS with an OpenAI-style error; 429 adds Retry-After: 1.
//   - mid-stream-error-after=K: after K content tokens a stream gets vLLM's
//     in-band error event, data: {"error":{...}}, then data: [DONE], all
//     under HTTP 200; the engine counts finished_reason="error".
//   - drop-connection-after=K: after K tokens the connection is closed
//     without the chunked terminator (the client sees an unexpected EOF).
//   - stall-after=K:DURATION: after K tokens the stream writes nothing for
//     DURATION of wall time (not sped up) while generation goes on; the
//     tokens made meanwhile then arrive in one burst.
//   - malformed-event-after=K: after K tokens one truncated, unparsable
//     event is sent; the stream then goes on normally.
//   - buffer-stream=N: tokens are flushed only every N, as a buffering proxy
//     would (the engine's own timing is unchanged).
//   - metrics-unavailable: /metrics answers 404.
//   - metrics-reset[=N]: once N responses (default 1) have completed, every
//     metric restarts from zero, as after a server restart.
//   - close-connection-every=N: every Nth generation response says
//     "Connection: close" and the server closes that connection after it, as
//     a proxy or server with a per-connection request limit does (nginx's
//     keepalive_requests): the client must open new ones mid-run.
//
// The stream faults apply to streaming requests only.
type faults struct {
	neverReady, exitDuringLoad bool
	crashAfter                 int // responses completed before the engine dies; 0: off
	httpErrorRate              float64
	httpErrorStatus            int
	midStreamErrorAfter        int
	dropAfter                  int
	stallAfter                 int
	stallFor                   time.Duration
	malformedAfter             int
	bufferEvery                int // flush every N tokens; 0: off
	metricsUnavailable         bool
	metricsResetAfter          int // recreate the metrics once N responses have completed; 0: off
	closeEvery                 int // close the connection after every Nth generation response; 0: off
	generations                atomic.Int64

	mu  sync.Mutex
	rng *rand.Rand // seeded; draws http-error decisions
}

// parseFaults parses --fault values; an error names the bad value and what
// was expected.
func parseFaults(specs []string, seed int64) (*faults, error) {
	f := &faults{rng: rand.New(rand.NewPCG(uint64(seed), 0x5e7fa017)), midStreamErrorAfter: -1, dropAfter: -1, stallAfter: -1, malformedAfter: -1}
	for _, spec := range specs {
		name, val, hasVal := strings.Cut(spec, "=")
		parse, ok := faultKinds[name]
		if !ok {
			return nil, fmt.Errorf("fault %q: unknown fault %q; known: %s", spec, name, strings.Join(FaultNames, ", "))
		}
		if err := parse(f, faultValue{spec: spec, name: name, val: val, hasVal: hasVal}); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// faultKinds maps each --fault name to what sets it; FaultNames spells the
// same set for help text.
var faultKinds = map[string]func(*faults, faultValue) error{
	"never-ready":            switchFault(func(f *faults) *bool { return &f.neverReady }),
	"exit-during-load":       switchFault(func(f *faults) *bool { return &f.exitDuringLoad }),
	"metrics-unavailable":    switchFault(func(f *faults) *bool { return &f.metricsUnavailable }),
	"crash-after":            countFault(1, func(f *faults) *int { return &f.crashAfter }),
	"close-connection-every": countFault(1, func(f *faults) *int { return &f.closeEvery }),
	"buffer-stream":          countFault(1, func(f *faults) *int { return &f.bufferEvery }),
	"mid-stream-error-after": countFault(0, func(f *faults) *int { return &f.midStreamErrorAfter }),
	"drop-connection-after":  countFault(0, func(f *faults) *int { return &f.dropAfter }),
	"malformed-event-after":  countFault(0, func(f *faults) *int { return &f.malformedAfter }),
	"metrics-reset":          parseMetricsReset,
	"http-error":             parseHTTPError,
	"stall-after":            parseStallAfter,
}

// faultValue is one --fault value cut at its first "=".
type faultValue struct {
	spec, name, val string
	hasVal          bool
}

func (v faultValue) bad(want string) error {
	return fmt.Errorf("fault %q: want %s", v.spec, want)
}

// count reads the value as an integer N >= min.
func (v faultValue) count(min int) (int, error) {
	n, err := strconv.Atoi(v.val)
	if !v.hasVal || err != nil || n < min {
		return 0, v.bad(fmt.Sprintf("%s=N with an integer N >= %d", v.name, min))
	}
	return n, nil
}

// switchFault is a fault that takes no value.
func switchFault(field func(*faults) *bool) func(*faults, faultValue) error {
	return func(f *faults, v faultValue) error {
		if v.hasVal {
			return v.bad(v.name + " without a value")
		}
		*field(f) = true
		return nil
	}
}

// countFault is a fault that takes one integer >= min.
func countFault(min int, field func(*faults) *int) func(*faults, faultValue) error {
	return func(f *faults, v faultValue) error {
		n, err := v.count(min)
		*field(f) = n
		return err
	}
}

// parseMetricsReset: metrics-reset alone resets after the first response.
func parseMetricsReset(f *faults, v faultValue) error {
	f.metricsResetAfter = 1
	if !v.hasVal {
		return nil
	}
	var err error
	f.metricsResetAfter, err = v.count(1)
	return err
}

func parseHTTPError(f *faults, v faultValue) error {
	rate, status, ok := strings.Cut(v.val, ":")
	r, err1 := strconv.ParseFloat(rate, 64)
	s, err2 := strconv.Atoi(status)
	if !v.hasVal || !ok || err1 != nil || err2 != nil || !(r >= 0 && r <= 1) || s < 400 || s > 599 {
		return v.bad("http-error=RATE:STATUS with RATE in [0,1] and an HTTP error STATUS 400-599, e.g. http-error=0.1:500")
	}
	f.httpErrorRate, f.httpErrorStatus = r, s
	return nil
}

func parseStallAfter(f *faults, v faultValue) error {
	k, d, ok := strings.Cut(v.val, ":")
	n, err1 := strconv.Atoi(k)
	dur, err2 := time.ParseDuration(d)
	if !v.hasVal || !ok || err1 != nil || err2 != nil || n < 0 || dur <= 0 {
		return v.bad("stall-after=K:DURATION with K >= 0 tokens and a positive Go duration, e.g. stall-after=10:5s")
	}
	f.stallAfter, f.stallFor = n, dur
	return nil
}

// closeConnection counts a generation request and says whether its
// response closes the connection (close-connection-every).
func (f *faults) closeConnection() bool {
	return f.closeEvery > 0 && f.generations.Add(1)%int64(f.closeEvery) == 0
}

// httpError decides, seeded, whether this request gets the http-error fault.
func (f *faults) httpError() bool {
	if f.httpErrorRate <= 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.Float64() < f.httpErrorRate
}
