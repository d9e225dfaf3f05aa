package result

import (
	"encoding/json"
	"testing"
)

// TestNamesJSON: the typed mode, path and run names write the same JSON
// strings results.json always had.
func TestNamesJSON(t *testing.T) {
	r := Run{Name: string(StreamRun(false)), Workload: Workload{Mode: ModeRate, Path: PathDirect}}
	b, err := json.Marshal(r.Workload)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["mode"] != "rate" || m["path"] != "direct" || r.Name != "non-streaming" || StreamRun(true) != "streaming" {
		t.Errorf("mode %v, path %v, run %q: want rate, direct, non-streaming", m["mode"], m["path"], r.Name)
	}
	var back Workload
	if err := json.Unmarshal(b, &back); err != nil || back.Mode != ModeRate || !back.OpenLoop() {
		t.Errorf("read back %+v (%v): want mode rate, open loop", back, err)
	}
}

func TestSweepLevelNames(t *testing.T) {
	for _, c := range []struct {
		name        RunName
		conc, rate  bool
		description string
	}{
		{ConcurrencyRun(8), true, false, "a concurrency level"},
		{RateRun(2.5), false, true, "a rate level"},
		{"c=", false, false, "a prefix alone names no level"},
		{"rate=", false, false, "a prefix alone names no level"},
		{RunStreaming, false, false, "a standard run"},
		{"cx=1", false, false, "another name"},
	} {
		if c.name.IsConcurrencyLevel() != c.conc || c.name.IsRateLevel() != c.rate {
			t.Errorf("%q (%s): concurrency %v rate %v, want %v %v", c.name, c.description,
				c.name.IsConcurrencyLevel(), c.name.IsRateLevel(), c.conc, c.rate)
		}
	}
	if ConcurrencyRun(16) != "c=16" || RateRun(0.5) != "rate=0.5" || !RunNonStreaming.Standard() || RunName("c=1").Standard() {
		t.Errorf("names: %q %q", ConcurrencyRun(16), RateRun(0.5))
	}
}
