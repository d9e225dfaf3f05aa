package report

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/reporttest"
)

// sampledDir saves two bounded runs of 1,500 measured requests each (ids,
// a few failures, a warm-up and a retried line per run, a failure as the
// very slowest) and returns the directory, its results and every record.
func sampledDir(t *testing.T) (string, *result.Results, []result.Record) {
	t.Helper()
	res, recs := reporttest.Build("vllm",
		reporttest.RunSpec{Name: "streaming", Stream: true, N: 1500, Tokens: 16, FirstVisible: 0.026, PerToken: 0.015, EngineTTFT: 0.028},
		reporttest.RunSpec{Name: "non-streaming", N: 1500, Tokens: 16, FirstVisible: 0.026, PerToken: 0.015, EngineTTFT: 0.028})
	for i := range recs {
		recs[i].RequestID = fmt.Sprintf("req-%s-%d", recs[i].Run, recs[i].Index)
		if i%300 == 7 {
			recs[i].Error, recs[i].Status = "timeout", 0
		}
	}
	recs[1600].E2ES = 99 // a failure, the slowest: in the section, not the charts
	recs[1600].Error = "timeout"
	for _, run := range []string{"streaming", "non-streaming"} {
		recs = append(recs, result.Record{Run: run, Warmup: true, E2ES: 50, RequestID: "w-" + run},
			result.Record{Run: run, Retried: true, E2ES: 60, Error: "http 503", RequestID: "r-" + run})
	}
	res.Runs[0].Windows = []result.Window{{Index: 1, EndS: res.Runs[0].DurationS, Requests: res.Runs[0].Requests}}
	dir := t.TempDir()
	if err := reporttest.Save(dir, res, recs); err != nil {
		t.Fatal(err)
	}
	return dir, res, recs
}

// sampleCap is small enough that sampledDir's file is sampled, large
// enough that the sample holds more than tokens.png's thin lines.
const sampleCap = 1 << 20

// TestChartRecordsSample: over the cap, ChartRecords keeps per run a
// uniform sample spread over the whole run, the same each time, and
// exactly what a full read gives for the slowest requests, the line counts
// and the request nearest each run's median E2E.
func TestChartRecordsSample(t *testing.T) {
	dir, res, all := sampledDir(t)
	recs, s, notes, err := ChartRecords(dir, res, sampleCap)
	if err != nil || s == nil {
		t.Fatalf("ChartRecords: sample %v, err %v", s, err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "uniform sample") {
		t.Errorf("notes %q: want one saying the charts are drawn from a sample", notes)
	}
	for _, run := range res.Runs {
		rs, full, got := s.Runs[run.Name], measured(run.Name, all), measured(run.Name, recs)
		if rs.N != len(full) || len(got) != rs.kept || len(got) <= maxThinLines || len(got) >= rs.N || len(rs.Thin) != maxThinLines ||
			rs.Counts != countRecords(run.Name, all) {
			t.Errorf("%s: N %d (want %d), %d sampled (want between %d and N), %d thin lines (want %d), counts %v (want %v)",
				run.Name, rs.N, len(full), len(got), maxThinLines, len(rs.Thin), maxThinLines, rs.Counts, countRecords(run.Name, all))
		}
		// Only the thin lines and the median keep the events they draw.
		if len(got[0].Events) != 0 || len(rs.Thin[0].Events) == 0 {
			t.Errorf("%s: a sampled record has %d events (want none kept), a thin line %d (want its own)", run.Name, len(got[0].Events), len(rs.Thin[0].Events))
		}
		// Spread over the run: each third of it is in the sample.
		var thirds [3]int
		for _, r := range got {
			thirds[min(2, 3*r.Index/run.Requests)]++
		}
		if thirds[0] == 0 || thirds[1] == 0 || thirds[2] == 0 {
			t.Errorf("%s: sampled records by third of the run %v: want each represented", run.Name, thirds)
		}
		med := run.Client.E2ES.Median
		for _, r := range full {
			if math.Abs(r.E2ES-med) < math.Abs(rs.Median.E2ES-med) {
				t.Fatalf("%s: median request E2E %g, but request %d's %g is nearer the run's median %g", run.Name, rs.Median.E2ES, r.Index, r.E2ES, med)
			}
		}
		if len(rs.Median.Events) == 0 {
			t.Errorf("%s: the median request lost its events, which the timeline draws", run.Name)
		}
	}
	want := Slowest(all, SlowestN)
	if len(s.Slowest) != len(want) || s.Slowest[0].E2ES != 99 {
		t.Fatalf("slowest %d, first %+v; want %d, the failure of 99 s first", len(s.Slowest), s.Slowest[0], len(want))
	}
	for i := range want {
		if s.Slowest[i].RequestID != want[i].RequestID || s.Slowest[i].E2ES != want[i].E2ES {
			t.Errorf("slowest %d: %s %g, a full read gives %s %g", i, s.Slowest[i].RequestID, s.Slowest[i].E2ES, want[i].RequestID, want[i].E2ES)
		}
	}
	again, s2, _, err := ChartRecords(dir, res, sampleCap)
	if err != nil || !reflect.DeepEqual(again, recs) || !reflect.DeepEqual(s2.Slowest, s.Slowest) {
		t.Errorf("a second read gives another sample (err %v)", err)
	}
}

// TestWriteSampled: a directory over the cap gets the per-request charts
// and the slowest requests, report.md names the sample under each chart
// drawn from it, and `servebench report DIR` twice writes the same bytes.
func TestWriteSampled(t *testing.T) {
	dir, _, all := sampledDir(t)
	var outs []map[string][]byte
	for range 2 {
		res, recs, s, _, err := loadDir(dir, sampleCap)
		if err != nil || s == nil {
			t.Fatalf("loadDir: sample %v, err %v", s, err)
		}
		if err := WriteSampled(dir, res, recs, s); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, readDir(t, dir))
	}
	for _, f := range []string{FileTimeline, FileTokens, FileCDF, result.ReportFile} {
		if len(outs[0][f]) == 0 || !bytes.Equal(outs[0][f], outs[1][f]) {
			t.Errorf("%s: %d bytes, the same the second time: %v", f, len(outs[0][f]), bytes.Equal(outs[0][f], outs[1][f]))
		}
	}
	md := string(outs[0][result.ReportFile])
	_, _, s, _, _ := loadDir(dir, sampleCap)
	n := func(run string) int { return s.Runs[run].kept }
	for _, c := range []struct {
		file       string
		nstr, nnon int
		what       string
	}{
		{FileTokens, maxThinLines, maxThinLines, "thin lines"},
		{FileCDF, n("streaming"), n("non-streaming"), "records"},
	} {
		note := fmt.Sprintf("](%s)\n\n_Drawn from %s: a uniform sample of %d of %d requests; %s: a uniform sample of %d of %d requests", c.file,
			RunLabel("streaming"), c.nstr, len(measured("streaming", all)), RunLabel("non-streaming"), c.nnon, len(measured("non-streaming", all)))
		if !strings.Contains(md, note) {
			t.Errorf("report.md does not name the %s' sample under %s: want %q", c.what, c.file, note)
		}
	}
	if !strings.Contains(md, "## Slowest requests") || !strings.Contains(md, "`req-non-streaming-100`") {
		t.Errorf("report.md lacks the slowest requests, the 99 s failure first")
	}
	c := countRecords("streaming", all)
	if want := fmt.Sprintf("Records in requests.jsonl: %d measured, %d warm-up, %d retried", c[0], c[1], c[2]); !strings.Contains(md, want) {
		t.Errorf("report.md lacks %q: the counts are the file's, not the sample's", want)
	}
}
