// Package tinymodel makes a small random-weight Llama in GGUF, for
// benchmarking real inference servers (Ollama, llama.cpp) on CPU without
// downloading a model: `servebench model tiny`. It sits on the server side
// of the pipeline, beside the bundled engine.
//
// The weights are random, so the output is word soup, but every operation a
// real Llama does is done for real: tokenizing, prefill, attention over the
// KV cache, decode, sampling. The speed is a real engine's.
//
// The model never emits end-of-sequence (nor any other control or byte
// token): residual dimension 0 holds the same constant in every token's
// embedding and no layer writes to it (row 0 of attn_output and ffn_down is
// zero), so after the final RMS norm it is positive at every position; the
// output rows of the tokens that must never come out are -Suppress on that
// dimension and zero elsewhere, far below any other token's logit. Every
// answer therefore has exactly the length asked for (num_predict), as
// ignore_eos gives on vLLM.
package tinymodel

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/servebench/servebench/engine/gguf"
	"github.com/servebench/servebench/engine/tok"
)

// Size is a model shape.
type Size struct {
	Name       string // small, medium
	File       string // file name stem: DIR/<File>.gguf, Ollama model name
	Layers     int
	Embd       int // n_embd
	Heads      int
	KVHeads    int
	FF         int // feed-forward width
	ContextLen int
}

// Sizes are the shapes `model tiny --size` knows: small for tests (under
// 2 MB), medium for figures (about 100 MB, tens of tokens/s on 2 cores).
var Sizes = []Size{
	{Name: "small", File: "tiny", Layers: 2, Embd: 64, Heads: 4, KVHeads: 2, FF: 128, ContextLen: 2048},
	{Name: "medium", File: "tiny-medium", Layers: 8, Embd: 512, Heads: 8, KVHeads: 4, FF: 1280, ContextLen: 2048},
}

// SizeNames lists the names of Sizes, for help texts and errors.
func SizeNames() []string {
	var n []string
	for _, s := range Sizes {
		n = append(n, s.Name)
	}
	return n
}

// SizeNamed returns the size called name.
func SizeNamed(name string) (Size, error) {
	for _, s := range Sizes {
		if s.Name == name {
			return s, nil
		}
	}
	return Size{}, fmt.Errorf("size %q: expected one of %s", name, strings.Join(SizeNames(), ", "))
}

// Words is how many English words the vocabulary holds (tok.Words).
const Words = 1000

// Suppress is how far the never-emitted tokens' output rows point against
// the constant residual dimension.
const Suppress = 100

// Special token ids, as in Llama's SentencePiece vocabulary.
const (
	UnkID = 0
	BOSID = 1
	EOSID = 2
)

// Token types of GGUF's tokenizer.ggml.token_type.
const (
	typeNormal  = 1
	typeUnknown = 2
	typeControl = 3
	typeByte    = 6
)

// Vocab is a SentencePiece-style vocabulary: <unk>, <s>, </s>, the 256 byte
// tokens <0x00>..<0xFF>, "▁" and the printable ASCII characters, then each
// word as "▁word" preceded by those of its prefixes ("▁w", "▁wo", ...) not
// already in, so SentencePiece's merges can build it from characters.
// Emit says which tokens may come out: ASCII characters and whole words.
type Vocab struct {
	Tokens []string
	Scores []float32
	Types  []int32
	Emit   []bool
}

// NewVocab builds the vocabulary.
func NewVocab() (*Vocab, error) {
	words, err := tok.Words(Words)
	if err != nil {
		return nil, err
	}
	v := &Vocab{}
	seen := map[string]bool{}
	add := func(s string, typ int32, emit bool) {
		if seen[s] {
			if emit { // a word that was another's prefix
				for i, t := range v.Tokens {
					if t == s {
						v.Emit[i] = true
					}
				}
			}
			return
		}
		seen[s] = true
		v.Tokens = append(v.Tokens, s)
		// SentencePiece scores are log-probabilities; earlier pieces are
		// more frequent here.
		v.Scores = append(v.Scores, -float32(len(v.Scores)))
		v.Types = append(v.Types, typ)
		v.Emit = append(v.Emit, emit)
	}
	add("<unk>", typeUnknown, false)
	add("<s>", typeControl, false)
	add("</s>", typeControl, false)
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), typeByte, false)
	}
	add("▁", typeNormal, true)
	for c := byte('!'); c <= '~'; c++ {
		add(string(c), typeNormal, true)
	}
	for _, w := range words {
		for i := 2; i <= len(w); i++ { // "▁" + at least one letter
			add("▁"+w[:i-1], typeNormal, false)
		}
		add("▁"+w, typeNormal, true)
	}
	return v, nil
}

