package sim

import (
	"testing"

	"github.com/servebench/servebench/engine/tok"
)

// TestVocabIsTokens: every word the engine writes is one token of each
// model family's tokenizer, and each end-of-turn token one special token,
// so logprobs list real tokens of the model, one per output token.
func TestVocabIsTokens(t *testing.T) {
	for f, eos := range eosTokens {
		tk, err := tok.New(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range vocab {
			if ids := tk.Encode(w); len(ids) != 1 {
				t.Errorf("%v: %q is %d tokens %v, want 1", f, w, len(ids), ids)
			}
		}
		ids := tk.Encode(eos.text)
		if s, ok := tk.TokenString(ids[0]); len(ids) != 1 || !ok || s != eos.text {
			t.Errorf("%v: end-of-turn %q encodes to %v (%q), want one special token", f, eos.text, ids, s)
		}
	}
	if len(eosTokens) != 2 {
		t.Errorf("end-of-turn tokens for %d families, want Qwen2 and Llama3", len(eosTokens))
	}
}

// BenchmarkAppendTokenLogprobs is BenchmarkAppendToken with chat logprobs
// and 5 alternatives a token (target: 0 allocations).
func BenchmarkAppendTokenLogprobs(b *testing.B) {
	c := newChunker(true, "chatcmpl-0123456789abcdef0123456789abcdef", "Qwen/Qwen2.5-7B-Instruct-AWQ", 1796025729)
	lp := &logprober{chat: true, top: 5, eos: eosTokens[tok.Qwen2]}
	r := &request{key: 42, target: 1 << 30, natural: "length"}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = c.appendOpen(buf[:0], r, i, i+1)
		buf, _ = lp.appendLP(buf, r, i, i+1, 0)
		buf = c.appendTail(buf, r, "")
	}
	b.SetBytes(int64(len(buf)))
}
