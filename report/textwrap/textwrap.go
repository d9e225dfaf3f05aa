// Package textwrap breaks text into lines at blanks, greedily: the one
// wrapping rule of report's table captions and chart labels and of
// report/compare's text header, which import it (neither may import the
// other's internals).
//
// It sits beside report, below it and report/compare: it knows only
// strings.
package textwrap

import (
	"strings"
	"unicode/utf8"
)

// Lines breaks s at blanks into lines: each word joins the line before it
// while that line still fits. A word that fits no line stands alone. s
// without words is one empty line.
func Lines(s string, fits func(line string) bool) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case fits(line + " " + word):
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	return append(lines, line)
}

// Runes is Lines with lines of at most width runes.
func Runes(s string, width int) []string {
	return Lines(s, func(line string) bool { return utf8.RuneCountInString(line) <= width })
}
