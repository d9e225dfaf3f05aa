package result

import (
	"math"
	"testing"
)

// events builds n one-token events: groups of size arriving every
// size*itl seconds, the events of a group 2 us apart (parsed from one read).
func events(n, size int, itl float64) Events {
	var e Events
	for i := 0; i < n; i++ {
		g, k := i/size, i%size
		e = append(e, [2]float64{0.01 + float64(g*size)*itl + float64(k)*2e-6, 1})
	}
	return e
}

func TestStutter(t *testing.T) {
	tests := []struct {
		name                string
		e                   Events
		arrivals, maxPer    int
		burstShare, gapMaxS float64
		bursty              bool
	}{
		// the engine's pace, one token per event: smooth
		{"token by token", events(64, 1, 0.004), 64, 1, 0, 0.004, false},
		// nginx's defaults: 17 tokens per read, every 17 ITLs
		{"proxy buffers", events(68, 17, 0.004), 4, 17, 1, 17*0.004 - 16*2e-6, true},
		// a compressor that holds the whole answer: one arrival
		{"all at once", events(64, 64, 0.004), 1, 64, 1, 0, true},
		// pairs now and then (scheduling noise) are not bursts
		{"pairs", events(64, 2, 0.004), 32, 2, 0, 2*0.004 - 2e-6, false},
	}
	for _, tt := range tests {
		s := tt.e.Stutter(0)
		if s == nil {
			t.Fatalf("%s: no stutter", tt.name)
		}
		if s.Arrivals != tt.arrivals || s.TokensPerArrivalMax != tt.maxPer || s.BurstShare != tt.burstShare ||
			math.Abs(s.GapMaxS-tt.gapMaxS) > 1e-9 || s.Bursty() != tt.bursty || s.Tokens != len(tt.e) {
			t.Errorf("%s: %+v; want %d arrivals, max %d, burst share %g, gap max %g, bursty %v",
				tt.name, *s, tt.arrivals, tt.maxPer, tt.burstShare, tt.gapMaxS, tt.bursty)
		}
		if m := float64(s.Tokens) / float64(s.Arrivals); math.Abs(s.TokensPerArrivalMean-m) > 1e-4 {
			t.Errorf("%s: mean %g, want %g", tt.name, s.TokensPerArrivalMean, m)
		}
	}
	if s := (Events{{0.1, 1}}).Stutter(0); s != nil {
		t.Errorf("one event: %+v, want none", s)
	}
	r := Record{Events: events(68, 17, 0.004)}
	if s := StutterOf(&r); s == nil || s.Arrivals != 4 {
		t.Errorf("StutterOf a record without a kept stutter: %+v", s)
	}
}
