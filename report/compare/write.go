package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/textwrap"
)

// Writer renders a report in one format.
type Writer func(w io.Writer, r *Report) error

// Formats are the valid --format values, in help order.
var Formats = []string{"text", "markdown", "json", "junit", "html"}

var writers = map[string]Writer{"text": WriteText, "markdown": WriteMarkdown, "json": WriteJSON, "junit": WriteJUnit, "html": WriteHTML}

// WriterFor returns the writer of format, or an error naming the valid ones.
func WriterFor(format string) (Writer, error) {
	if w, ok := writers[format]; ok {
		return w, nil
	}
	return nil, fmt.Errorf("%w: %w", ErrInput, result.OptionErrorf("Format", format, "want one of %s", strings.Join(Formats, ", ")))
}

// Write renders r to w in format.
func Write(w io.Writer, r *Report, format string) error {
	wr, err := WriterFor(format)
	if err != nil {
		return err
	}
	return wr(w, r)
}

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// errWriter keeps the first write error so the writers can stay linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}

// WriteText writes the report for a terminal or a CI log.
func WriteText(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	ew.printf("servebench compare: %s (base) vs %s (new)\n\n", r.Base.Path, r.New.Path)
	writeManifest(ew, manifestRows(r.Base, r.New))
	if r.Clock != "" {
		ew.printf("\n%s\n", r.Clock)
	}
	ew.printf("\nserver-side differences (what is compared; never refused):%s\n", noneIfEmpty(len(r.ServerDiffs)))
	for _, d := range r.ServerDiffs {
		ew.printf("  %s\n", d)
	}
	for _, s := range []SideInfo{r.Base, r.New} {
		for _, warn := range s.Warnings {
			ew.printf("warning (%s): %s\n", s.Path, warn)
		}
	}
	for _, run := range r.Runs {
		ew.printf("\nrun %q: %s\n", run.Name, describeWorkload(run.Workload, runStream(run)))
		ew.printf("  requests ok/measured: base %d/%d, new %d/%d\n", run.Base.OK, run.Base.Measured, run.New.OK, run.New.Measured)
		for _, d := range run.WorkloadDiffs {
			ew.printf("  workload differs (--force): %s\n", d)
		}
		if len(run.Unchecked) > 0 {
			ew.printf("  workload not checked (one side does not record it): %s\n", strings.Join(run.Unchecked, "; "))
		}
		cells, right := rowCells(r.Mode, run.Rows)
		writeTable(ew, "  ", cells, right)
		for _, fn := range footnotes(run) {
			ew.printf("  %s\n", fn)
		}
	}
	writeTrailer(ew, r, "")
	return ew.err
}

// rowCells are a run's rows as text cells, and which columns are
// right-aligned: per mode, the test behind the verdict and, where the
// verdict rests on runs or limits, the per-request p beside it (p/req:
// shown, not gating).
func rowCells(mode string, rows []Row) ([][]string, []bool) {
	switch mode {
	case ModeRuns, ModeHistory:
		ci := "95% CI"
		if mode == ModeHistory {
			ci = "95% PI"
		}
		cells := [][]string{{"quantity", "base", "new", "change", ci, "p", "n", "p/req", "limit", "verdict", ""}}
		for _, row := range rows {
			n := "-"
			if row.Runs != nil {
				n = fmt.Sprintf("%d+%d", row.Runs.NBase, row.Runs.NNew)
			}
			cells = append(cells, []string{row.Key(), fmtValue(row.Base, row.Unit), fmtValue(row.New, row.Unit),
				fmtChange(row.Change), fmtInterval(row.Runs), fmtP(row.P), n, fmtP(row.RequestP), orDash(row.Threshold), row.Verdict, rowNote(row)})
		}
		return cells, []bool{false, true, true, true, true, true, true, true, true, false, false}
	case ModeLimits:
		cells := [][]string{{"quantity", "base", "new", "change", "p/req", "limit", "verdict", ""}}
		for _, row := range rows {
			cells = append(cells, []string{row.Key(), fmtValue(row.Base, row.Unit), fmtValue(row.New, row.Unit),
				fmtChange(row.Change), fmtP(row.RequestP), orDash(row.Threshold), row.Verdict, rowNote(row)})
		}
		return cells, []bool{false, true, true, true, true, true, false, false}
	}
	cells := [][]string{{"quantity", "base", "new", "change", "p", "limit", "verdict", ""}}
	for _, row := range rows {
		cells = append(cells, []string{row.Key(), fmtValue(row.Base, row.Unit), fmtValue(row.New, row.Unit),
			fmtChange(row.Change), fmtP(row.P), orDash(row.Threshold), row.Verdict, rowNote(row)})
	}
	return cells, []bool{false, true, true, true, true, true, false, false}
}

