package bench

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/workload"
)

// TestShard: K/N parsing, the slice each shard sends, and closed-loop
// concurrency split with the remainder on the first shards.
func TestShard(t *testing.T) {
	for _, bad := range []string{"", "1", "2/2", "-1/2", "0/0", "a/2", "1/b", "1/2/3"} {
		if _, err := ParseShard(bad); err == nil || !strings.Contains(err.Error(), "Shard") {
			t.Errorf("ParseShard(%q) = %v: want an error naming --shard", bad, err)
		}
	}
	sh, err := ParseShard("1/3")
	if err != nil || sh.Index != 1 || sh.Count != 3 {
		t.Fatalf("ParseShard(1/3) = %+v, %v", sh, err)
	}
	for m, want := range []int{1, 4, 7} {
		if got := sh.index(m); got != want || !sh.mine(got) || sh.mine(got+1) {
			t.Errorf("shard 1/3's conversation %d = %d, want %d and only i mod 3 = 1", m, got, want)
		}
	}
	// 8 workers over 3 shards: 3, 3, 2.
	for k, want := range []int{3, 3, 2} {
		if got := (Shard{Index: k, Count: 3}).workers(8); got != want {
			t.Errorf("shard %d/3 of concurrency 8: %d workers, want %d", k, got, want)
		}
	}
	if whole := (Shard{}); whole.workers(8) != 8 || whole.index(5) != 5 || !whole.mine(5) {
		t.Error("the zero Shard must be the whole run")
	}
	w := workload.Workload{Mode: workload.ModeConcurrent, Concurrency: 2, Requests: 4}
	if err := (Shard{Index: 0, Count: 3}).validate(&w); err == nil || !strings.Contains(err.Error(), "at least 3") {
		t.Errorf("concurrency 2 over 3 shards: %v, want a refusal", err)
	}
}

// TestSweepShardPlan: a sharded sweep's levels start at instants every
// shard computes alike: --start-at, then each level's planned span (its
// --duration, or the seeded open-loop schedule's last send) plus the gap;
// closed-loop request counts, early stops and a missing --start-at are
// refused, naming the flags.
func TestSweepShardPlan(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const gap = 3 * time.Second
	base := func(k int, wl workload.Workload) RunSpec {
		return RunSpec{Workload: wl, Request: RequestSpec{MaxTokens: 4}, Shard: Shard{Index: k, Count: 3, StartAt: t0}}
	}
	sw := Sweep{Rates: []float64{20, 40}, MaxErrorRate: -1, LevelGap: gap}
	wl := workload.Workload{Requests: 12, Seed: 7, Arrival: workload.ArrivalPoisson, Burstiness: 1}
	runs0, err := sw.Runs(base(0, wl))
	if err != nil {
		t.Fatal(err)
	}
	runs2, err := sw.Runs(base(2, wl))
	if err != nil {
		t.Fatal(err)
	}
	// The first level's last send, drawn as the runner draws it.
	first := workload.Workload{Mode: workload.ModeRate, Rate: 20, Arrival: workload.ArrivalPoisson, Burstiness: 1, Requests: 12, Seed: 7}
	p, span := workload.NewPacer(first), time.Duration(0)
	for range 11 {
		span += p.Next()
	}
	if span < 200*time.Millisecond || span > 2*time.Second {
		t.Fatalf("12 Poisson sends at 20/s span %v: implausible", span)
	}
	for _, runs := range [][]RunSpec{runs0, runs2} {
		if len(runs) != 2 || !runs[0].Shard.StartAt.Equal(t0) || !runs[1].Shard.StartAt.Equal(t0.Add(span+gap)) ||
			runs[0].Shard.LevelGap != 0 || runs[1].Shard.LevelGap != gap {
			t.Errorf("levels start %v and %v (gap %v), want %v and %v", runs[0].Shard.StartAt, runs[1].Shard.StartAt, runs[1].Shard.LevelGap, t0, t0.Add(span+gap))
		}
	}
	// Duration-based closed loop: exact, whatever the server does.
	cl := Sweep{Concurrencies: []int{3, 6, 9}, MaxErrorRate: -1, LevelGap: gap}
	runs, err := cl.Runs(base(1, workload.Workload{Duration: 5 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range runs {
		if want := t0.Add(time.Duration(i) * (5*time.Second + gap)); !r.Shard.StartAt.Equal(want) || r.Shard.workers(r.Workload.Concurrency) != 3*(i+1)/3 {
			t.Errorf("level %s starts %v with %d workers, want %v and a third of the level", r.Name, r.Shard.StartAt, r.Shard.workers(r.Workload.Concurrency), want)
		}
	}
	for _, tc := range []struct {
		sw   Sweep
		wl   workload.Workload
		at   time.Time
		want string
	}{
		{Sweep{Concurrencies: []int{3, 6}, MaxErrorRate: -1, LevelGap: gap}, workload.Workload{Requests: 24}, t0, "needs Duration"},
		{Sweep{Concurrencies: []int{3, 6}, MaxErrorRate: -1, LevelGap: gap}, workload.Workload{}, t0, "needs Duration"},
		{Sweep{Rates: []float64{5}, MaxErrorRate: 10, LevelGap: gap}, wl, t0, "MaxErrorRate"},
		{Sweep{Rates: []float64{5}, MaxErrorRate: -1, MaxP99E2E: time.Second, LevelGap: gap}, wl, t0, "MaxP99E2E"},
		{Sweep{Rates: []float64{5}, MaxErrorRate: -1, LevelGap: gap}, wl, time.Time{}, "StartAt"},
		{Sweep{Rates: []float64{5}, MaxErrorRate: -1}, wl, t0, "LevelGap"},
	} {
		b := base(0, tc.wl)
		b.Shard.StartAt = tc.at
		if _, err := tc.sw.Runs(b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v over %+v: %v, want an error naming %s", tc.sw, tc.wl, err, tc.want)
		}
	}
}

// TestShardLateForLevel: a shard late for a sweep level's planned start
// refuses it, naming --level-gap.
func TestShardLateForLevel(t *testing.T) {
	sh := Shard{Index: 1, Count: 2, StartAt: time.Now().Add(-2 * time.Second), LevelGap: 3 * time.Second}
	if err := sh.waitStart(t.Context()); !errors.Is(err, ErrInvalidRun) || !strings.Contains(err.Error(), "LevelGap 3s") {
		t.Errorf("2 s late for a level: %v, want ErrInvalidRun naming --level-gap", err)
	}
}
