package result

import (
	"strconv"
	"strings"
)

// Mode is how a run sends its requests (results.json's workload.mode). The
// command sets it (bench/workload decides the schedule by it); reports,
// compare and exports read it back.
type Mode string

// The workload modes.
const (
	ModeSequential Mode = "sequential" // one request at a time
	ModeConcurrent Mode = "concurrent" // a closed loop of N in flight
	ModeRate       Mode = "rate"       // an open-loop schedule of R requests/s
	ModeTrace      Mode = "trace"      // open loop on a trace's send times (--trace)
)

// OpenLoop reports whether the mode sends on a schedule (rate, trace), so
// latency is also measured from the intended send time.
func (m Mode) OpenLoop() bool { return m == ModeRate || m == ModeTrace }

// RunName is a run's name (results.json's runs[].name, requests.jsonl's
// run): one of the standard names below, or another the command gave
// ("c=16", "rate=2", a grid's treatment).
type RunName string

// The standard runs' names: servebench run's one run per stream mode.
const (
	RunStreaming    RunName = "streaming"
	RunNonStreaming RunName = "non-streaming"
)

// StreamRun is the standard name of a run that streams or not.
func StreamRun(stream bool) RunName {
	if stream {
		return RunStreaming
	}
	return RunNonStreaming
}

// Standard reports whether n is one of the standard stream-mode runs.
func (n RunName) Standard() bool { return n == RunStreaming || n == RunNonStreaming }

// The prefixes of a sweep level's run name, which the sweep's tables and
// charts read its load from.
const (
	levelConcurrency = "c="
	levelRate        = "rate="
)

// ConcurrencyRun is the name of a sweep level at concurrency c ("c=8").
func ConcurrencyRun(c int) RunName { return RunName(levelConcurrency + strconv.Itoa(c)) }

// RateRun is the name of a sweep level at rate requests/s ("rate=2.5").
func RateRun(rate float64) RunName {
	return RunName(levelRate + strconv.FormatFloat(rate, 'g', -1, 64))
}

// IsConcurrencyLevel reports whether n names a sweep's concurrency level
// (ConcurrencyRun).
func (n RunName) IsConcurrencyLevel() bool {
	return len(n) > len(levelConcurrency) && strings.HasPrefix(string(n), levelConcurrency)
}

// IsRateLevel reports whether n names a sweep's rate level (RateRun).
func (n RunName) IsRateLevel() bool {
	return len(n) > len(levelRate) && strings.HasPrefix(string(n), levelRate)
}

// Path is the way a run's requests took with --direct-url
// (results.json's workload.path): through the path under test, or straight
// to the engine.
type Path string

// The two sides of a run sent with --direct-url.
const (
	PathProxied Path = "proxied" // through --base-url (a proxy, a gateway)
	PathDirect  Path = "direct"  // to the engine itself
)
