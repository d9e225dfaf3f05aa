package report

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/servebench/servebench/bench/history"
	"github.com/servebench/servebench/report/webpage"
)

// Files history show writes.
const (
	HistoryPNG  = "history.png"
	HistoryHTML = "history.html"
)

// WriteHistoryText writes each series as a table of its runs, oldest
// first, each change point marked on the first run after it, then the
// change points with the run before and after, the step and its interval.
func WriteHistoryText(w io.Writer, ss []history.Series) error {
	for i, s := range ss {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s, run %q, workload %s, server %s: %d runs\n", s.Key, s.Run, s.WorkloadFP, s.ServerFP, len(s.Entries))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "id\tstarted (UTC)\tcommit\tbranch\tlabels\tvalue\tgate\t")
		for k, e := range s.Entries {
			mark := ""
			if isChange(s, k) {
				mark = "<- change point"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.6g\t%s\t%s\n", e.ID, e.StartedAt.UTC().Format(time.DateTime), dash(shortCommit(e.Commit())),
				dash(e.Build.Branch), dash(e.LabelText()), s.Values[k], dash(e.Gate), mark)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(s.Changes) == 0 {
			fmt.Fprintln(w, "no change point found (E-divisive means, permutation test)")
		}
		for _, c := range s.Changes {
			fmt.Fprintf(w, "change point %s\n", c)
		}
	}
	return nil
}

func isChange(s history.Series, k int) bool {
	for _, c := range s.Changes {
		if c.Index == k {
			return true
		}
	}
	return false
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// WriteHistory writes history.png and history.html for ss into dir.
func WriteHistory(dir, title string, ss []history.Series) error {
	png, err := HistoryChart(title, ss)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, HistoryPNG), png, 0o644); err != nil {
		return err
	}
	var page bytes.Buffer
	if err := webpage.Write(&page, []byte(HistoryMarkdown(title, ss)), webpage.Options{Title: title, RawHTML: true,
		CellClass: func(t string) string {
			if strings.Contains(t, "change point") {
				return "warn"
			}
			if t == history.GateFail {
				return "bad"
			}
			return ""
		}}); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, HistoryHTML), page.Bytes(), 0o644)
}

// HistoryMarkdown is history.html's content: per series an inline SVG
// chart whose points link to their runs' rows, the rows (each commit
// linked to the commit or CI run where the CI's URL says where), and the
// change points.
func HistoryMarkdown(title string, ss []history.Series) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", rawSafe(title))
	for _, s := range ss {
		fmt.Fprintf(&b, "## %s, run %s\n\nWorkload `%s`, server `%s`: %d runs. Each point links to its run below; a dashed red line is a change point, grey lines the segments' means.\n\n",
			s.Key, rawSafe(s.Run), s.WorkloadFP, s.ServerFP, len(s.Entries))
		b.WriteString(historySVG(s))
		b.WriteString("\n\n")
		if len(s.Changes) == 0 {
			b.WriteString("No change point found (E-divisive means, permutation test).\n\n")
		}
		for _, c := range s.Changes {
			fmt.Fprintf(&b, "- **Change point** %s\n", rawSafe(c.String()))
		}
		b.WriteString("\n| id | started (UTC) | commit | branch | CI run | labels | value | gate | |\n|---:|---|---|---|---|---|---:|---|---|\n")
		for k, e := range s.Entries {
			mark := ""
			if isChange(s, k) {
				mark = "change point"
			}
			fmt.Fprintf(&b, "| <a id=\"run-%d\"></a>%d | %s | %s | %s | %s | %s | %.6g | %s | %s |\n", e.ID, e.ID,
				e.StartedAt.UTC().Format(time.DateTime), commitLink(&e), rawSafe(dash(e.Build.Branch)), ciLink(&e),
				rawSafe(dash(e.LabelText())), s.Values[k], dash(e.Gate), mark)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// rawSafe is text for Markdown rendered with its raw HTML (the page's
// SVG): HTML-escaped, then Markdown-escaped for a table cell.
func rawSafe(s string) string { return mdEscape(html.EscapeString(s)) }

// commitLink links a commit to its page where the CI's URL tells the
// repository (GitHub Actions' .../actions/runs/N, GitLab's .../-/pipelines/N).
func commitLink(e *history.Entry) string {
	c := e.Commit()
	if c == "" {
		return "-"
	}
	u := e.Build.CIURL
	for _, cut := range []struct{ marker, commit string }{{"/actions/runs/", "/commit/"}, {"/-/pipelines/", "/-/commit/"}} {
		if i := strings.Index(u, cut.marker); i > 0 && strings.HasPrefix(u, "http") {
			return "[`" + shortCommit(c) + "`](" + u[:i] + cut.commit + c + ")"
		}
	}
	return "`" + shortCommit(c) + "`"
}

func ciLink(e *history.Entry) string {
	id := dash(e.Build.CIRunID)
	if u := e.Build.CIURL; strings.HasPrefix(u, "http") {
		return "[" + rawSafe(id) + "](" + u + ")"
	}
	return rawSafe(id)
}

// historySVG draws a series as an inline SVG: the points, each a link to
// its run's row with a tooltip naming it, the segments' means and the
// change points.
func historySVG(s history.Series) string {
	const w, h, pad = 1000.0, 300.0, 40.0
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range s.Values {
		lo, hi = min(lo, v), max(hi, v)
	}
	if !(hi > lo) {
		lo, hi = lo-1, hi+1
	}
	span := hi - lo
	lo, hi = lo-0.08*span, hi+0.08*span
	x := func(i int) float64 {
		if len(s.Values) == 1 {
			return w / 2
		}
		return pad + (w-2*pad)*float64(i)/float64(len(s.Values)-1)
	}
	y := func(v float64) float64 { return h - pad - (h-2*pad)*(v-lo)/(hi-lo) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %g %g" width="100%%" role="img" aria-label="%s">`, w, h, html.EscapeString(s.Key))
	fmt.Fprintf(&b, `<text x="%g" y="16" font-size="13">%s: %.4g .. %.4g</text>`, pad, html.EscapeString(s.Key), lo, hi)
	edges := []int{0}
	for _, c := range s.Changes {
		edges = append(edges, c.Index)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%g" y2="%g" stroke="#d62728" stroke-dasharray="6 4"/>`,
			(x(c.Index-1)+x(c.Index))/2, (x(c.Index-1)+x(c.Index))/2, pad, h-pad)
	}
	edges = append(edges, len(s.Values))
	for i := 0; i+1 < len(edges); i++ {
		var sum float64
		for _, v := range s.Values[edges[i]:edges[i+1]] {
			sum += v
		}
		m := y(sum / float64(edges[i+1]-edges[i]))
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#888" stroke-width="2"/>`, x(edges[i]), x(edges[i+1]-1), m, m)
	}
	var pts []string
	for i, v := range s.Values {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
	}
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="%s"/>`, strings.Join(pts, " "))
	for i, v := range s.Values {
		e := &s.Entries[i]
		col := "#1f77b4"
		if e.Gate == history.GateFail {
			col = "#d62728"
		}
		fmt.Fprintf(&b, `<a href="#run-%d"><circle cx="%.1f" cy="%.1f" r="5" fill="%s"><title>run %d, %s: %.6g</title></circle></a>`,
			e.ID, x(i), y(v), col, e.ID, html.EscapeString(e.Name()), v)
	}
	b.WriteString(`</svg>`)
	return b.String()
}
