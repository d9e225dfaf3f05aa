package tok

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func newTok(t testing.TB, f Family) *Tokenizer {
	t.Helper()
	tk, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// vocabCase is one of llama.cpp's tokenizer test strings with the ids the
// model's Hugging Face tokenizer gave for it (add_special_tokens=False).
type vocabCase struct {
	text string
	ids  []uint32
}

// readVocabCases reads llama.cpp's models/ggml-vocab-*.gguf.inp/.out pair
// (see testdata/SOURCES.md): texts separated by "__ggml_vocab_test__"
// lines, one line of ids per text.
func readVocabCases(t testing.TB, out string) []vocabCase {
	t.Helper()
	inp, err := os.ReadFile("testdata/ggml-vocab.inp")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := os.ReadFile("testdata/" + out)
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	texts = texts[:len(texts)-1] // after the last separator
	lines := strings.Split(strings.TrimSuffix(string(ids), "\n"), "\n")
	if len(texts) != len(lines) {
		t.Fatalf("testdata/%s: %d lines of ids for %d texts", out, len(lines), len(texts))
	}
	cases := make([]vocabCase, len(texts))
	for i, l := range lines {
		cases[i].text = texts[i]
		for _, f := range strings.Fields(l) {
			id, err := strconv.ParseUint(f, 10, 32)
			if err != nil {
				t.Fatalf("testdata/%s line %d: %v", out, i+1, err)
			}
			cases[i].ids = append(cases[i].ids, uint32(id))
		}
	}
	return cases
}

// TestLlama3ExactIDs checks the pre-tokenizer and the BPE merges against
// Llama-3's real tokenizer output: wherever Llama-3 used only tokens it
// shares with cl100k (ids below 100256), the ids must be identical.
func TestLlama3ExactIDs(t *testing.T) {
	tk := newTok(t, Llama3)
	exact := 0
	for _, c := range readVocabCases(t, "ggml-vocab-llama-bpe.out") {
		got := tk.Encode(c.text)
		if slices.ContainsFunc(c.ids, func(id uint32) bool { return id >= 100256 }) {
			t.Logf("%-40.40q Llama-3 %3d tokens, engine %3d (uses Llama-3's own tokens)", c.text, len(c.ids), len(got))
			continue
		}
		exact++
		if !slices.Equal(got, c.ids) {
			t.Errorf("%q: ids %v, Llama-3's %v", c.text, got, c.ids)
		}
	}
	if exact < 30 {
		t.Errorf("only %d cases compared exactly", exact)
	}
}

// TestCitedCounts prints the engine's count beside real tokenizer counts
// with their sources, and holds English prose and code within 5%.
// llama.cpp's tokenizer cases for ASCII text must match exactly.
func TestCitedCounts(t *testing.T) {
	for _, c := range citedCounts {
		tk := newTok(t, c.family)
		got := tk.Count(c.text)
		err := float64(got)/float64(c.want) - 1
		t.Logf("%-6s %-5s model %4d  cited %4d  %+5.1f%%  %s", c.family, c.kind, got, c.want, 100*err, c.source)
		limit := 0.05
		if c.kind == "mixed" {
			limit = 0.25 // CJK takes more tokens in cl100k than in Qwen2's vocabulary
		}
		if err > limit || err < -limit {
			t.Errorf("%s %s %.30q: %d tokens, cited %d (%s)", c.family, c.kind, c.text, got, c.want, c.source)
		}
	}
	for _, f := range []struct {
		family Family
		out    string
	}{{Llama3, "ggml-vocab-llama-bpe.out"}, {Qwen2, "ggml-vocab-qwen2.out"}} {
		tk := newTok(t, f.family)
		var all, allWant, ascii, asciiWant int
		for _, c := range readVocabCases(t, f.out) {
			n := tk.Count(c.text)
			all += n
			allWant += len(c.ids)
			if isASCII(c.text) {
				ascii += n
				asciiWant += len(c.ids)
				if n != len(c.ids) {
					t.Errorf("%s %q: %d tokens, real %d", f.family, c.text, n, len(c.ids))
				}
			}
		}
		t.Logf("%-6s llama.cpp %s: ASCII cases model %d cited %d (%+.1f%%); all cases (CJK, Cyrillic, emoji too) model %d cited %d (%+.1f%%)",
			f.family, f.out, ascii, asciiWant, 100*(float64(ascii)/float64(asciiWant)-1), all, allWant, 100*(float64(all)/float64(allWant)-1))
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// TestRoundTrip: Decode(Encode(s)) == s for valid UTF-8, and Count agrees.
func TestRoundTrip(t *testing.T) {
	for _, f := range []Family{Qwen2, Llama3} {
		tk := newTok(t, f)
		for _, s := range roundTripTexts(t) {
			ids := tk.Encode(s)
			got, err := tk.Decode(ids)
			if err != nil || got != s {
				t.Errorf("%s: Decode(Encode(%.40q)) = %.40q, %v", f, s, got, err)
			}
			if n := tk.Count(s); n != len(ids) {
				t.Errorf("%s: Count(%.40q) = %d, len(Encode) = %d", f, s, n, len(ids))
			}
		}
	}
}

func roundTripTexts(t testing.TB) []string {
	texts := []string{"", " ", "a", strings.Repeat("a", 3000), strings.Repeat(" ", 700) + "x",
		strings.Repeat("é", 400), "<|im_start|>user\nhi<|im_end|>", "<|not special|>", "tab\there\r\n\r\nend  "}
	for _, c := range readVocabCases(t, "ggml-vocab-qwen2.out") {
		texts = append(texts, c.text)
	}
	for _, c := range citedCounts {
		texts = append(texts, c.text)
	}
	return texts
}

// TestSpecialTokens: a special token written in the text is one id, the
// model's own; other families' specials are plain text.
func TestSpecialTokens(t *testing.T) {
	q := newTok(t, Qwen2)
	if got := q.Encode("<|im_start|>"); !slices.Equal(got, []uint32{151644}) {
		t.Errorf("qwen2 <|im_start|> = %v", got)
	}
	if got := q.Encode("<|eot_id|>"); len(got) < 3 {
		t.Errorf("qwen2 <|eot_id|> = %v, want plain text", got)
	}
	l := newTok(t, Llama3)
	// meta-llama/llama3 llama/test_tokenizer.py test_encode_message.
	want := []uint32{128006, 882, 128007, 271, 2028, 374, 264, 1296, 11914, 13, 128009}
	if got := l.Encode("<|start_header_id|>user<|end_header_id|>\n\nThis is a test sentence.<|eot_id|>"); !slices.Equal(got, want) {
		t.Errorf("llama3 message = %v, Meta's test %v", got, want)
	}
	if _, err := l.Decode([]uint32{1, 100300}); err == nil || !strings.Contains(err.Error(), "100300 at index 1") {
		t.Errorf("Decode of an unknown id: %v", err)
	}
}

// TestTokenString matches Hugging Face's byte-level token display.
func TestTokenString(t *testing.T) {
	tk := newTok(t, Llama3)
	for id, want := range map[uint32]string{22691: "ĠHello", 198: "Ċ", 256: "ĠĠ", 128009: "<|eot_id|>"} {
		if got, ok := tk.TokenString(id); !ok || got != want {
			t.Errorf("TokenString(%d) = %q, want %q", id, got, want)
		}
	}
}

// TestChatTemplate checks the renderings against the models' templates.
func TestChatTemplate(t *testing.T) {
	msgs := []Message{{"user", "Hi"}}
	q := newTok(t, Qwen2)
	want := "<|im_start|>system\n" + QwenDefaultSystem + "<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
	if got := q.ApplyChatTemplate(msgs, true); got != want {
		t.Errorf("qwen2 = %q", got)
	}
	sys := q.ApplyChatTemplate([]Message{{"system", "Be brief."}, {"user", "Hi"}}, false)
	if strings.Contains(sys, QwenDefaultSystem) || strings.HasSuffix(sys, "assistant\n") {
		t.Errorf("qwen2 with a system message = %q", sys)
	}
	l := newTok(t, Llama3)
	want = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n" +
		"<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
	if got := l.ApplyChatTemplate([]Message{{"user", " Hi\n"}}, true); got != want {
		t.Errorf("llama3 = %q", got)
	}
	// Template tokens: Qwen's 3 per message plus 3 for the generation
	// prompt, and its default system turn.
	n := q.ChatCount(msgs)
	if wantN := q.Count("<|im_start|>system\n"+QwenDefaultSystem+"<|im_end|>\n") + 3 + q.Count("Hi") + 2 + 3; n != wantN {
		t.Errorf("qwen2 ChatCount = %d, want %d", n, wantN)
	}
}

// TestConcurrent encodes from many goroutines at once (run with -race).
func TestConcurrent(t *testing.T) {
	tk := newTok(t, Qwen2)
	text := citedCounts[0].text
	want := tk.Encode(text)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if got := tk.Encode(text); !slices.Equal(got, want) {
					t.Error("concurrent Encode differs")
					return
				}
			}
		})
	}
	wg.Wait()
}