// Model is a generated model: its GGUF bytes and what it is.
type Model struct {
	Size   Size
	Seed   uint64
	Vocab  int
	Params int64
	GGUF   []byte
}

// Describe says what the model is, in one line.
func (m *Model) Describe() string {
	return fmt.Sprintf("servebench tiny model (%s, seed %d): a random-weight Llama, %d layers, n_embd %d, %d tokens of vocabulary (bytes, ASCII, %d English words), %.1f M parameters, F32; "+
		"its output is word soup, its speed is real; it never emits end-of-sequence, so every answer has exactly the length asked for",
		m.Size.Name, m.Seed, m.Size.Layers, m.Size.Embd, m.Vocab, Words, float64(m.Params)/1e6)
}

// New generates the model of size s from seed: the same arguments give the
// same bytes.
func New(s Size, seed uint64) (*Model, error) {
	v, err := NewVocab()
	if err != nil {
		return nil, err
	}
	if s.Embd%s.Heads != 0 || s.Heads%s.KVHeads != 0 || (s.Embd/s.Heads)%2 != 0 {
		return nil, fmt.Errorf("size %s: n_embd %d, %d heads, %d KV heads: heads must divide n_embd into even head sizes, KV heads divide heads", s.Name, s.Embd, s.Heads, s.KVHeads)
	}
	g := &gen{rng: rand.New(rand.NewPCG(seed, 0x73657276656265)), s: s}
	tensors := g.tensors(v)
	m := &Model{Size: s, Seed: seed, Vocab: len(v.Tokens)}
	for i := range tensors {
		m.Params += int64(tensors[i].Elements())
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, m.metadata(v), tensors); err != nil {
		return nil, err
	}
	m.GGUF = buf.Bytes()
	return m, nil
}

func (m *Model) metadata(v *Vocab) []gguf.KV {
	s := m.Size
	return []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "general.name", Value: "servebench-" + s.File},
		{Key: "general.description", Value: m.Describe()},
		{Key: "general.file_type", Value: uint32(0)}, // all F32
		{Key: "llama.context_length", Value: uint32(s.ContextLen)},
		{Key: "llama.embedding_length", Value: uint32(s.Embd)},
		{Key: "llama.block_count", Value: uint32(s.Layers)},
		{Key: "llama.feed_forward_length", Value: uint32(s.FF)},
		{Key: "llama.attention.head_count", Value: uint32(s.Heads)},
		{Key: "llama.attention.head_count_kv", Value: uint32(s.KVHeads)},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: float32(1e-5)},
		{Key: "llama.rope.freq_base", Value: float32(10000)},
		{Key: "llama.rope.dimension_count", Value: uint32(s.Embd / s.Heads)},
		{Key: "llama.vocab_size", Value: uint32(len(v.Tokens))},
		{Key: "tokenizer.ggml.model", Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Value: v.Tokens},
		{Key: "tokenizer.ggml.scores", Value: v.Scores},
		{Key: "tokenizer.ggml.token_type", Value: v.Types},
		{Key: "tokenizer.ggml.unknown_token_id", Value: uint32(UnkID)},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(BOSID)},
		{Key: "tokenizer.ggml.eos_token_id", Value: uint32(EOSID)},
		{Key: "tokenizer.ggml.add_bos_token", Value: true},
		{Key: "tokenizer.ggml.add_eos_token", Value: false},
	}
}

// gen draws the weights.
type gen struct {
	rng *rand.Rand
	s   Size
}