// writeTrailer writes unmatched runs, the method and the verdict.
func writeTrailer(ew *errWriter, r *Report, bullet string) {
	ew.printf("\n")
	if len(r.OnlyInBase) > 0 {
		ew.printf("%sruns only in base (not compared): %s\n", bullet, strings.Join(r.OnlyInBase, ", "))
	}
	if len(r.OnlyInNew) > 0 {
		ew.printf("%sruns only in new (not compared): %s\n", bullet, strings.Join(r.OnlyInNew, ", "))
	}
	what := "a significant change past its limit"
	if r.Mode == ModeLimits {
		what = "a change past its limit"
	}
	ew.printf("%smethod: %s, alpha %g, at least %d successful requests per side; a regression is %s\n",
		bullet, r.Test, r.Alpha, r.MinSamples, what)
	ew.printf("%sverdict: %s\n", bullet, verdictLine(r))
	for _, reg := range r.Regressions() {
		ew.printf("  %s\n", reg)
	}
}

// Notes that every row of a kind carries are said once per run instead.
const (
	noteEngine     = "no significance test: engine figures are aggregates"
	noteThroughput = "p from per-request output tokens/s, whose median must pass the limit too"
)

// rowNote is what a row says beside its verdict in text and Markdown.
func rowNote(row Row) string {
	switch {
	case row.Note != "" && !commonNote(row):
		return "(" + row.Note + ")"
	case row.Confirmed != "" && row.Past:
		return "(" + row.Confirmed + ")"
	}
	return ""
}

func commonNote(row Row) bool {
	return strings.HasPrefix(row.Note, noteEngine) || row.Note == noteThroughput
}

// footnotes are the common notes that apply to a run's rows.
func footnotes(run RunReport) []string {
	var eng, thr bool
	for _, row := range run.Rows {
		eng = eng || strings.HasPrefix(row.Note, noteEngine)
		thr = thr || row.Note == noteThroughput
	}
	var out []string
	if eng {
		out = append(out, "engine.*: "+noteEngine+" (mean exact, percentiles bucket estimates); a regression needs the limit passed and the client figure that contains it significantly worse")
	}
	if thr {
		out = append(out, "throughput: the run's figure; "+noteThroughput)
	}
	return out
}

