package tok

import (
	"unicode"
	"unicode/utf8"
)

// Pre-tokenization: text is cut into pieces before BPE, and no token spans
// two pieces. Both model families use tiktoken's cl100k pattern,
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// except that Qwen2's splits numbers into single digits (\p{N} instead of
// \p{N}{1,3}). nextPiece matches it by hand: Go's regexp has no lookahead,
// and a hand-written matcher is several times faster than a backtracking
// regex engine.

// Character classes of the pattern, for ASCII by table.
const (
	clOther   = iota // [^\s\p{L}\p{N}]
	clLetter         // \p{L}
	clNumber         // \p{N}
	clSpace          // \s other than \r and \n
	clNewline        // \r or \n
)

var asciiClass = func() (c [utf8.RuneSelf]uint8) {
	for i := range c {
		r := rune(i)
		switch {
		case r == '\r' || r == '\n':
			c[i] = clNewline
		case unicode.IsSpace(r):
			c[i] = clSpace
		case unicode.IsLetter(r):
			c[i] = clLetter
		case unicode.IsNumber(r):
			c[i] = clNumber
		}
	}
	return c
}()

// classAt returns the class of the character at s[i] and its width in bytes.
// An invalid UTF-8 byte is one character of class clOther.
func classAt(s string, i int) (uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	switch {
	case unicode.IsLetter(r):
		return clLetter, w
	case unicode.IsNumber(r):
		return clNumber, w
	case unicode.IsSpace(r):
		return clSpace, w
	}
	return clOther, w
}

// scan returns the end of the run of characters of class cl starting at i.
func scan(s string, i int, cl uint8) int {
	for i < len(s) {
		c, w := classAt(s, i)
		if c != cl {
			break
		}
		i += w
	}
	return i
}

// contraction returns the length of the contraction ('s, 't, 're, 've, 'm,
// 'll, 'd, any case) at the start of s, or 0.
func contraction(s string) int {
	if len(s) < 2 || s[0] != '\'' {
		return 0
	}
	switch s[1] | 0x20 { // ASCII lower case
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if len(s) > 2 && s[2]|0x20 == 'e' {
			return 3
		}
	case 'l':
		if len(s) > 2 && s[2]|0x20 == 'l' {
			return 3
		}
	}
	return 0
}

// nextPiece returns the end of the piece that starts at s[i] (i < len(s));
// maxDigits is how many number characters one piece may hold.
func nextPiece(s string, i, maxDigits int) int {
	if n := contraction(s[i:]); n > 0 {
		return i + n
	}
	c, w := classAt(s, i)
	switch c {
	case clLetter: // \p{L}+
		return scan(s, i+w, clLetter)
	case clNumber: // \p{N}{1,maxDigits}
		j := i + w
		for k := 1; k < maxDigits && j < len(s); k++ {
			c2, w2 := classAt(s, j)
			if c2 != clNumber {
				break
			}
			j += w2
		}
		return j
	}
	// [^\r\n\p{L}\p{N}]\p{L}+: one space or symbol before a word.
	if c != clNewline && i+w < len(s) {
		if c2, w2 := classAt(s, i+w); c2 == clLetter {
			return scan(s, i+w+w2, clLetter)
		}
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`: symbols, with one leading space.
	j := i
	if s[i] == ' ' && i+1 < len(s) {
		j = i + 1
	}
	if c2, _ := classAt(s, j); c2 == clOther {
		return scanNewlines(s, scanOther(s, j))
	}
	return spacePiece(s, i)
}

// scanOther returns the end of the run of clOther characters from i.
func scanOther(s string, i int) int { return scan(s, i, clOther) }

// scanNewlines returns the end of the run of \r and \n from i.
func scanNewlines(s string, i int) int {
	for i < len(s) && (s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}

// spacePiece matches `\s*[\r\n]+|\s+(?!\S)|\s+` at s[i], a space character.
func spacePiece(s string, i int) int {
	end, lastNL, last := i, -1, i
	for end < len(s) {
		c, w := classAt(s, end)
		if c != clSpace && c != clNewline {
			break
		}
		if c == clNewline {
			lastNL = end + w
		}
		last = end
		end += w
	}
	switch {
	case lastNL >= 0: // \s*[\r\n]+ ends after the run's last newline
		return lastNL
	case end == len(s) || last == i: // \s+(?!\S) at the end, or \s+ of one
		return end
	}
	return last // \s+(?!\S) leaves the last space to the word after it
}
