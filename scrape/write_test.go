package scrape

import (
	"path/filepath"
	"testing"
	"time"
)

// TestSnapshotWriteFile: a saved snapshot parses back to the same delta
// and keeps the time it was scraped.
func TestSnapshotWriteFile(t *testing.T) {
	s, err := ParseFile(filepath.Join(fixtureDir, "vllm_v1_metrics_qwen2.5-1.5b.txt")) // a real vLLM V1 scrape
	if err != nil {
		t.Fatal(err)
	}
	s.At = time.Date(2026, 12, 1, 11, 40, 0, 123456789, time.UTC)
	path := filepath.Join(t.TempDir(), "snap.prom")
	if err := s.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !back.At.Equal(s.At) {
		t.Errorf("time %v, want %v", back.At, s.At)
	}
	want, got := Diff(nil, s, nil, Filter{}), Diff(nil, back, nil, Filter{})
	for _, q := range Quantities {
		wh, _ := want.Hist(q)
		gh, _ := got.Hist(q)
		wc, wok := want.Counter(q)
		gc, gok := got.Counter(q)
		if wh.Count != gh.Count || wh.Sum != gh.Sum || len(wh.Buckets) != len(gh.Buckets) || wc != gc || wok != gok {
			t.Errorf("%s: %+v %v after the round trip, want %+v %v", q, gh, gc, wh, wc)
		}
	}
	if h, ok := got.Hist(EngineTTFT); !ok || h.Count == 0 {
		t.Errorf("TTFT %+v after the round trip: want the fixture's observations", h)
	}
	if len(back.Families) != len(s.Families) {
		t.Errorf("%d families back, want %d", len(back.Families), len(s.Families))
	}
}
