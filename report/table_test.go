package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/report/reporttest"
)

// TestTable renders the seed table in every format and checks the text and
// Markdown against golden files, CSV and JSON by parsing them.
func TestTable(t *testing.T) {
	res, _ := reporttest.Seed()
	for _, format := range []string{"text", "markdown"} {
		t.Run(format, func(t *testing.T) {
			var b bytes.Buffer
			if err := Table(&b, res, format); err != nil {
				t.Fatal(err)
			}
			// The seed's figures at the seed's precision.
			for _, want := range []string{"Streaming", "Non-streaming", "0.026 s", "0.0284 s", "0.0281 s", "0.0 s"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("%s table lacks %q:\n%s", format, want, b.String())
				}
			}
			checkGolden(t, "", b.Bytes())
		})
	}
	t.Run("csv", func(t *testing.T) {
		var b bytes.Buffer
		if err := Table(&b, res, "csv"); err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(&b).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 3 || strings.Join(rows[0], ",") != "run,first_visible_s,e2e_client_s,engine_ttft_s,e2e_engine_s,queue_wait_s" {
			t.Fatalf("csv rows = %q", rows)
		}
		if rows[1][0] != "streaming" || rows[1][3] != "0.0284" || rows[2][0] != "non-streaming" {
			t.Errorf("csv values = %q", rows)
		}
	})
	t.Run("json", func(t *testing.T) {
		var b bytes.Buffer
		if err := Table(&b, res, "json"); err != nil {
			t.Fatal(err)
		}
		var doc jsonTable
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Columns) != 5 || len(doc.Rows) != 2 {
			t.Fatalf("json: %d columns, %d rows", len(doc.Columns), len(doc.Rows))
		}
		if v := doc.Rows[0].Values[KeyEngineTTFT]; v == nil || *v != 0.0284 {
			t.Errorf("json engine TTFT = %v, want 0.0284", v)
		}
		if doc.Columns[0].Statistic != "median" || doc.Columns[2].Statistic != "mean" {
			t.Errorf("json statistics = %q, %q", doc.Columns[0].Statistic, doc.Columns[2].Statistic)
		}
	})
}

// TestTableNotExported is a TGI-like server without TTFT: "n/a" with a
// footnote naming why, an empty CSV cell and a JSON null.
func TestTableNotExported(t *testing.T) {
	specs := reporttest.SeedSpecs()
	for i := range specs {
		specs[i].NoTTFT = true
	}
	res, _ := reporttest.Build("tgi", specs...)
	for _, format := range []string{"text", "markdown"} {
		t.Run(format, func(t *testing.T) {
			var b bytes.Buffer
			if err := Table(&b, res, format); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "n/a [1]") || !strings.Contains(b.String(), "does not export engine TTFT") {
				t.Errorf("missing n/a footnote:\n%s", b.String())
			}
			checkGolden(t, "", b.Bytes())
		})
	}
	var b bytes.Buffer
	if err := Table(&b, res, "csv"); err != nil {
		t.Fatal(err)
	}
	rows, _ := csv.NewReader(&b).ReadAll()
	if rows[1][3] != "" || rows[1][2] == "" {
		t.Errorf("csv: want empty TTFT and a client E2E, got %q", rows[1])
	}
	b.Reset()
	if err := Table(&b, res, "json"); err != nil {
		t.Fatal(err)
	}
	var doc jsonTable
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if v, ok := doc.Rows[0].Values[KeyEngineTTFT]; !ok || v != nil {
		t.Errorf("json: engine TTFT should be present and null, got %v (present %v)", v, ok)
	}
	if !strings.Contains(doc.Rows[0].Missing[KeyEngineTTFT], "tgi") {
		t.Errorf("json: missing reason = %q", doc.Rows[0].Missing[KeyEngineTTFT])
	}
}

// TestTableEngineLeftOut: engine figures bench left out (a counter reset)
// are "n/a" with bench's reason, not "does not export".
func TestTableEngineLeftOut(t *testing.T) {
	res, _ := reporttest.Seed()
	run := &res.Runs[0]
	note := "engine counted 2 finished requests after waiting 5.0 s, the client saw 4 succeed: /metrics counters were reset during the run"
	run.Engine = result.EngineStats{Reconciliation: &result.Reconciliation{Sent: 4, OK: 4, EngineCount: 2, Note: note, EngineAbsent: true}}
	m := NewTableModel(res)
	if len(m.Notes) != 1 || m.Notes[0] != "engine figures left out: "+note {
		t.Errorf("notes = %q", m.Notes)
	}
}

