package result

import "math"

// Token calibration sources (TokenCalibration.Source).
const (
	CalibratedByTokenize = "tokenize" // POST /tokenize (vLLM, SGLang)
	CalibratedByUsage    = "usage"    // usage.prompt_tokens of one-token probe requests
)

// TokenCalibration is how a server counts the prompts servebench
// generates: every generated word costs PerWord tokens (1 on the byte-level
// BPE tokenizers of Llama 3, Qwen 2.5 and GPT-4, whose pre-tokenizer never
// merges across words), and each prompt form adds its chat template's (or
// BOS's) tokens around the text. Overheads are measured in the form the
// runs use (Endpoint).
type TokenCalibration struct {
	Source   string  `json:"source"`   // CalibratedByTokenize or CalibratedByUsage
	Endpoint string  `json:"endpoint"` // chat | completions: the form measured
	PerWord  float64 `json:"per_word"` // server tokens per generated word
	// Overhead is what the form adds to one text: a user message
	// (chat), or the prompt (completions: BOS where the model has one).
	Overhead int `json:"overhead"`
	// SystemOverhead is what a system message plus a user message add to
	// their two texts (chat with a shared prefix); 0 for completions.
	SystemOverhead int `json:"system_overhead,omitempty"`
}

// Exact reports whether every generated word is one token, so generated
// prompts hit the requested count exactly, not only on average.
func (c *TokenCalibration) Exact() bool { return c != nil && c.PerWord == 1 }

// Words is how many generated words make tokens tokens of text (at least
// 1 for tokens > 0); a nil calibration counts one word per token.
func (c *TokenCalibration) Words(tokens int) int {
	if tokens <= 0 {
		return 0
	}
	if c == nil || c.PerWord <= 0 || c.PerWord == 1 {
		return tokens
	}
	return max(1, int(math.Round(float64(tokens)/c.PerWord)))
}

// PromptTokenStats compare, over a run's successful measured requests
// whose prompt servebench generated, the prompt tokens requested with
// those the server counted (usage.prompt_tokens).
type PromptTokenStats struct {
	N             int     `json:"n"`
	RequestedMean float64 `json:"requested_mean"`
	CountedMean   float64 `json:"counted_mean"`
	Exact         int     `json:"exact"` // requests counted exactly as requested
}
