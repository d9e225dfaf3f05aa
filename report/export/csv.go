package export

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/servebench/servebench/bench/result"
)

// CSVHeader is the header row of the csv format. Times are seconds from
// the request's start (servebench's units); an empty cell is a moment the
// request never reached, a figure that is undefined for it, or no session
// (session and turn are set for multi-turn workloads; the reasoning
// columns for a request whose model reasoned: first_visible_s is then its
// first answer token; usable_s for a structured workload's answer that
// became usable; arrivals, with run --arrivals, the response's reads as
// space-separated SECONDS:BYTES:TOKENS, up to client.MaxArrivals of them).
var CSVHeader = []string{"run", "index", "session", "turn", "status", "error", "prompt_tokens", "output_tokens",
	"ttfb_s", "first_token_s", "first_visible_s", "e2e_s", "tpot_s", "mean_itl_s", "request_id",
	"first_reasoning_s", "thinking_s", "reasoning_tokens", "answer_tokens", "answer_tpot_s",
	"usable_s", "arrivals"}

// CSV writes one RFC 4180 row per measured request (warm-up and retried
// attempts left out), runs in results.json order, requests by index.
func CSV(w io.Writer, res *result.Results, recs []result.Record) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	for _, run := range res.Runs {
		for _, r := range outcomes(recs, run.Name) {
			if err := cw.Write(csvRow(r)); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvRow(r *result.Record) []string {
	status := ""
	if r.Status != 0 {
		status = strconv.Itoa(r.Status)
	}
	tpot := ""
	if v, ok := r.TPOT(); ok {
		tpot = csvSeconds(v)
	}
	itl := "" // mean per-token ITL: a chunk of k tokens after a gap g is k tokens of g/k
	span, tokens := 0.0, 0
	r.TokenGaps(func(g float64, k int) { span, tokens = span+g, tokens+k })
	if tokens > 0 {
		itl = csvSeconds(span / float64(tokens))
	}
	turn := ""
	if r.Turn > 0 {
		turn = strconv.Itoa(r.Turn)
	}
	return append([]string{r.Run, strconv.Itoa(r.Index), r.Session, turn, status, r.Error,
		strconv.Itoa(r.PromptTokens), strconv.Itoa(r.OutputTokens),
		csvSeconds(r.TTFBS), csvSeconds(r.FirstTokenS), csvSeconds(r.FirstVisibleS), csvSeconds(r.E2ES), tpot, itl, r.RequestID},
		append(csvReasoning(r), csvSeconds(r.UsableS), arrivalsCell(r.Arrivals))...)
}

// arrivalsCell is a request's arrivals as SECONDS:BYTES:TOKENS, space
// separated ("" without any).
func arrivalsCell(as [][3]float64) string {
	var b []byte
	for i, a := range as {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendFloat(b, a[0], 'f', 6, 64)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(a[1]), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(a[2]), 10)
	}
	return string(b)
}

// csvReasoning is a request's reasoning cells, empty when it did not reason.
func csvReasoning(r *result.Record) []string {
	if !r.Reasoned() {
		return []string{"", "", "", "", ""}
	}
	thinking, answerTPOT := "", ""
	if v, ok := r.Thinking(); ok {
		thinking = csvSeconds(v)
	}
	if v, ok := r.AnswerTPOT(); ok {
		answerTPOT = csvSeconds(v)
	}
	return []string{csvSeconds(r.FirstReasoningS), thinking, strconv.Itoa(r.ReasoningTokens), strconv.Itoa(r.AnswerTokens), answerTPOT}
}

// csvSeconds formats a time in seconds with microsecond resolution; "" for 0
// (not reached).
func csvSeconds(v float64) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatFloat(v, 'f', 6, 64)
}

// Formats are the valid --to values, in help order.
var Formats = []string{"vllm-bench", "csv"}

// Write writes res and recs in format (one of Formats).
func Write(w io.Writer, format string, res *result.Results, recs []result.Record, opts Options) error {
	switch format {
	case "vllm-bench":
		return VLLM(w, res, recs, opts)
	case "csv":
		return CSV(w, res, recs)
	}
	return fmt.Errorf("%w: %w", result.ErrInput, result.OptionErrorf("To", format, "expected one of vllm-bench, csv"))
}
