package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/servebench/servebench/report/textwrap"
)

// writeText prints an aligned plain-text table: the header on two lines
// (name, then clock and statistic) so it fits a terminal, then the caption
// and footnotes.
func writeText(w io.Writer, t *TableModel) error {
	head1 := []string{""}
	head2 := []string{""}
	for _, c := range t.Columns {
		name, qual := splitHeader(c.Header)
		head1 = append(head1, name)
		head2 = append(head2, qual)
	}
	lines := [][]string{head1, head2}
	for _, r := range t.Rows {
		line := []string{r.Label}
		for i, c := range r.Cells {
			line = append(line, c.format(t.Columns[i]))
		}
		lines = append(lines, line)
	}
	widths := make([]int, len(head1))
	for _, l := range lines {
		for i, s := range l {
			widths[i] = max(widths[i], utf8.RuneCountInString(s))
		}
	}
	var b strings.Builder
	for _, l := range lines {
		for i, s := range l {
			if i == len(l)-1 {
				b.WriteString(s)
				break
			}
			b.WriteString(s)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(s)+2))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	b.WriteString(wrap(t.Caption, 100))
	for _, n := range t.noteLines() {
		b.WriteString(wrap(n, 100))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// splitHeader splits "E2E (client, median)" into "E2E" and "(client, median)".
func splitHeader(h string) (string, string) {
	if i := strings.Index(h, " ("); i >= 0 {
		return h[:i], h[i+1:]
	}
	return h, ""
}

// writeMarkdown prints a GitHub-flavoured Markdown table, the caption in
// italics and the footnotes, as report.md embeds it.
func writeMarkdown(w io.Writer, t *TableModel) error {
	var b strings.Builder
	b.WriteString("| |")
	for _, c := range t.Columns {
		b.WriteString(" " + mdEscape(c.Header) + " |")
	}
	b.WriteString("\n|---|")
	for range t.Columns {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString("| " + mdEscape(r.Label) + " |")
		for i, c := range r.Cells {
			b.WriteString(" " + c.format(t.Columns[i]) + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n_" + t.Caption + "_\n")
	if len(t.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range t.noteLines() {
			b.WriteString(mdEscape(n) + "  \n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdEscape keeps a cell's text from breaking the table or turning into a link.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "[", `\[`, "]", `\]`, "_", `\_`, "*", `\*`).Replace(s)
}

// writeCSV prints one header line of column keys (units in the names) and a
// line per run with full-precision values; an unavailable value is empty.
func writeCSV(w io.Writer, t *TableModel) error {
	cw := csv.NewWriter(w)
	head := []string{"run"}
	for _, c := range t.Columns {
		head = append(head, c.Key)
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, r := range t.Rows {
		line := []string{r.Run}
		for _, c := range r.Cells {
			s := ""
			if c.OK {
				s = strconv.FormatFloat(c.Value, 'g', -1, 64)
			}
			line = append(line, s)
		}
		if err := cw.Write(line); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// jsonTable is the --format json document.
type jsonTable struct {
	Columns []Column  `json:"columns"`
	Rows    []jsonRow `json:"rows"`
	Caption string    `json:"caption"`
	Notes   []string  `json:"notes"`
}

type jsonRow struct {
	Run   string `json:"run"`
	Label string `json:"label"`
	// Values by column key, in seconds; null when unavailable.
	Values map[string]*float64 `json:"values"`
	// Missing names, by column key, why a value is null.
	Missing map[string]string `json:"missing,omitempty"`
}

// writeJSON prints the table as one indented JSON document; map keys are
// sorted by encoding/json, so the output is deterministic.
func writeJSON(w io.Writer, t *TableModel) error {
	doc := jsonTable{Columns: t.Columns, Caption: t.Caption, Notes: t.Notes, Rows: []jsonRow{}}
	if doc.Notes == nil {
		doc.Notes = []string{}
	}
	for _, r := range t.Rows {
		jr := jsonRow{Run: r.Run, Label: r.Label, Values: map[string]*float64{}}
		for i, c := range r.Cells {
			key := t.Columns[i].Key
			if !c.OK {
				jr.Values[key] = nil
				if jr.Missing == nil {
					jr.Missing = map[string]string{}
				}
				jr.Missing[key] = t.Notes[c.Note]
				continue
			}
			v := c.Value
			jr.Values[key] = &v
		}
		doc.Rows = append(doc.Rows, jr)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encoding table: %w", err)
	}
	return nil
}

// wrap breaks s into lines of at most width runes at spaces, each ending
// in a newline.
func wrap(s string, width int) string {
	return strings.Join(textwrap.Runes(s, width), "\n") + "\n"
}
