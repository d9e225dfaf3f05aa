package webpage

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestWriteSelfContained: images named in Images are inlined, the tables are
// rendered with their cells classed, the Markdown's order is kept, and the
// page refers to nothing outside itself.
func TestWriteSelfContained(t *testing.T) {
	src := []byte("# Title\n\n- **Command:** `servebench run --rate 4`\n\n" +
		"| run | verdict |\n|---|---|\n| a | **REGRESSION** note |\n| b | ~ |\n\n" +
		"![chart](table.png)\n\n## Later\n\ntext <script>alert(1)</script>\n")
	png := []byte("\x89PNG\r\n\x1a\nfake")
	var out bytes.Buffer
	err := Write(&out, src, Options{Title: "t <1>", Images: map[string][]byte{"table.png": png},
		CellClass: func(s string) string {
			if strings.HasPrefix(s, "REGRESSION") {
				return "bad"
			}
			return ""
		}})
	if err != nil {
		t.Fatal(err)
	}
	page := out.String()
	for _, want := range []string{
		"<title>t &lt;1&gt;</title>",
		`<img src="data:image/png;base64,iVBORw0KGgpmYWtl" alt="chart">`,
		`<td class="bad"><strong>REGRESSION</strong> note</td>`,
		"<td>~</td>",
		"<code>servebench run --rate 4</code>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<script>alert") {
		t.Error("raw HTML of the Markdown was passed through")
	}
	if i, j := strings.Index(page, "<h1>Title"), strings.Index(page, "<h2>Later"); i < 0 || j < i {
		t.Errorf("headings out of order or missing: %d, %d", i, j)
	}
	// Nothing fetched: no src or href but data: URIs and fragments, no @import or url().
	ext := regexp.MustCompile(`(?i)(src|href)="(https?:|//|[a-z0-9_./-]+\.(png|css|js))|@import|url\(`)
	if m := ext.FindString(page); m != "" {
		t.Errorf("page refers outside itself: %q", m)
	}
}

// TestWriteKeepsUnknownImages: a chart that failed to render keeps its
// relative reference rather than vanishing.
func TestWriteKeepsUnknownImages(t *testing.T) {
	var out bytes.Buffer
	if err := Write(&out, []byte("![x](cdf.png)\n"), Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `src="cdf.png"`) {
		t.Errorf("unknown image lost: %s", out.String())
	}
}
