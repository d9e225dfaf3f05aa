package result

import "github.com/servebench/servebench/bench/stats"

// Steady is a run's steady state (results.json runs[].steady_state): the
// window from the first response's completion (before it the in-flight
// count only grows: ramp-up) to the last send (after it the count only
// falls: drain), and the figures of that window alone. Throughput counts
// the completions inside the window; the client summaries are over the
// successful requests sent inside it (each met the load at its level).
type Steady struct {
	StartS float64 `json:"start_s"` // from the run's start
	EndS   float64 `json:"end_s"`
	// InFlightTarget is what the count should hold at: the concurrency
	// (closed loop), or Little's rate x mean E2E in the window (open loop).
	InFlightTarget float64 `json:"in_flight_target"`
	// InFlightMean, Min and Max are the in-flight count (requests sent and
	// not yet answered) at 200 evenly spaced instants of the window.
	InFlightMean float64        `json:"in_flight_mean"`
	InFlightMin  int            `json:"in_flight_min"`
	InFlightMax  int            `json:"in_flight_max"`
	Requests     int            `json:"requests"` // successful requests sent in the window (of the sample)
	Completed    int            `json:"completed"`
	Throughput   Throughput     `json:"throughput"`
	FirstVisible *stats.Summary `json:"first_visible_s,omitempty"`
	E2E          *stats.Summary `json:"e2e_s,omitempty"`
	TPOT         *stats.Summary `json:"tpot_s,omitempty"`
	// Sampled is how many requests the figures' sample kept of those sent,
	// when the run sent more than SteadyCap (every k-th, uniformly).
	Sampled int    `json:"sampled,omitempty"`
	Note    string `json:"note,omitempty"` // why there is no window, or what limits it
}

// Saturation is the open-loop test for a server that cannot keep up
// (results.json runs[].saturation): the requests' wait (first token from
// the intended send time) regressed on their send time over the steady
// window. Saturated when the slope is significant (t > SaturationT), at
// least SaturationMinSlope (the queue gains 5% of the time spent sending:
// the server serves under ~95% of what is sent; a noisy fast server's
// millisecond waits drifting up does not count), and the wait of the
// window's last quarter is over SaturationGrowth times its first
// quarter's: the queue grows without bound, so the level stopped
// sending early (StoppedAtS) instead of measuring an ever longer queue.
type Saturation struct {
	Saturated  bool    `json:"saturated"`
	WaitSlope  float64 `json:"wait_slope"` // seconds of wait per second of sending (dimensionless)
	T          float64 `json:"t"`          // the slope's t statistic
	WaitFirstS float64 `json:"wait_first_quarter_s"`
	WaitLastS  float64 `json:"wait_last_quarter_s"`
	Points     int     `json:"points"`
	StoppedAtS float64 `json:"stopped_at_s"` // when sending stopped, from the run's start (0: it did not)
}

// The saturation test's bounds (Saturation).
const (
	SaturationT      = 4.0
	SaturationGrowth = 2.0
	// SaturationMinSlope is the least growth of the wait per second of
	// sending (dimensionless, so the same in either clock).
	SaturationMinSlope = 0.05
	// SaturationMinPoints is the fewest requests in the window the test
	// judges on.
	SaturationMinPoints = 32
)
