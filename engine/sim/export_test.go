package sim

import (
	"bytes"
	"sync"

	"github.com/servebench/servebench/engine/perf"
	"github.com/servebench/servebench/engine/tok"
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

// defaultTokenizer is the default model profile's tokenizer.
var defaultTokenizer = sync.OnceValue(func() *tok.Tokenizer {
	t, err := tok.For(perf.DefaultModel)
	if err != nil {
		panic(err) // the vocabulary is embedded: only a broken build fails
	}
	return t
})

// CountTokens is the prompt token count of a completions prompt on the
// default model profile (Qwen2.5: no BOS), for the tests' expectations.
func CountTokens(s string) int { return defaultTokenizer().Count(s) }

// ChatTokens is the prompt token count, on the default model profile, of a
// chat of user messages with these contents, template overhead included,
// for the tests' expectations.
func ChatTokens(contents ...string) int {
	msgs := make([]tok.Message, len(contents))
	for i, c := range contents {
		msgs[i] = tok.Message{Role: "user", Content: c}
	}
	return defaultTokenizer().ChatCount(msgs)
}
