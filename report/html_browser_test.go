package report_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/compare"
	"github.com/servebench/servebench/report/reporttest"
)

// chromiumPath finds a local Chromium for the browser tests: it fails the
// test under CI=true (.ci/run installs Debian's chromium) and skips it
// elsewhere.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("report: chromium not found on PATH: the report.html browser test needs it under CI (apt-get install -y chromium)")
	}
	t.Skip("report: chromium not found on PATH: skipping the report.html browser test (apt-get install -y chromium)")
	return ""
}

// artifactDir is where the screenshots go: $SERVEBENCH_ARTIFACTS when set
// (kept for CI to collect), else the test's temporary directory.
func artifactDir(t *testing.T) string {
	if d := os.Getenv("SERVEBENCH_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// browser is one headless Chromium, run from a local binary with no network
// needed, collecting the console errors and uncaught exceptions of the pages
// it loads.
type browser struct {
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

func newBrowser(t *testing.T) *browser {
	path := chromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // the tests may run as root, where Chromium's sandbox refuses to start
		chromedp.WindowSize(1200, 900),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	b := &browser{ctx: bctx}
	chromedp.ListenTarget(bctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeAssert {
				msg = fmt.Sprintf("console.%s: %d args", ev.Type, len(ev.Args))
				for _, a := range ev.Args {
					msg += " " + string(a.Value)
				}
			}
		case *runtime.EventExceptionThrown:
			msg = "exception: " + ev.ExceptionDetails.Error()
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.LevelError {
				msg = "log: " + ev.Entry.Text + " " + ev.Entry.URL
			}
		}
		if msg != "" {
			b.mu.Lock()
			b.errors = append(b.errors, msg)
			b.mu.Unlock()
		}
	})
	if err := chromedp.Run(bctx, log.Enable()); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return b
}

// load opens file from file://, waits for the page, and checks that every
// chart rendered and that nothing went to the console; it returns the number
// of images.
func (b *browser) load(t *testing.T, file string) int {
	t.Helper()
	b.mu.Lock()
	b.errors = nil
	b.mu.Unlock()
	var imgs [][]float64
	var resources int
	err := chromedp.Run(b.ctx,
		chromedp.Navigate("file://"+file),
		chromedp.WaitReady("body"),
		chromedp.Poll(`Array.from(document.images).every(i => i.complete)`, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Evaluate(`Array.from(document.images).map(i => [i.naturalWidth, i.naturalHeight])`, &imgs),
		// Anything fetched over the network (or from a file beside it) is a
		// resource entry; data: URIs are not.
		chromedp.Evaluate(`performance.getEntriesByType("resource").length`, &resources),
	)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for i, wh := range imgs {
		if wh[0] == 0 || wh[1] == 0 {
			t.Errorf("%s: image %d rendered %vx%v: expected a non-zero natural size", file, i, wh[0], wh[1])
		}
	}
	if resources != 0 {
		t.Errorf("%s: the page fetched %d resources: expected a self-contained page", file, resources)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.errors {
		t.Errorf("%s: %s", file, e)
	}
	return len(imgs)
}

// column reads column col of the first table.
func (b *browser) column(t *testing.T, col int) []string {
	t.Helper()
	var cells []string
	js := fmt.Sprintf(`Array.from(document.querySelector("table").tBodies[0].rows).map(r => r.cells[%d].textContent.trim())`, col)
	if err := chromedp.Run(b.ctx, chromedp.Evaluate(js, &cells)); err != nil {
		t.Fatal(err)
	}
	return cells
}

// seconds reads a table cell such as "0.026 s".
func seconds(t *testing.T, cell string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(strings.Fields(cell)[0], 64)
	if err != nil {
		t.Fatalf("cell %q: %v", cell, err)
	}
	return v
}

func (b *browser) screenshot(t *testing.T, dir, name string) {
	t.Helper()
	var png []byte
	if err := chromedp.Run(b.ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}

// TestHTMLInBrowser loads the report.html of a sweep (the results directory
// every benchmark command and `servebench report DIR` write through
// WriteAll) and of a comparison with a regression in headless Chromium from
// file://: every chart rendered, no console error, no fetch, the tables sort
// on a click, the regression's verdict coloured.
func TestHTMLInBrowser(t *testing.T) {
	b := newBrowser(t)
	shots := artifactDir(t)

	// A sweep, with its start-up: every kind of chart report.md embeds.
	dir := t.TempDir()
	res, recs := reporttest.Build("vllm", reporttest.SweepSpecs()...)
	if err := report.WriteAll(dir, res, recs); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, result.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	wantImgs := strings.Count(string(md), "![")
	if n := b.load(t, filepath.Join(dir, report.FileHTML)); n != wantImgs || n < 5 {
		t.Errorf("report.html shows %d images, report.md embeds %d: expected the same, at least 5", n, wantImgs)
	}
	b.screenshot(t, shots, "report.png")

	// Column 1, the client's first visible output, rises with the level:
	// a first click sorts it ascending, a second descending.
	before := b.column(t, 1)
	if len(before) < 3 {
		t.Fatalf("the first table has %d rows: too few for its sort to show", len(before))
	}
	for click, wantAsc := range []bool{true, false} {
		if err := chromedp.Run(b.ctx, chromedp.Click(`table thead th:nth-child(2)`, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		var sort string
		if err := chromedp.Run(b.ctx, chromedp.AttributeValue(`table thead th:nth-child(2)`, "aria-sort", &sort, nil, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		after := b.column(t, 1)
		for i := 1; i < len(after); i++ {
			prev, cur := seconds(t, after[i-1]), seconds(t, after[i])
			if (wantAsc && cur < prev) || (!wantAsc && cur > prev) {
				t.Errorf("click %d (aria-sort %q): column not sorted %s: %q", click+1, sort, map[bool]string{true: "ascending", false: "descending"}[wantAsc], after)
				break
			}
		}
		if !wantAsc && strings.Join(after, "|") == strings.Join(before, "|") {
			t.Errorf("descending sort left the rows as they were: %q", after)
		}
	}

	// The last run's table: its p50 column mixes client figures with the
	// engine's bucket estimates ("~11.5780"), which sort by their value.
	var last struct {
		Head  string
		Cells []string
	}
	if err := chromedp.Run(b.ctx, chromedp.Evaluate(`(() => {
		const ts = document.querySelectorAll("table"), t = ts[ts.length - 1], th = t.tHead.rows[0].cells[4];
		th.click();
		return {Head: th.textContent, Cells: Array.from(t.tBodies[0].rows).map(r => r.cells[4].textContent.trim())};
	})()`, &last)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(last.Head, "p50") || !slices.ContainsFunc(last.Cells, func(c string) bool { return strings.HasPrefix(c, "~") }) {
		t.Fatalf("the last table's column 4 is %q %q: expected a run's p50 with engine estimates", last.Head, last.Cells)
	}
	if len(last.Cells) < 2 {
		t.Fatalf("the last table has %d rows: too few for its sort to show", len(last.Cells))
	}
	for i := 1; i < len(last.Cells); i++ {
		if prev, cur := seconds(t, strings.TrimPrefix(last.Cells[i-1], "~")), seconds(t, strings.TrimPrefix(last.Cells[i], "~")); cur < prev {
			t.Errorf("p50 column not sorted ascending by value: %q", last.Cells)
			break
		}
	}

	// A comparison with a regression: tokens 40% slower.
	baseDir, newDir := t.TempDir(), t.TempDir()
	slow := reporttest.SeedSpecs()
	for i := range slow {
		slow[i].PerToken *= 1.4
	}
	for _, side := range []struct {
		dir   string
		specs []reporttest.RunSpec
	}{{baseDir, reporttest.SeedSpecs()}, {newDir, slow}} {
		r, rr := reporttest.Build("vllm", side.specs...)
		if err := reporttest.Save(side.dir, r, rr); err != nil {
			t.Fatal(err)
		}
	}
	base, err := compare.Load(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := compare.Load(newDir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := compare.Compare(base, cur, compare.Options{Alpha: compare.DefaultAlpha})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Regressions()) == 0 {
		t.Fatal("the slowed side shows no regression: the fixture no longer tests the colouring")
	}
	var page bytes.Buffer
	if err := compare.WriteHTML(&page, rep); err != nil {
		t.Fatal(err)
	}
	cmpFile := filepath.Join(t.TempDir(), "compare.html")
	if err := os.WriteFile(cmpFile, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b.load(t, cmpFile)
	var bad []string
	if err := chromedp.Run(b.ctx, chromedp.Evaluate(
		`Array.from(document.querySelectorAll("td")).filter(td => getComputedStyle(td).backgroundColor === "rgb(255, 235, 233)").map(td => td.textContent)`,
		&bad)); err != nil {
		t.Fatal(err)
	}
	if len(bad) != len(rep.Regressions()) {
		t.Errorf("%d cells coloured as a regression (%q), %d regressions: expected one each", len(bad), bad, len(rep.Regressions()))
	}
	for _, c := range bad {
		if !strings.HasPrefix(c, compare.VerdictRegression) {
			t.Errorf("cell %q coloured as a regression", c)
		}
	}
	b.screenshot(t, shots, "compare.png")
}
