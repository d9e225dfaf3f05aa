package tok

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// megabyte is 1 MB of English prose and Go code: the cited texts and this
// package's own sources, repeated. BPE keeps no cache across calls, so the
// repetition does not flatter the figure.
func megabyte(b *testing.B) string {
	var parts []string
	for _, c := range citedCounts {
		parts = append(parts, c.text)
	}
	parts = append(parts, goSource, QwenDefaultSystem+"\n\n")
	unit := strings.Join(parts, "\n")
	s := strings.Repeat(unit, 1<<20/len(unit)+1)
	return s[:1<<20]
}

// goSource is a piece of Go code, typical of the code prompts servers see.
const goSource = `// nextPiece returns the end of the piece that starts at s[i].
func nextPiece(s string, i, maxDigits int) int {
	if n := contraction(s[i:]); n > 0 {
		return i + n
	}
	c, w := classAt(s, i)
	switch c {
	case clLetter: // \p{L}+
		return scan(s, i+w, clLetter)
	}
	for j := 0; j < len(s) && s[j] != '\n'; j++ {
		fmt.Printf("%d: %q\n", j, s[j])
	}
	return spacePiece(s, i)
}
`

// BenchmarkCount1MB is the speed target: tokenizing 1 MB of text
// under 100 ms. It reports ms per MB and tokens per MB; BenchmarkRuneScan1MB
// is the floor measured in the same run (decoding every rune of the text).
//
//	go test ./engine/tok -run '^$' -bench 1MB -benchtime 5x
func BenchmarkCount1MB(b *testing.B) {
	tk := newTok(b, Qwen2)
	text := megabyte(b)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	n := 0
	for range b.N {
		n = tk.Count(text)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/MB")
	b.ReportMetric(float64(n), "tokens/MB")
}

// BenchmarkEncode1MB is Count with the ids kept.
func BenchmarkEncode1MB(b *testing.B) {
	tk := newTok(b, Llama3)
	text := megabyte(b)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		tk.Encode(text)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/MB")
}

// BenchmarkRuneScan1MB is the floor: one pass decoding the text's runes.
func BenchmarkRuneScan1MB(b *testing.B) {
	text := megabyte(b)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		utf8.RuneCountInString(text)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/MB")
}