// FuzzEncode: for any text, Count agrees with Encode, every id decodes,
// and valid UTF-8 round-trips (go test ./engine/tok -fuzz Encode).
func FuzzEncode(f *testing.F) {
	for _, s := range roundTripTexts(f) {
		f.Add(s)
	}
	q, l := newTok(f, Qwen2), newTok(f, Llama3)
	f.Fuzz(func(t *testing.T, s string) {
		for _, tk := range []*Tokenizer{q, l} {
			ids := tk.Encode(s)
			if n := tk.Count(s); n != len(ids) {
				t.Fatalf("%s: Count %d, Encode %d ids", tk.Family(), n, len(ids))
			}
			got, err := tk.Decode(ids)
			if err != nil {
				t.Fatalf("%s: %v", tk.Family(), err)
			}
			if utf8.ValidString(s) && got != s {
				t.Fatalf("%s: Decode(Encode(%q)) = %q", tk.Family(), s, got)
			}
		}
	})
}

// TestWords: the first words are the commonest English ones, in rank order,
// all distinct lowercase words.
func TestWords(t *testing.T) {
	w, err := Words(1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 1000 {
		t.Fatalf("%d words, want 1000", len(w))
	}
	seen := map[string]bool{}
	for _, s := range w {
		if seen[s] || !isWord([]byte(" "+s)) {
			t.Errorf("word %q: duplicate or not lowercase letters", s)
		}
		seen[s] = true
	}
	for _, common := range []string{"the", "and", "of", "to", "in"} {
		if !seen[common] {
			t.Errorf("%q is not among the first 1000 words", common)
		}
	}
	t.Logf("first words: %v; last: %v", w[:10], w[990:])
}
