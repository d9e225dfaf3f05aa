package bench

import (
	"strings"
	"testing"
)

// TestShard: K/N parsing, the slice each shard sends, and closed-loop
// concurrency split with the remainder on the first shards.
func TestShard(t *testing.T) {
	for _, bad := range []string{"", "1", "2/2", "-1/2", "0/0", "a/2", "1/b", "1/2/3"} {
		if _, err := ParseShard(bad); err == nil || !strings.Contains(err.Error(), "--shard") {
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
	w := Workload{Mode: ModeConcurrent, Concurrency: 2, Requests: 4}
	if err := (Shard{Index: 0, Count: 3}).validate(&w); err == nil || !strings.Contains(err.Error(), "at least 3") {
		t.Errorf("concurrency 2 over 3 shards: %v, want a refusal", err)
	}
}
