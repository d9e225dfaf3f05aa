package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/engine/option"
)

// MaxStartLate is how far past Shard.StartAt a shard may still start: any
// later and the shards would not load the server together.
const MaxStartLate = time.Second

// Shard says which slice of a workload this process sends when several
// machines share it: every shard builds the same seeded schedule of the
// whole run (Workload.Requests and Rate are totals) and sends conversation
// i when i mod Count is Index. Open loop keeps the whole schedule's send
// times (so each shard sends at Rate/Count); closed loop splits the
// concurrency, the remainder going to the first shards. The zero Shard is
// the whole run.
type Shard struct {
	Index, Count int
	// StartAt is every shard's common start instant; zero: at once.
	StartAt time.Time
	// LevelGap is the --level-gap a sweep level after the first was
	// planned with (Sweep.Runs), named when the shard is late for it.
	LevelGap time.Duration
}

// ParseShard reads "K/N" (0 <= K < N).
func ParseShard(s string) (Shard, error) {
	k, n, ok := strings.Cut(s, "/")
	ki, err1 := strconv.Atoi(k)
	ni, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || ni < 1 || ki < 0 || ki >= ni {
		return Shard{}, option.Errorf("Shard", s, "expected K/N with 0 <= K < N (e.g. 0/4)")
	}
	return Shard{Index: ki, Count: ni}, nil
}

// sharded reports whether s is a slice of a larger run.
func (s Shard) sharded() bool { return s.Count > 1 }

// mine reports whether conversation i is this shard's.
func (s Shard) mine(i int) bool { return !s.sharded() || i%s.Count == s.Index }

// index is the global index of this shard's m-th conversation.
func (s Shard) index(m int) int {
	if !s.sharded() {
		return m
	}
	return s.Index + m*s.Count
}

// workers is this shard's part of closed-loop concurrency c.
func (s Shard) workers(c int) int {
	if !s.sharded() {
		return c
	}
	n := c / s.Count
	if s.Index < c%s.Count {
		n++
	}
	return n
}

// validate checks s against the workload it slices.
func (s Shard) validate(w *workload.Workload) error {
	if s.Count == 0 {
		return nil
	}
	if s.Index < 0 || s.Index >= s.Count {
		return option.Errorf("Shard", nil, "{Shard} %d/%d: expected 0 <= K < N", s.Index, s.Count)
	}
	if (w.Mode == workload.ModeSequential || w.Mode == workload.ModeConcurrent) && w.Concurrency < s.Count {
		// A shard without a worker could not send its slice.
		return option.Errorf("Shard", nil, "{Shard} %d/%d: closed-loop concurrency %d is split over the shards: expected at least %d (or {Rate})",
			s.Index, s.Count, w.Concurrency, s.Count)
	}
	return nil
}

// waitStart waits until s.StartAt (if set; ctx cuts the wait short), or
// refuses (ErrInvalidRun) when the clock is already past it by more than
// MaxStartLate.
func (s Shard) waitStart(ctx context.Context) error {
	if s.StartAt.IsZero() {
		return nil
	}
	if late := time.Since(s.StartAt); late > MaxStartLate {
		if s.LevelGap > 0 {
			return fmt.Errorf("%w: %w", ErrInvalidRun, option.Errorf("LevelGap", nil, "shard %d/%d: the clock is %v past this level's planned start %s: refusing to start it (the previous level's drain and engine read, and this level's warm-up, took longer than {LevelGap} %v: give a larger one)",
				s.Index, s.Count, late.Round(time.Millisecond), s.StartAt.UTC().Format(time.RFC3339Nano), s.LevelGap))
		}
		return fmt.Errorf("%w: %w", ErrInvalidRun, option.Errorf("StartAt", nil, "shard %d/%d: the clock is %v past {StartAt} %s: refusing to start (the shards would not load the server together)",
			s.Index, s.Count, late.Round(time.Millisecond), s.StartAt.UTC().Format(time.RFC3339Nano)))
	}
	t := time.NewTimer(time.Until(s.StartAt))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// result is the shard's block of results.json; nil for the whole run.
func (s Shard) result(started time.Time) *result.Shard {
	if s.Count == 0 {
		return nil
	}
	rs := &result.Shard{Index: s.Index, Count: s.Count}
	if !s.StartAt.IsZero() {
		at := s.StartAt.UTC()
		rs.StartAt = &at
		rs.StartSkewS = started.Sub(s.StartAt).Seconds()
	}
	return rs
}

// SnapshotFile is the file in a sharded run's results directory that holds
// one of its saved /metrics snapshots ("RUN.before", "RUN.after").
func SnapshotFile(name string) string { return "metrics-" + name + ".prom" }
