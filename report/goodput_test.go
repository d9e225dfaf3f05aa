package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/report/reporttest"
)

// withGoodput judges every run of res against slo from its records, as
// bench does after a run, and returns res.
func withGoodput(t *testing.T, slo string, res *result.Results, recs []result.Record) *result.Results {
	t.Helper()
	s, err := result.ParseSLO(slo)
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Runs {
		var mine []result.Record
		for _, r := range recs {
			if r.Run == res.Runs[i].Name {
				mine = append(mine, r)
			}
		}
		res.Runs[i].Goodput = result.NewGoodput(s, mine, res.Runs[i].DurationS)
	}
	return res
}

// TestTableGoodput: an SLO adds two columns (goodput and attainment, with
// their units) and says what they mean in the caption; without one the
// table keeps the seed's five columns (the golden tests).
func TestTableGoodput(t *testing.T) {
	res, recs := reporttest.Seed()
	withGoodput(t, "e2e=1h", res, recs)
	res.Runs[1].Goodput = nil // a run without an SLO: n/a, with a note
	var b bytes.Buffer
	if err := Table(&b, res, "text"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Goodput", "SLO attainment", "100.0 %", "req/s", "SLO e2e=1h", "n/a [1]", "this run had no SLO"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	m := NewTableModel(res)
	if n := len(m.Columns); n != len(tableColumns)+2 {
		t.Errorf("%d columns, want %d", n, len(tableColumns)+2)
	}
	if n := len(NewTableModel(res).seconds().Columns); n != len(tableColumns) {
		t.Errorf("table.png would draw %d columns, want the %d in seconds", n, len(tableColumns))
	}
	var csv bytes.Buffer
	if err := Table(&csv, res, "csv"); err != nil || !strings.Contains(csv.String(), KeyAttainment) {
		t.Errorf("csv lacks %s (%v):\n%s", KeyAttainment, err, csv.String())
	}
}

// TestMarkdownGoodput: report.md's Goodput section names the SLO, each run's
// attained share and the per-threshold counts, and the search's answer.
func TestMarkdownGoodput(t *testing.T) {
	res, recs := reporttest.Build("vllm", reporttest.SweepSpecs()...)
	// A threshold between the sweep's fast and slow levels.
	withGoodput(t, "ttft=1ns,e2e=1h", res, recs)
	res.MaxRate = &result.MaxRate{Target: 90, SLO: "ttft=1ns,e2e=1h", Steps: 4}
	// An open-loop run: 11 sends at 2 req/s is a 5 s send phase.
	res.Runs[1].Rate = &result.RateStats{TargetPerS: 2, AchievedPerS: 2, SendLagS: stats.Summarize(make([]float64, 11))}
	var b bytes.Buffer
	if err := Markdown(&b, res, recs, nil); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"## Goodput", "SLO `ttft=1ns,e2e=1h`", "| 0.0% | 0.00 req/s over ", " s | - | ttft 0, e2e ",
		"s | 0.00 req/s over 5 s | ttft 0", "per second of the run's duration, from its start to the last response", "Highest rate with SLO ttft=1ns,e2e=1h attainment >= 90%: none, 4 runs"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	var plain bytes.Buffer
	res, recs = reporttest.Seed()
	if err := Markdown(&plain, res, recs, nil); err != nil || strings.Contains(plain.String(), "## Goodput") {
		t.Errorf("report.md without an SLO has a Goodput section (%v)", err)
	}
}

// TestSweepChartAttainment: with an SLO the sweep chart gets a third panel,
// attainment against load, drawn in its colour; the runs are drawn in load
// order even when a search visited them out of order.
func TestSweepChartAttainment(t *testing.T) {
	res, recs := reporttest.Build("vllm", reporttest.SweepSpecs()...)
	withGoodput(t, "e2e=1h", res, recs)
	res.MaxRate = &result.MaxRate{Target: 90, SLO: "e2e=1h", RatePerS: 8, Steps: 3}
	res.Runs[0], res.Runs[len(res.Runs)-1] = res.Runs[len(res.Runs)-1], res.Runs[0]
	b, err := SweepChart(res)
	if err != nil {
		t.Fatal(err)
	}
	wantSeries(t, decodeChart(t, b), 400, pal(KeyAttainment, KeyE2EClient, KeyTokensPerS))
	if order := byLoad([]float64{8, 1, 4, 2}); order[0] != 1 || order[1] != 3 || order[2] != 2 || order[3] != 0 {
		t.Errorf("byLoad = %v, want [1 3 2 0]", order)
	}
	plain, _ := reporttest.Build("vllm", reporttest.SweepSpecs()...)
	b, err = SweepChart(plain)
	if err != nil {
		t.Fatal(err)
	}
	if n := decodeChart(t, b).near(Palette[KeyAttainment]); n > 0 {
		t.Errorf("a sweep without an SLO drew %d attainment pixels", n)
	}
}

// TestMarkdownPromptTokens: report.md says how prompts were sized (the
// calibration) and, per run, requested against counted prompt tokens.
func TestMarkdownPromptTokens(t *testing.T) {
	res, recs := reporttest.Seed()
	res.Server.PromptTokens = &result.TokenCalibration{Source: result.CalibratedByTokenize, Endpoint: "chat", PerWord: 1, Overhead: 29, SystemOverhead: 13}
	res.Runs[0].PromptTokens = &result.PromptTokenStats{N: 20, RequestedMean: 512, CountedMean: 512, Exact: 20}
	var b bytes.Buffer
	if err := Markdown(&b, res, recs, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"server's count (tokenize): 1 tokens per generated word, 29 tokens of chat template (13 with a system prompt)",
		"requested 512.0 on average, the server counted 512.0; 20 of 20 exactly as requested"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}
