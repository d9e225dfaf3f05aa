package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/reporttest"
)

// TestChartsLeaveOutWarmupAndRetried: requests.jsonl also holds warm-up
// requests and attempts retried after a 429/503; the charts drawn from it
// show measured outcomes only. Extra records of both kinds, slow and long
// enough to move the median, every CDF and the tokens chart if counted,
// leave every record-based chart byte for byte as it was.
func TestChartsLeaveOutWarmupAndRetried(t *testing.T) {
	res, recs := reporttest.Seed()
	var extra []result.Record
	for i, r := range recs {
		if r.Run != res.Runs[0].Name || !r.Outcome() {
			continue
		}
		slow := r
		slow.Index = 1000 + i
		slow.E2ES, slow.FirstVisibleS, slow.FirstTokenS = 50*r.E2ES, 40*r.FirstVisibleS, 40*r.FirstTokenS
		slow.OutputTokens *= 3
		slow.Events = [][2]float64{{slow.FirstVisibleS, float64(slow.OutputTokens)}}
		warm, retried := slow, slow
		warm.Warmup = true
		retried.Retried, retried.Attempt = true, 1
		extra = append(extra, warm, retried)
	}
	if len(extra) == 0 {
		t.Fatal("seed has no records to copy")
	}
	mixed := append(append([]result.Record(nil), recs...), extra...)
	for _, run := range res.Runs {
		if got, want := len(measured(run.Name, mixed)), len(measured(run.Name, recs)); got != want {
			t.Errorf("%s: measured %d records, want %d", run.Name, got, want)
		}
	}
	for name, draw := range map[string]func(*result.Results, []result.Record) ([]byte, error){
		FileTimeline: TimelineChart, FileTokens: TokensChart, FileCDF: CDFChart,
	} {
		want, err := draw(res, recs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := draw(res, mixed)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s changed when warm-up and retried records were added", name)
		}
	}
	// report.md counts the lines by kind.
	var md strings.Builder
	if err := Markdown(&md, res, mixed, nil); err != nil {
		t.Fatal(err)
	}
	n := len(extra) / 2
	want := fmt.Sprintf("- Records in requests.jsonl: %d measured, %d warm-up, %d retried attempts", res.Runs[0].Requests, n, n)
	if !strings.Contains(md.String(), want) {
		t.Errorf("report.md lacks %q:\n%s", want, md.String())
	}
}

// TestErrorsText: report.md's run line counts errors in result.ErrorCounts'
// words, classes counted 0 left out.
func TestErrorsText(t *testing.T) {
	for _, c := range []struct {
		errs map[string]int
		want string
	}{
		{nil, ", no errors"},
		{map[string]int{"timeout": 0}, ", no errors"},
		{map[string]int{"timeout": 1, "http_status": 2, "connect": 0}, ", 3 errors (http_status: 2, timeout: 1)"},
	} {
		if got := errorsText(c.errs); got != c.want {
			t.Errorf("errorsText(%v) = %q, want %q", c.errs, got, c.want)
		}
	}
}
