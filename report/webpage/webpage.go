// Package webpage turns a Markdown report (report.md, compare's Markdown)
// into one self-contained HTML page: the same document, in the same order,
// with its PNG charts inlined as data: URIs, its tables sortable by column
// (a few lines of inline JavaScript) and no reference to anything outside the
// file, so it opens from file:// on a laptop or a CI artifact page.
//
// It sits at the end of the pipeline, beside report.md: the Markdown is the
// one description of a report's content, and this package only renders it.
package webpage

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"io"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
)

// Options say what the page adds to the Markdown.
type Options struct {
	// Title is the page's <title>.
	Title string
	// Images maps an image reference of the Markdown (a chart's file name)
	// to its PNG bytes, inlined as a data: URI. A reference not in the map
	// stays as it is.
	Images map[string][]byte
	// CellClass, when set, gives a table cell a CSS class by its text: the
	// page styles "bad", "good" and "warn" (compare's verdicts).
	CellClass func(text string) string
	// RawHTML renders HTML the Markdown holds as it is (an inline SVG, an
	// anchor), for Markdown servebench wrote itself; without it raw HTML
	// is left out, as for any Markdown.
	RawHTML bool
}

// md is GitHub-flavoured Markdown as report.md is written for: tables.
var md = goldmark.New(goldmark.WithExtensions(extension.Table))

// mdRaw is md that keeps raw HTML (Options.RawHTML).
var mdRaw = goldmark.New(goldmark.WithExtensions(extension.Table), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))

// Write renders src as a whole HTML page on w.
func Write(w io.Writer, src []byte, o Options) error {
	md := md
	if o.RawHTML {
		md = mdRaw
	}
	doc := md.Parser().Parse(text.NewReader(src))
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Image:
			if png, ok := o.Images[string(n.Destination)]; ok {
				n.Destination = []byte("data:image/png;base64," + base64.StdEncoding.EncodeToString(png))
			}
		case *east.TableCell:
			if o.CellClass != nil {
				if c := o.CellClass(string(plainText(n, src))); c != "" {
					n.SetAttributeString("class", []byte(c))
				}
			}
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		return err
	}
	var body bytes.Buffer
	if err := md.Renderer().Render(&body, src, doc); err != nil {
		return fmt.Errorf("webpage: %w", err)
	}
	_, err = fmt.Fprintf(w, pageHead, html.EscapeString(o.Title), style)
	if err == nil {
		_, err = w.Write(body.Bytes())
	}
	if err == nil {
		_, err = fmt.Fprintf(w, pageTail, script)
	}
	return err
}

// plainText is the text of n's inline content (code spans and emphasis
// included), as a reader sees it.
func plainText(n ast.Node, src []byte) []byte {
	var b bytes.Buffer
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); ok && entering {
			b.Write(t.Segment.Value(src))
			if t.SoftLineBreak() {
				b.WriteByte(' ')
			}
		}
		return ast.WalkContinue, nil
	})
	return b.Bytes()
}

const pageHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s</title>
<style>%s</style>
</head>
<body>
`

const pageTail = `<script>%s</script>
</body>
</html>
`

const style = `
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1200px; margin: 1.5em auto; padding: 0 1em; color: #1f2328; }
h1, h2, h3 { border-bottom: 1px solid #d0d7de; padding-bottom: .2em; }
code { font: 13px ui-monospace, "SFMono-Regular", Menlo, monospace; background: #f6f8fa; padding: .1em .3em; border-radius: 4px; word-break: break-all; }
pre code { display: block; padding: .8em; overflow-x: auto; word-break: normal; }
table { border-collapse: collapse; margin: .8em 0; font-size: 14px; display: block; max-width: 100%; overflow-x: auto; }
th, td { border: 1px solid #d0d7de; padding: .3em .6em; }
th { background: #f6f8fa; cursor: pointer; user-select: none; white-space: nowrap; }
th[aria-sort="ascending"]::after { content: " \25B2"; }
th[aria-sort="descending"]::after { content: " \25BC"; }
tr:nth-child(even) td { background: #fafbfc; }
td.bad { background: #ffebe9 !important; color: #82071e; font-weight: 600; }
td.warn { background: #fff8c5 !important; color: #4d2d00; }
td.good { background: #dafbe1 !important; color: #116329; }
img { max-width: 100%; height: auto; border: 1px solid #d0d7de; }
blockquote { margin: 0; padding: 0 1em; color: #59636e; border-left: .25em solid #d0d7de; }
`

// script makes every table sortable by a click on a column's header: numbers
// (after a ~ or < mark; with a unit of time, converted to seconds, or of
// anything else, ignored) sort by value, anything else as text; a second
// click reverses.
const script = `
(function () {
  var units = {ns: 1e-9, "\u00b5s": 1e-6, us: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600};
  function value(cell) {
    var t = cell.textContent.trim().replace(/,/g, "");
    var m = /^[~<>\u2248]?\s*([+-]?\d*\.?\d+(?:e[+-]?\d+)?)\s*([a-z\u00b5]*)/i.exec(t);
    if (!m) return null;
    var v = parseFloat(m[1]);
    return m[2] in units ? v * units[m[2]] : v;
  }
  function compare(a, b) {
    if (!a || !b) return !a - !b;
    var va = value(a), vb = value(b);
    if (va !== null && vb !== null) return va - vb;
    if (va !== null) return -1;
    if (vb !== null) return 1;
    return a.textContent.localeCompare(b.textContent);
  }
  document.querySelectorAll("table").forEach(function (table) {
    var body = table.tBodies[0];
    if (!body) return;
    table.querySelectorAll("thead th").forEach(function (th, col) {
      th.title = "sort by this column";
      th.addEventListener("click", function () {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r1, r2) {
          var c = compare(r1.cells[col], r2.cells[col]);
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();
`