// writeTable writes cells in aligned columns, two spaces apart; right[i]
// right-aligns column i (numbers). Trailing spaces are trimmed.
func writeTable(ew *errWriter, indent string, cells [][]string, right []bool) {
	width := make([]int, len(right))
	for _, row := range cells {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, row := range cells {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		ew.printf("%s\n", strings.TrimRight(b.String(), " "))
	}
}

// headerWidth is the width the text header keeps to: a row whose values
// would push the side-by-side table past it (a command line) goes below
// the table, each side on lines of its own, wrapped at blanks.
const headerWidth = 100

// writeManifest writes the facts of both sides: side by side where both
// values fit half the width, below the table otherwise (once when both
// sides agree).
func writeManifest(ew *errWriter, rows [][3]string) {
	nameW := 0
	for _, m := range rows {
		nameW = max(nameW, utf8.RuneCountInString(m[0]))
	}
	colMax := (headerWidth - len("  ") - nameW - 2*len("  ")) / 2
	cells := [][]string{{"", "base", "new"}}
	var wide [][3]string
	for _, m := range rows {
		if utf8.RuneCountInString(m[1]) > colMax || utf8.RuneCountInString(m[2]) > colMax {
			wide = append(wide, m)
			continue
		}
		cells = append(cells, m[:])
	}
	writeTable(ew, "  ", cells, []bool{false, false, false})
	for _, m := range wide {
		if m[1] == m[2] {
			ew.printf("  %s (both):\n", m[0])
			writeWrapped(ew, "    ", "    ", m[1])
			continue
		}
		ew.printf("  %s:\n", m[0])
		writeWrapped(ew, "    base  ", "          ", m[1])
		writeWrapped(ew, "    new   ", "          ", m[2])
	}
}

// writeWrapped writes s after first, continuing after indent, breaking at
// blanks so lines keep within headerWidth (a longer word stays whole).
func writeWrapped(ew *errWriter, first, indent, s string) {
	width := headerWidth - max(utf8.RuneCountInString(first), utf8.RuneCountInString(indent))
	for i, line := range textwrap.Runes(s, width) {
		if i > 0 {
			first = indent
		}
		ew.printf("%s%s\n", first, line)
	}
}

func noneIfEmpty(n int) string {
	if n == 0 {
		return " none"
	}
	return ""
}

func runStream(run RunReport) bool { return run.Stream || run.Workload.Stream }

// WriteMarkdown writes the report as GitHub-flavoured Markdown (a CI job
// summary or a PR comment).
func WriteMarkdown(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	ew.printf("## servebench compare: %s\n\n", verdictLine(r))
	ew.printf("| | base | new |\n|---|---|---|\n")
	for _, m := range manifestRows(r.Base, r.New) {
		ew.printf("| %s | %s | %s |\n", m[0], mdCell(m[1]), mdCell(m[2]))
	}
	if r.Clock != "" {
		ew.printf("\n%s\n", r.Clock)
	}
	ew.printf("\n**Server-side differences** (what is compared; never refused):%s\n", noneIfEmpty(len(r.ServerDiffs)))
	for _, d := range r.ServerDiffs {
		ew.printf("- `%s`: %s → %s\n", d.Field, mdCell(d.Base), mdCell(d.New))
	}
	for _, s := range []SideInfo{r.Base, r.New} {
		for _, warn := range s.Warnings {
			ew.printf("- warning (%s): %s\n", mdCell(s.Path), mdCell(warn))
		}
	}
	for _, run := range r.Runs {
		ew.printf("\n### Run `%s`\n\n%s; requests ok/measured: base %d/%d, new %d/%d\n\n", run.Name,
			describeWorkload(run.Workload, runStream(run)), run.Base.OK, run.Base.Measured, run.New.OK, run.New.Measured)
		for _, d := range run.WorkloadDiffs {
			ew.printf("- workload differs (--force): %s\n", mdCell(d.String()))
		}
		if len(run.Unchecked) > 0 {
			ew.printf("- workload not checked (one side does not record it): %s\n\n", mdCell(strings.Join(run.Unchecked, "; ")))
		}
		ew.printf("| quantity | base | new | change | p | limit | verdict |\n|---|--:|--:|--:|--:|--:|---|\n")
		for _, row := range run.Rows {
			v := row.Verdict
			if row.Regression {
				v = "**" + v + "**"
			}
			if n := rowNote(row); n != "" {
				v += " " + mdCell(n)
			}
			chg, pv := fmtChange(row.Change), fmtP(row.P)
			if row.Runs != nil {
				chg += " " + fmtInterval(row.Runs)
				pv += " (" + row.Runs.Test + ")"
			}
			if row.RequestP != nil {
				pv += " (per request " + fmtP(row.RequestP) + ", not gating)"
			}
			ew.printf("| `%s` | %s | %s | %s | %s | %s | %s |\n", row.Key(), fmtValue(row.Base, row.Unit), fmtValue(row.New, row.Unit),
				chg, mdCell(pv), orDash(row.Threshold), v)
		}
		if fns := footnotes(run); len(fns) > 0 {
			ew.printf("\n")
			for _, fn := range fns {
				ew.printf("- %s\n", fn)
			}
		}
	}
	writeTrailer(ew, r, "- ")
	return ew.err
}

// mdCell keeps a value from breaking a Markdown table.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;").Replace(s)
}
