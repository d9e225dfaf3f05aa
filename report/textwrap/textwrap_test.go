package textwrap

import (
	"slices"
	"testing"
)

// TestRunes: lines fill greedily up to the width in runes (not bytes), a
// word longer than the width stands alone, blanks of any kind and number
// separate words, and no words is one empty line.
func TestRunes(t *testing.T) {
	for _, c := range []struct {
		s     string
		width int
		want  []string
	}{
		{"aa bb cc dd", 5, []string{"aa bb", "cc dd"}},
		{"aa bb cc dd", 4, []string{"aa", "bb", "cc", "dd"}},
		{"aa  bb\tcc\ndd", 8, []string{"aa bb cc", "dd"}},
		{"x abcdefgh y z", 4, []string{"x", "abcdefgh", "y z"}},
		{"é€ ü€ ab", 5, []string{"é€ ü€", "ab"}}, // 5 runes, 11 bytes
		{"   ", 10, []string{""}},
	} {
		if got := Runes(c.s, c.width); !slices.Equal(got, c.want) {
			t.Errorf("Runes(%q, %d) = %q, want %q", c.s, c.width, got, c.want)
		}
	}
}
