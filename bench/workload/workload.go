package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/option"
)

// Workload modes: result's, which results.json records and reports read.
const (
	ModeSequential = result.ModeSequential
	ModeConcurrent = result.ModeConcurrent
	ModeRate       = result.ModeRate
	ModeTrace      = result.ModeTrace // open loop on a trace's send times (--trace)
)

// Arrival processes for ModeRate.
const (
	ArrivalConstant = "constant"
	ArrivalPoisson  = "poisson"
	ArrivalGamma    = "gamma"
)

// Modes and Arrivals list the valid names, for help texts and errors.
var (
	Modes    = []result.Mode{ModeSequential, ModeConcurrent, ModeRate, ModeTrace}
	Arrivals = []string{ArrivalConstant, ArrivalPoisson, ArrivalGamma}
)

// DefaultMaxWorkers bounds the goroutines an open-loop run may spawn. Past it,
// sends wait for a free worker and are counted late: the server is then so far
// behind that more in-flight requests would only measure the harness.
const DefaultMaxWorkers = 10000

// Workload decides how many requests are sent and when.
type Workload struct {
	Mode        result.Mode   // ModeSequential, ModeConcurrent, ModeRate or ModeTrace
	Concurrency int           // ModeConcurrent: requests in flight (closed loop)
	Rate        float64       // ModeRate: requests per second
	Arrival     string        // ModeRate: ArrivalConstant, ArrivalPoisson or ArrivalGamma
	Burstiness  float64       // ArrivalGamma shape: 1 = Poisson, < 1 burstier, > 1 smoother
	Requests    int           // measured requests; 0 with Duration > 0 means "until Duration"
	Duration    time.Duration // stop sending after this long (0 = no limit)
	Warmup      int           // requests sent (sequentially) before the measured part
	Seed        int64         // arrival process and prompt choice
	// Offset is the first conversation of an unbounded (generated) source
	// this run sends: sweep levels and search steps each get their own
	// prompts, so a prefix cache cannot serve one level from an earlier
	// level's requests.
	Offset     int
	MaxWorkers int // ModeRate, ModeTrace: goroutine bound (0 = DefaultMaxWorkers)
	// ThinkTime is the pause, in seconds, between a reply and a session's
	// next turn (zero Dist: none).
	ThinkTime Dist
}

// WithDefaults is w completed: the sequential mode when none is named, one
// request in flight when sequential (none bound by a trace), DefaultMaxWorkers
// for an open loop without a bound, Poisson arrivals for a rate without one.
// It changes nothing in w; completing twice changes nothing more.
func (w Workload) WithDefaults() Workload {
	if w.Mode == "" {
		w.Mode = ModeSequential
	}
	switch w.Mode {
	case ModeSequential:
		w.Concurrency = 1
	case ModeTrace:
		w.Concurrency = 0
	case ModeRate:
		if w.Arrival == "" {
			w.Arrival = ArrivalPoisson
		}
	}
	if (w.Mode == ModeRate || w.Mode == ModeTrace) && w.MaxWorkers == 0 {
		w.MaxWorkers = DefaultMaxWorkers
	}
	return w
}

// Validate checks w, as given or completed (WithDefaults: its zero fields
// as their defaults), returning an error naming the bad value; it changes
// nothing.
func (w *Workload) Validate() error {
	return w.WithDefaults().check()
}

// check checks a completed workload.
func (w Workload) check() error {
	switch w.Mode {
	case ModeSequential, ModeConcurrent, ModeRate, ModeTrace:
	default:
		return fmt.Errorf("workload mode %q: expected one of %v", w.Mode, Modes)
	}
	if w.Requests < 0 {
		return option.Errorf("Requests", w.Requests, "expected a count >= 0")
	}
	if w.Duration < 0 {
		return option.Errorf("Duration", w.Duration, "expected a positive duration")
	}
	if w.Requests == 0 && w.Duration == 0 && w.Mode != ModeTrace { // a trace's length is its own
		return option.Errorf("Requests", nil, "{Requests} 0 without {Duration}: expected a request count or a duration")
	}
	if w.Warmup < 0 {
		return option.Errorf("Warmup", w.Warmup, "expected a count >= 0")
	}
	switch w.Mode {
	case ModeConcurrent:
		if w.Concurrency < 1 {
			return option.Errorf("Concurrency", w.Concurrency, "expected at least 1")
		}
	case ModeRate:
		return w.validateRate()
	case ModeTrace:
		return w.validateWorkers()
	}
	return nil
}

func (w Workload) validateWorkers() error {
	if w.MaxWorkers < 1 {
		return fmt.Errorf("max workers %d: expected at least 1", w.MaxWorkers)
	}
	return nil
}

func (w Workload) validateRate() error {
	if !(w.Rate > 0) || math.IsInf(w.Rate, 0) {
		return option.Errorf("Rate", w.Rate, "expected requests per second > 0")
	}
	switch w.Arrival {
	case ArrivalConstant, ArrivalPoisson:
	case ArrivalGamma:
		if !(w.Burstiness > 0) || math.IsInf(w.Burstiness, 0) {
			return option.Errorf("Burstiness", w.Burstiness, "expected a gamma shape > 0 (1 = Poisson)")
		}
	default:
		return option.Errorf("Arrival", w.Arrival, "expected one of %v", Arrivals)
	}
	return w.validateWorkers()
}

// Pacer yields the gaps between intended send times of an open-loop run. It is
// not safe for concurrent use; the Runner calls it from one goroutine.
type Pacer struct {
	rate    float64
	arrival string
	shape   float64
	rng     *rand.Rand
}

// NewPacer returns the pacer for a completed (WithDefaults), validated
// ModeRate workload.
func NewPacer(w Workload) *Pacer {
	shape := w.Burstiness
	if w.Arrival == ArrivalPoisson {
		shape = 1
	}
	return &Pacer{rate: w.Rate, arrival: w.Arrival, shape: shape,
		rng: rand.New(rand.NewPCG(uint64(w.Seed), 0x5e5eb)), //nolint:gosec // load pattern, not security
	}
}

// Next returns the gap before the next send. Constant arrivals are evenly
// spaced; Poisson gaps are exponential; gamma gaps have shape Burstiness and
// mean 1/Rate, as in vLLM's benchmark_serving, so burstiness changes the
// spread but never the average rate.
func (p *Pacer) Next() time.Duration {
	mean := 1 / p.rate
	var gap float64
	switch p.arrival {
	case ArrivalConstant:
		gap = mean
	default:
		gap = gammaSample(p.rng, p.shape) * mean / p.shape
	}
	return time.Duration(gap * float64(time.Second))
}

// gammaSample draws from Gamma(shape, 1) with Marsaglia and Tsang's method
// (2000); for shape < 1 it boosts with U^(1/shape).
func gammaSample(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		return gammaSample(rng, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for i := 0; i < 1000; i++ { // accepts with probability > 0.95 per try
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
	return shape // unreachable in practice; the mean keeps the rate honest
}
