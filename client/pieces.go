package client

import (
	"sort"
	"unicode"
	"unicode/utf8"
)

// textPieces estimates how many tokens a piece of generated text holds,
// without the model's tokenizer: the number of pieces a GPT-2-style BPE
// pre-tokenizer splits it into (a run of letters, of digits or of other
// symbols, each with at most one leading space; a run of whitespace not
// absorbed that way). Byte-level BPE tokenizers (GPT-2, Llama 3, Qwen 2.5)
// never merge across these pieces, so the estimate is exact when each piece
// is one token (common words, the bundled engine's output) and low when
// several tokens of one word arrive together. Readers scale it to the
// server's usage.completion_tokens when that is known. 0 for empty text;
// no allocations.
func textPieces(b []byte) int {
	const (
		none = iota
		space
		letter
		digit
		other
	)
	n, prev, spaces := 0, none, 0 // spaces: length of the whitespace run before i
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		c := other
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || unicode.IsSpace(r):
			c = space
		case unicode.IsLetter(r):
			c = letter
		case unicode.IsNumber(r):
			c = digit
		}
		switch {
		case c == space:
			spaces++
		case c != prev || spaces > 0:
			// A new piece; the whitespace before it is a piece of its own
			// unless it is one plain space, which the piece absorbs.
			n++
			if spaces > 1 || spaces == 1 && b[i-1] != ' ' {
				n++
			}
			spaces = 0
		}
		prev = c
		i += size
	}
	if spaces > 0 { // trailing whitespace
		n++
	}
	return n
}

// apportion spreads total tokens over events ([seconds, tokens] pairs,
// Events.pairs) in proportion to their current counts (text estimates),
// each event keeping at least one, so the counts sum to total (largest
// remainder). It does nothing when total is below the number of events:
// each event carried at least one token.
func apportion(events [][2]float64, total int) {
	n, sum := len(events), 0
	for _, e := range events {
		sum += int(e[1])
	}
	if n == 0 || total < n || sum == total {
		return
	}
	// Each event keeps 1; the rest goes by each event's estimated extra
	// tokens, or evenly when no event looked like more than one.
	extra, wtot := total-n, sum-n
	w := make([]int, n)
	for i, e := range events {
		w[i] = int(e[1]) - 1
		if sum == n {
			w[i] = 1
		}
	}
	if sum == n {
		wtot = n
	}
	order := make([]int, n)
	given := 0
	for i := range events {
		share := extra * w[i] / wtot
		events[i][1] = float64(1 + share)
		given += share
		order[i] = i
	}
	rem := func(i int) int { return extra * w[i] % wtot }
	sort.SliceStable(order, func(a, b int) bool { return rem(order[a]) > rem(order[b]) })
	for _, i := range order[:extra-given] {
		events[i][1]++
	}
}
