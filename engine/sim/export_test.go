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
