package bench

import (
	"fmt"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/engine/option"
)

// DefaultSweepConcurrencies are the load levels of a sweep without
// --concurrency or --rate.
var DefaultSweepConcurrencies = []int{1, 2, 4, 8, 16, 32, 64}

// Sweep is the same workload at several load levels, each its own run (its
// own /metrics delta), named "c=N" or "rate=R" so report can plot them.
type Sweep struct {
	Concurrencies []int     // closed-loop levels; used when Rates is empty
	Rates         []float64 // open-loop levels (requests/s)
	// MaxErrorRate stops the sweep after a level whose failed share passes
	// it, in percent (negative: never).
	MaxErrorRate float64
	// MaxP99E2E stops the sweep after a level whose client p99 E2E passes it
	// (0: never).
	MaxP99E2E time.Duration
	// LevelGap separates a sharded sweep's levels (see planShards).
	LevelGap time.Duration
	// Clock is the time Rates and MaxP99E2E are given in, and the levels
	// named in ("rate=10" is 10 req/s modelled at any speed-up); the
	// workloads get wall-clock rates. The zero Clock is the wall clock.
	Clock result.Clock
}

// DefaultLevelGap is --level-gap's default: room for a level's drain, its
// after-run /metrics read and reconciliation, and the next level's warm-up.
const DefaultLevelGap = 15 * time.Second

// levelStride separates the conversations of consecutive sweep levels
// (Workload.Offset): more than any level sends.
const levelStride = 1 << 24

// MinSweepRequests is the fewest requests a sweep level sends when neither a
// request count nor a duration is given.
const MinSweepRequests = 32

// Runs expands base (its Request, Prompts and the request count or duration
// of its Workload) into one RunSpec per level. Without a count or duration,
// a level sends 4 x its concurrency (rate: 10 s worth), at least
// MinSweepRequests, so every level reaches its steady state.
func (s Sweep) Runs(base RunSpec) ([]RunSpec, error) {
	auto := base.Workload.Requests == 0 && base.Workload.Duration == 0
	if len(s.Concurrencies) > 0 && len(s.Rates) > 0 {
		return nil, option.Errorf("Concurrencies", nil, "sweep: {Concurrencies} and {Rates}: expected one of them")
	}
	levels := s.Concurrencies
	if len(levels) == 0 && len(s.Rates) == 0 {
		levels = DefaultSweepConcurrencies
	}
	var runs []RunSpec
	for _, c := range levels {
		if c < 1 {
			return nil, option.Errorf("Concurrencies", nil, "sweep: {Concurrencies} %d: expected levels of at least 1", c)
		}
		r := base
		r.Name = string(result.ConcurrencyRun(c))
		r.Workload.Mode, r.Workload.Concurrency = workload.ModeConcurrent, c
		if auto {
			r.Workload.Requests = max(MinSweepRequests, 4*c)
		}
		runs = append(runs, r)
	}
	for _, rate := range s.Rates {
		if !(rate > 0) {
			return nil, option.Errorf("Rates", nil, "sweep: {Rates} %v: expected levels > 0 requests/s", rate)
		}
		r := base
		r.Name = string(result.RateRun(rate))
		r.Workload.Mode, r.Workload.Rate = workload.ModeRate, s.Clock.RateFromModelled(rate)
		if auto {
			r.Workload.Requests = max(MinSweepRequests, int(10*rate))
		}
		runs = append(runs, r)
	}
	for i := range runs {
		runs[i].Workload.Offset = base.Workload.Offset + i*levelStride
		if err := runs[i].Validate(); err != nil {
			return nil, err
		}
	}
	if base.Shard.Count > 0 {
		if err := s.planShards(runs); err != nil {
			return nil, err
		}
	}
	return runs, nil
}

