package tinymodel

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/gguf"
)

// TestNewReadsBack: the small model parses back as the Llama it claims to
// be, under the 2 MB, with the never-EOS construction in place.
func TestNewReadsBack(t *testing.T) {
	s, _ := SizeNamed("small")
	m, err := New(s, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d bytes", m.Describe(), len(m.GGUF))
	if len(m.GGUF) >= 2<<20 {
		t.Errorf("small model is %d bytes: want under 2 MB", len(m.GGUF))
	}
	f, err := gguf.Read(bytes.NewReader(m.GGUF), true)
	if err != nil {
		t.Fatal(err)
	}
	if f.Get("general.architecture") != "llama" || f.Get("llama.block_count") != uint32(s.Layers) {
		t.Errorf("architecture %v, blocks %v", f.Get("general.architecture"), f.Get("llama.block_count"))
	}
	toks, _ := f.Get("tokenizer.ggml.tokens").([]string)
	if len(toks) != m.Vocab || toks[EOSID] != "</s>" || toks[3] != "<0x00>" {
		t.Fatalf("%d tokens (want %d), eos %q", len(toks), m.Vocab, toks[EOSID])
	}
	if !strings.Contains(strings.Join(toks, " "), "▁the ") {
		t.Error("no ▁the in the vocabulary")
	}
	byName := map[string]gguf.Tensor{}
	for _, tt := range f.Tensors {
		byName[tt.Name] = tt
	}
	e := s.Embd
	out := floats(byName["output.weight"].Data)
	emb := floats(byName["token_embd.weight"].Data)
	if got := out[EOSID*e]; got != -Suppress {
		t.Errorf("output row of </s> on dimension 0: %v, want %v", got, -float32(Suppress))
	}
	for tk := 0; tk < m.Vocab; tk++ {
		if emb[tk*e] != 1 {
			t.Fatalf("token %d: embedding dimension 0 is %v, want the constant 1", tk, emb[tk*e])
		}
	}
	for l := 0; l < s.Layers; l++ {
		for _, name := range []string{"attn_output", "ffn_down"} {
			tt := byName[bname(l, name)]
			row := floats(tt.Data)[:tt.Dims[0]]
			for _, x := range row {
				if x != 0 {
					t.Fatalf("%s writes residual dimension 0", tt.Name)
				}
			}
		}
	}
}

func bname(l int, n string) string { return "blk." + string(rune('0'+l)) + "." + n + ".weight" }

func floats(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
	}
	return v
}

// TestNewDeterministic: the same flags give the same bytes; another seed
// other weights.
func TestNewDeterministic(t *testing.T) {
	s, _ := SizeNamed("small")
	a, _ := New(s, 7)
	b, _ := New(s, 7)
	c, _ := New(s, 8)
	if !bytes.Equal(a.GGUF, b.GGUF) {
		t.Error("seed 7 twice: different bytes")
	}
	if bytes.Equal(a.GGUF, c.GGUF) {
		t.Error("seeds 7 and 8: same bytes")
	}
}

func TestSizeNamed(t *testing.T) {
	if _, err := SizeNamed("huge"); err == nil || !strings.Contains(err.Error(), "small, medium") {
		t.Errorf("SizeNamed(huge) = %v", err)
	}
}
