package compare

import (
	"bytes"
	"io"
	"strings"

	"github.com/servebench/servebench/report/webpage"
)

// FileHTML is the comparison's web page in a results directory that ran
// with --baseline.
const FileHTML = "compare.html"

// WriteHTML writes the report as one self-contained web page: the Markdown
// report rendered, its tables sortable, each verdict coloured (a regression
// red, worse within its limit yellow, better green).
func WriteHTML(w io.Writer, r *Report) error {
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		return err
	}
	return webpage.Write(w, md.Bytes(), webpage.Options{Title: "servebench compare: " + verdictLine(r), CellClass: verdictClass})
}

// verdictClass is the page's class for a verdict cell ("" for any other).
func verdictClass(cell string) string {
	switch {
	case strings.HasPrefix(cell, VerdictRegression):
		return "bad"
	case strings.HasPrefix(cell, VerdictWorseNoGate): // also VerdictWorse
		return "warn"
	case strings.HasPrefix(cell, VerdictBetter):
		return "good"
	}
	return ""
}
