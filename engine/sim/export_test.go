package sim

import (
	"bytes"
	"sync"
)

// SyncBuffer is a goroutine-safe log sink for the tests, internal and
// external (sim_test).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// GuidedMaskCost is guidedMaskCost, for the external tests.
const GuidedMaskCost = guidedMaskCost

// LoRASwapTime is loraSwapTime, for the external tests.
var LoRASwapTime = loraSwapTime

// observeTiming has every engine of this process report its lateness to
// token and step (timingProbe) until stop is called; the pacing benchmarks
// call it around one engine's life, stopping after Run has returned.
func observeTiming(token, step func(lateNs int64)) (stop func()) {
	timing = &timingProbe{token: token, step: step}
	return func() { timing = nil }
}

// quickStart has o's start-up phases take (next to) no time: the largest
// --startup-speedup, which leaves --speedup as it is.
func quickStart(o *Options) { o.StartupSpeedup = MaxSpeedup }