// TestTableIncompleteRun: a run rebuilt after servebench was killed has no
// after-run scrape, so no engine delta: the note says so, not "does not
// export" (the server, vLLM, exports them).
func TestTableIncompleteRun(t *testing.T) {
	res, _ := reporttest.Seed()
	res.Incomplete = true
	run := &res.Runs[0]
	run.Incomplete = true
	run.Engine = result.EngineStats{}
	m := NewTableModel(res)
	if len(m.Notes) != 1 || strings.Contains(m.Notes[0], "does not export") || !strings.Contains(m.Notes[0], "stopped mid-run") {
		t.Errorf("notes = %q", m.Notes)
	}
}

// TestTableNoMetrics: no dialect at all (no /metrics) says so once for all
// three engine columns.
func TestTableNoMetrics(t *testing.T) {
	res, _ := reporttest.Build("none", reporttest.SeedSpecs()...)
	m := NewTableModel(res)
	if len(m.Notes) != 1 || !strings.Contains(m.Notes[0], "no engine /metrics") {
		t.Fatalf("notes = %q", m.Notes)
	}
	for _, r := range m.Rows {
		if !r.Cells[0].OK || r.Cells[2].OK || r.Cells[3].OK || r.Cells[4].OK {
			t.Errorf("row %s: cells = %+v", r.Run, r.Cells)
		}
	}
}

func TestTableBadFormat(t *testing.T) {
	res, _ := reporttest.Seed()
	err := Table(&bytes.Buffer{}, res, "xml")
	if err == nil || !strings.Contains(err.Error(), `"xml"`) || !strings.Contains(err.Error(), "markdown") {
		t.Fatalf("err = %v, want one naming the bad format and the valid ones", err)
	}
	for _, f := range Formats {
		if tableWriters[f] == nil {
			t.Errorf("format %q has no writer", f)
		}
	}
}

// TestCellPrecision: the seed's precision, except where it would hide a
// small value.
func TestCellPrecision(t *testing.T) {
	cases := []struct {
		v    float64
		d    int
		want string
	}{
		{0.026, 3, "0.026 s"},      // the seed's client figure
		{0.0284, 4, "0.0284 s"},    // the seed's engine TTFT
		{0, 1, "0.0 s"},            // the seed's queue wait
		{2.04, 1, "2.0 s"},         // a real queue wait
		{0.04, 1, "0.040 s"},       // would print as 0.0
		{0.000264, 3, "0.00026 s"}, // bundled engine at speedup 100
		{0.000284, 4, "0.00028 s"},
		{3.852, 3, "3.852 s"},
	}
	for _, c := range cases {
		got := Cell{Value: c.v, OK: true}.format(Column{Decimals: c.d, Unit: "s"})
		if got != c.want {
			t.Errorf("%g at %d decimals = %q, want %q", c.v, c.d, got, c.want)
		}
	}
}

// TestEngineQuantileBounds: an engine quantile the histogram cannot place
// prints as its bucket, never as an interpolated figure that contradicts
// the mean (prefill mean 0.0009 s beside a median "~0.15 s"; E2E
// "~3.75 / ~4.75 / ~4.975 s" when every request took 3.857 s); exact
// quantiles print bare, and the note says which are which.
func TestEngineQuantileBounds(t *testing.T) {
	five, low := 5.0, 0.3
	e2e := &result.Hist{Mean: 3.857, Count: 20, P50Est: 3.75, P90Est: 4.75, P99Est: 4.975, Bounds: map[string]result.QuantileBound{
		"p50": {Above: 2.5, AtMost: &five}, "p90": {Above: 2.5, AtMost: &five}, "p99": {Above: 2.5, AtMost: &five}}}
	prefill := &result.Hist{Mean: 0.0009, Count: 20, P50Est: 0.15, P90Est: 0.27, P99Est: 0.297, Bounds: map[string]result.QuantileBound{
		"p50": {AtMost: &low}, "p90": {AtMost: &low}, "p99": {AtMost: &low}}}
	tail := &result.Hist{Mean: 2, Count: 100, P50Est: 1.2, P90Est: 3, P99Est: 60, Bounds: map[string]result.QuantileBound{"p99": {Above: 60}}}
	exact := &result.Hist{Mean: 0.0048, Count: 20, P50Est: 0.0047, P90Est: 0.0051, P99Est: 0.0060, Exact: true}
	for _, c := range []struct {
		h    *result.Hist
		p    string
		want string
	}{
		{e2e, "p50", "2.5-5"}, {e2e, "p99", "2.5-5"}, {prefill, "p50", "<= 0.3"},
		{tail, "p50", "~1.2000"}, {tail, "p99", "> 60"}, {exact, "p50", "0.0047"},
	} {
		if got := EngineQuantile(c.h, c.p); got != c.want {
			t.Errorf("%s of mean %g: %q, want %q", c.p, c.h.Mean, got, c.want)
		}
	}
	res, _ := reporttest.Seed()
	res.Runs[0].Engine.E2ES, res.Runs[0].Engine.PrefillS = e2e, prefill
	var b bytes.Buffer
	if err := Markdown(&b, res, nil, nil); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, bad := range []string{"~3.7500", "~0.1500"} {
		if strings.Contains(md, bad) {
			t.Errorf("report.md prints the interpolation %s", bad)
		}
	}
	if !strings.Contains(md, "| 2.5-5 | 2.5-5 | 2.5-5 |") || !strings.Contains(md, "| <= 0.3 |") || !strings.Contains(md, "the bucket is given instead") {
		t.Errorf("report.md does not give the buckets:\n%s", md)
	}
}

