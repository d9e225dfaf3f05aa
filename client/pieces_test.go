package client

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestTextPieces(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{" the", 1},              // one word with its leading space: one BPE piece
		{" the model server", 3}, // three words
		{"Hello, world!", 4},     // Hello | , | ␣world | !
		{" 2048 tokens", 2},      // ␣2048 | ␣tokens
		{"line\n\nnext", 3},      // line | \n\n | next
		{"a  b", 3},              // a | ␣ (the extra space) | ␣b
		{"end ", 2},              // end | trailing space
		{" état", 1},             // non-ASCII letters are letters
		{"x+=1", 3},              // x | += | 1
		{"   ", 1},               // whitespace only
	} {
		if got := textPieces([]byte(tc.in)); got != tc.want {
			t.Errorf("textPieces(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { textPieces([]byte(" the model server, 42 times")) }); n != 0 {
		t.Errorf("textPieces allocates %v times per call", n)
	}
}

func TestApportion(t *testing.T) {
	ev := func(tokens ...int) [][2]float64 { // Events.pairs: [seconds, tokens]
		out := make([][2]float64, len(tokens))
		for i, k := range tokens {
			out[i][1] = float64(k)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		in    []int
		total int
		want  []int
	}{
		{"estimates already right", []int{1, 4, 4}, 9, []int{1, 4, 4}},
		// the text said 1, 2, 2 (two-word chunks), usage says 9: the extra
		// tokens go where the text had more
		{"scaled up by the estimates' extras", []int{1, 2, 2}, 9, []int{1, 4, 4}},
		// every chunk looked like one token, usage says twice that: evenly
		{"evenly when the text cannot tell", []int{1, 1, 1, 1}, 8, []int{2, 2, 2, 2}},
		{"largest remainder", []int{1, 1, 1}, 5, []int{2, 2, 1}},
		// usage below the events (cannot be: each carried a token): left alone
		{"too few", []int{1, 1, 1}, 2, []int{1, 1, 1}},
		// estimates above usage (a word split the pre-tokenizer did not see): down to 1 each
		{"scaled down", []int{3, 3}, 4, []int{2, 2}},
	} {
		e := ev(tc.in...)
		apportion(e, tc.total)
		sum := 0
		for i := range e {
			sum += int(e[i][1])
			if int(e[i][1]) != tc.want[i] {
				t.Errorf("%s: apportion(%v, %d) = %v, want %v", tc.name, tc.in, tc.total, e, tc.want)
				break
			}
		}
		if tc.total >= len(tc.in) && sum != tc.total {
			t.Errorf("%s: sum %d, want %d", tc.name, sum, tc.total)
		}
	}
}

// TestDoMultiTokenChunks: a server that sends several tokens per chunk
// (speculative decoding, a coalescing proxy) without per-chunk usage. The
// client counts each chunk's tokens from its text and, with the final
// usage, scales them to the server's total.
func TestDoMultiTokenChunks(t *testing.T) {
	words := func(n int) string { return strings.Repeat(" word", n) }
	chunk := func(s string) string { return fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":%q}}]}`, s) }
	for _, tc := range []struct {
		name   string
		events []string
		want   []int
		total  int
		from   string
	}{
		{"text only, no usage", []string{roleChunk, chunk(words(1)), chunk(words(3)), chunk(words(4)), finishChunk, "[DONE]"},
			[]int{1, 3, 4}, 8, TokensFromEvents},
		{"text, then the final usage agrees", []string{roleChunk, chunk(words(1)), chunk(words(3)), chunk(words(4)), finishChunk, usageChunk(7, 8), "[DONE]"},
			[]int{1, 3, 4}, 8, TokensFromUsage},
		// "tokenization" is one piece but, say, 3 tokens: usage says 10,
		// so the events are scaled to it
		{"usage corrects the text", []string{roleChunk, chunk(" tokenization"), chunk(words(4)), chunk(words(4)), finishChunk, usageChunk(7, 10), "[DONE]"},
			[]int{1, 5, 4}, 10, TokensFromUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) { writeEvents(w, r, tc.events...) }, nil)
			tr := c.Do(context.Background(), chatReq(true))
			if !tr.OK() || tr.OutputTokens != tc.total || tr.TokensFrom != tc.from || tr.Events.Len() != len(tc.want) {
				t.Fatalf("trace: %+v", tr)
			}
			for i, e := range tr.Events.All() {
				if e.Tokens != tc.want[i] {
					t.Errorf("event %d carried %d tokens, want %d (all: %+v)", i, e.Tokens, tc.want[i], tr.Events)
				}
			}
		})
	}
}
