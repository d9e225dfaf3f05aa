package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/report/reporttest"
)

// reasoningSeed is the seed's streaming run played by a reasoning model:
// of each request's 256 tokens the first 200 are thinking, so the first
// answer token comes about 3 s after the engine's 0.028 s TTFT.
func reasoningSeed() (*result.Results, []result.Record) {
	res, recs := reporttest.Seed()
	var fv, first, think, rtok, atok []float64
	for i := range recs {
		r := &recs[i]
		if r.Run != "streaming" || len(r.Events) < 256 {
			continue
		}
		r.FirstReasoningS, r.LastReasoningS, r.FirstVisibleS = r.Events[0][0], r.Events[199][0], r.Events[200][0]
		r.ReasoningTokens, r.AnswerTokens = 200, r.OutputTokens-200
		fv, first = append(fv, r.FirstVisibleS), append(first, r.FirstTokenS)
		th, _ := r.Thinking()
		think, rtok, atok = append(think, th), append(rtok, 200), append(atok, float64(r.AnswerTokens))
	}
	c := &res.Runs[0].Client
	c.FirstVisibleS, c.FirstTokenS, c.ThinkingS = stats.Summarize(fv), stats.Summarize(first), stats.Summarize(think)
	c.ReasoningTokens, c.AnswerTokens = stats.Summarize(rtok), stats.Summarize(atok)
	return res, recs
}

// TestReasoningReport: a run that reasoned gets the thinking columns, a
// diagnosis that names the thinking (not a proxy) for the late first
// visible output, and a tokens chart with its thinking in amber; a run
// that did not reason gets none of these.
func TestReasoningReport(t *testing.T) {
	res, recs := reasoningSeed()
	if res.Runs[0].Client.FirstVisibleS.Median < 2 {
		t.Fatalf("fixture: first answer at %v, want seconds after the first token", res.Runs[0].Client.FirstVisibleS.Median)
	}
	var b bytes.Buffer
	if err := Table(&b, res, "text"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Thinking", "First token, any", "Reasoning tokens", "200 tokens"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table without %q:\n%s", want, b.String())
		}
	}
	plain, plainRecs := reporttest.Seed()
	b.Reset()
	Table(&b, plain, "text")
	if strings.Contains(b.String(), "Thinking") {
		t.Errorf("a run that did not reason got thinking columns:\n%s", b.String())
	}

	b.Reset()
	if err := Markdown(&b, res, recs, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| thinking (s) | client |", "| reasoning tokens | client |", "The model thought before it answered"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report.md without %q", want)
		}
	}

	d := DiagnoseOn(res.Runs[0], BasisFor(res))
	if !d.Has(CauseThinking) || d.Has(CauseBetween) {
		t.Errorf("diagnosis %+v: want thinking named, nothing lost between engine and client", d.Findings)
	}
	if d := DiagnoseOn(plain.Runs[0], BasisFor(plain)); d.Has(CauseThinking) {
		t.Errorf("a run that did not reason: diagnosis names thinking: %+v", d.Findings)
	}

	png, err := TokensChart(res, recs)
	if err != nil {
		t.Fatal(err)
	}
	wantSeries(t, decodeChart(t, png), 2000, pal(KeyThinking))
	png, _ = TokensChart(plain, plainRecs)
	if n := decodeChart(t, png).near(Palette[KeyThinking]); n > 0 {
		t.Errorf("a run that did not reason: %d amber pixels in the tokens chart", n)
	}
}