// TestTableLoadColumns (issue 31, item 6): run's and sweep's table adds
// the client p99s and the throughput, from the run's own figures; the
// seed's table stays without them.
func TestTableLoadColumns(t *testing.T) {
	res, _ := reporttest.Build("vllm", reporttest.SweepSpecs()...)
	m := NewTableModelWith(res, TableOptions{Load: true})
	col := map[string]int{}
	for i, c := range m.Columns {
		col[c.Key] = i
	}
	for i, run := range res.Runs {
		cells := m.Rows[i].Cells
		for key, want := range map[string]float64{
			KeyFirstVisP99: run.Client.FirstVisibleS.P99, KeyE2EClientP99: run.Client.E2ES.P99,
			KeyRequestsPerS: run.Throughput.RequestsPerS, KeyOutputTokPS: run.Throughput.OutputTokensPerS,
		} {
			j, ok := col[key]
			if !ok {
				t.Fatalf("no column %s in %v", key, m.Columns)
			}
			if c := cells[j]; !c.OK || c.Value != want || want == 0 {
				t.Errorf("%s %s = %+v, want %g", run.Name, key, c, want)
			}
		}
	}
	var b bytes.Buffer
	if err := TableWith(&b, res, "text", TableOptions{Load: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(client, p99)", "req/s", "tok/s", "(nearest rank)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text table lacks %q:\n%s", want, b.String())
		}
	}
	// With a steady-state window, the load columns are the window's.
	run := &res.Runs[2]
	run.Steady = &result.Steady{StartS: 1, EndS: 9, Requests: 12, Completed: 10, Throughput: result.Throughput{RequestsPerS: 1.25, OutputTokensPerS: 320},
		E2E: &stats.Summary{P99: 4.5, N: 12}, FirstVisible: &stats.Summary{P99: 0.03, N: 12}}
	m = NewTableModelWith(res, TableOptions{Load: true})
	for key, want := range map[string]float64{KeyFirstVisP99: 0.03, KeyE2EClientP99: 4.5, KeyRequestsPerS: 1.25, KeyOutputTokPS: 320} {
		if c := m.Rows[2].Cells[col[key]]; !c.OK || c.Value != want {
			t.Errorf("%s with a steady window = %+v, want the window's %g", key, c, want)
		}
	}
	if n := len(NewTableModel(res).Columns); n != len(tableColumns) {
		t.Errorf("the seed's table has %d columns, want %d", n, len(tableColumns))
	}
}

// TestTableModelledClock (issue 31, item 4): results recorded under the
// modelled clock print the emulated hardware's figures and say so; the
// same results recorded in wall time print them as measured.
func TestTableModelledClock(t *testing.T) {
	res, _ := reporttest.Bundled(10) // the seed's run at --speedup 10: E2E ~0.386 s wall
	wall := NewTableModel(res)
	clock, _ := result.NewClock("", 10)
	clock.Annotate(res)
	mod := NewTableModel(res)
	for i := range wall.Rows {
		w, m := wall.Rows[i].Cells[1].Value, mod.Rows[i].Cells[1].Value
		if diff := m/w - 10; diff > 1e-9 || diff < -1e-9 || m < 3.8 {
			t.Errorf("%s E2E %g s modelled, %g s wall: want 10x, the seed's ~3.85 s", wall.Rows[i].Run, m, w)
		}
	}
	if !strings.Contains(mod.Caption, "Clock: modelled") || !strings.Contains(wall.Caption, "Clock: wall") {
		t.Errorf("captions do not name the clock:\n%s\n%s", mod.Caption, wall.Caption)
	}
	if seed, _ := reporttest.Seed(); strings.Contains(NewTableModel(seed).Caption, "Clock") {
		t.Error("a server that was not sped up names a clock")
	}
}