// planShards gives a sharded sweep's levels their common start instants,
// so every shard runs every level together: level 0 starts at --start-at,
// level L+1 at level L's start + its planned span + LevelGap. The planned
// span is known on every shard before anything runs: a level's --duration,
// or for an open-loop request count the seeded schedule's last send time
// (every shard draws the whole schedule); the gap must hold the drain of the
// requests still in flight, the after-run engine read, and the next
// level's warm-up (a shard later than MaxStartLate refuses the level). A
// closed-loop request count has no planned span (its length is what it
// measures), and the early stops decide from one shard's slice, so both
// are refused.
func (s Sweep) planShards(runs []RunSpec) error {
	sh := runs[0].Shard
	switch {
	case s.MaxErrorRate >= 0 || s.MaxP99E2E > 0:
		return option.Errorf("Shard", nil, "sweep {Shard} with an early stop ({MaxErrorRate}, {MaxP99E2E}): each shard would judge its own slice and the shards could stop at different levels; a sharded sweep runs every level (merge the shards, then read each level's errors)")
	case sh.StartAt.IsZero():
		return option.Errorf("StartAt", nil, "sweep {Shard}: expected {StartAt} too: every level starts at an instant planned from it, on every shard")
	case s.LevelGap <= 0:
		return option.Errorf("LevelGap", s.LevelGap, "expected a duration > 0: it holds each level's drain, engine read and the next level's warm-up")
	}
	at := sh.StartAt
	for i := range runs {
		span, ok := plannedSpan(runs[i].Workload)
		if !ok {
			return option.Errorf("Duration", nil, "sweep {Shard} with closed-loop levels (%s) needs {Duration}: a level of {Requests} %d (or the default 4 x concurrency) lasts as long as the server takes, so the shards could not start the next level together",
				runs[i].Name, runs[i].Workload.Requests)
		}
		runs[i].Shard.StartAt = at
		if i > 0 {
			runs[i].Shard.LevelGap = s.LevelGap
		}
		at = at.Add(span + s.LevelGap)
	}
	return nil
}

// plannedSpan is how long a level of workload w sends, known before it
// runs, or false when only running it tells.
func plannedSpan(w workload.Workload) (time.Duration, bool) {
	if w.Mode == workload.ModeRate && w.Requests > 0 {
		// The open loop's last send (request 0 goes at the start), on the
		// schedule the run will draw (its arrivals completed as it will be).
		p := workload.NewPacer(w.WithDefaults())
		var span time.Duration
		for i := 1; i < w.Requests; i++ {
			if span += p.Next(); w.Duration > 0 && span >= w.Duration {
				return w.Duration, true
			}
		}
		return span, true
	}
	return w.Duration, w.Duration > 0
}

// StopAfter returns the early-stop check for Config.StopAfter: a reason once
// a level's error rate or p99 E2E passes its bound.
func (s Sweep) StopAfter() func(run *result.Run) string {
	return func(run *result.Run) string {
		if run.Requests > 0 && s.MaxErrorRate >= 0 {
			pct := 100 * float64(run.Requests-run.OK) / float64(run.Requests)
			if pct > s.MaxErrorRate {
				return fmt.Sprintf("error rate %.1f%% over the bound %g%%", pct, s.MaxErrorRate)
			}
		}
		if sat := run.Saturation; sat != nil && sat.Saturated {
			return fmt.Sprintf("saturated: the queue wait grew without bound (slope test, t = %.1f); higher levels would only queue longer", sat.T)
		}
		if p99 := s.Clock.ToModelled(e2eP99(run)); s.MaxP99E2E > 0 && p99 > s.MaxP99E2E.Seconds() {
			return fmt.Sprintf("p99 E2E %.3f s over the bound %v", p99, s.MaxP99E2E)
		}
		return ""
	}
}

// e2eP99 is run's client p99 E2E, 0 without one.
func e2eP99(run *result.Run) float64 {
	if run.Client.E2ES == nil {
		return 0
	}
	return run.Client.E2ES.P99
}