// normal returns n values drawn from N(0, std²).
func (g *gen) normal(n int, std float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(g.rng.NormFloat64() * std)
	}
	return v
}

func ones(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

func tensor(name string, v []float32, dims ...int) gguf.Tensor {
	d := make([]uint64, len(dims))
	for i, x := range dims {
		d[i] = uint64(x)
	}
	return gguf.Tensor{Name: name, Dims: d, Type: gguf.F32, Data: gguf.F32Bytes(v)}
}

// tensors draws every tensor. Linear weights are N(0, 1/fan_in) so
// activations keep their scale; the layers' outputs (attn_output,
// ffn_down) are half that and never write residual dimension 0.
func (g *gen) tensors(v *Vocab) []gguf.Tensor {
	s := g.s
	e, kv, nv := s.Embd, s.Embd/s.Heads*s.KVHeads, len(v.Tokens)
	emb := g.normal(e*nv, 1)
	for t := 0; t < nv; t++ {
		emb[t*e] = 1 // the constant dimension
	}
	ts := []gguf.Tensor{tensor("token_embd.weight", emb, e, nv)}
	lin := func(in, out int, scale float64) []float32 { return g.normal(in*out, scale/math.Sqrt(float64(in))) }
	for l := 0; l < s.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		attnOut := lin(e, e, 0.5)
		clear(attnOut[:e]) // row 0: output dimension 0
		ffnDown := lin(s.FF, e, 0.5)
		clear(ffnDown[:s.FF])
		ts = append(ts,
			tensor(p+"attn_norm.weight", ones(e), e),
			tensor(p+"attn_q.weight", lin(e, e, 1), e, e),
			tensor(p+"attn_k.weight", lin(e, kv, 1), e, kv),
			tensor(p+"attn_v.weight", lin(e, kv, 1), e, kv),
			tensor(p+"attn_output.weight", attnOut, e, e),
			tensor(p+"ffn_norm.weight", ones(e), e),
			tensor(p+"ffn_gate.weight", lin(e, s.FF, 1), e, s.FF),
			tensor(p+"ffn_up.weight", lin(e, s.FF, 1), e, s.FF),
			tensor(p+"ffn_down.weight", ffnDown, s.FF, e),
		)
	}
	// Logits of the emitted tokens: N(0, 2²)-ish, varied enough that
	// sampling picks among many words.
	out := g.normal(e*nv, 2/math.Sqrt(float64(e)))
	for t := 0; t < nv; t++ {
		row := out[t*e : (t+1)*e]
		if v.Emit[t] {
			row[0] = 0
		} else {
			clear(row)
			row[0] = -Suppress
		}
	}
	return append(ts, tensor("output_norm.weight", ones(e), e), tensor("output.weight", out, e, nv))
}

// Modelfile is an Ollama Modelfile for the model written as ggufName
// beside it: a plain chat template, num_ctx at the model's context length
// so a longer prompt is truncated where servebench expects, and one thread:
// ggml's threads wait for each other at every operation, which on a busy
// machine (a CI runner, a shared box) made 2-thread runners of both sizes
// 10-100x slower per token than one thread.
func (m *Model) Modelfile(ggufName string, w io.Writer) error {
	_, err := fmt.Fprintf(w, `# %s
FROM ./%s
TEMPLATE """{{ range .Messages }}{{ .Role }}: {{ .Content }}
{{ end }}assistant:"""
PARAMETER num_ctx %d
PARAMETER num_thread 1
`, m.Describe(), ggufName, m.Size.ContextLen)
	return err
}

// Write writes DIR/<Size.File>.gguf and DIR/Modelfile (creating DIR), and
// returns the GGUF's path.
func (m *Model) Write(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	name := m.Size.File + ".gguf"
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, m.GGUF, 0o644); err != nil {
		return "", err
	}
	var mf bytes.Buffer
	if err := m.Modelfile(name, &mf); err != nil {
		return "", err
	}
	return path, os.WriteFile(filepath.Join(dir, "Modelfile"), mf.Bytes(), 0o644)
}
