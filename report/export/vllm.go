package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/servebench/servebench/bench/result"
)

// DefaultPercentiles are vLLM's --metric-percentiles default ("99").
var DefaultPercentiles = []float64{99}

// Options control an export.
type Options struct {
	// Percentiles are the p<N>_<metric>_ms keys written for each metric, as
	// vLLM's --metric-percentiles; nil means DefaultPercentiles.
	Percentiles []float64
}

// ExtraKey is the one key servebench adds to a vLLM result object: its
// own figures (engine, client, workload), which vLLM's readers ignore.
const ExtraKey = "servebench"

// vllmMetrics are the metrics whose mean/median/std/percentile keys are
// written, as `vllm bench serve --percentile-metrics ttft,tpot,itl,e2el`.
var vllmMetrics = []string{"ttft", "tpot", "itl", "e2el"}

// field is one key of an ordered JSON object: vLLM's readers do not care
// about order, people reading the file side by side with vLLM's do.
type field struct {
	k string
	v any
}

type object []field

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", f.k, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// vllmRequest is one request as vLLM's RequestFuncOutput holds it, in
// seconds: what the detailed arrays are made of.
type vllmRequest struct {
	ok        bool
	promptLen int
	outputLen int // 0 for a failed request, as vLLM's actual_output_lens
	ttft      float64
	itl       []float64
	latency   float64
	start     float64 // seconds from the run's start
	queue     float64
	err       string
}

// fromRecord maps a servebench record onto vLLM's definitions:
//   - ttft: vLLM stops its clock at the first chunk that has "choices",
//     which counts a chat role-only chunk; vLLM sends that chunk together
//     with the first token, so the client's first_token (first event
//     carrying a token) is that moment. servebench's first_visible, which
//     skips reasoning tokens, is not used.
//   - itl: the gaps between token-carrying events, one per event after the
//     first (an event with several tokens is one gap, as in vLLM).
//   - latency: request sent -> end of stream (vLLM: the last chunk with
//     choices, which leaves with the usage chunk and [DONE]).
//   - queue: vLLM's client_queue_time, the request's send time minus its
//     arrival time (vllm/benchmarks/serve.py, benchmark()'s
//     limited_request_func: arrival when get_request yields it, send after
//     the --max-concurrency semaphore). An open loop's request arrives at its
//     intended send time, so this is its send lag (a late send or a wait for
//     a slot). A closed loop is vLLM's --request-rate inf with
//     --max-concurrency N: every request arrives at the start and waits
//     for a slot, so this is its send time from the run's start.
func fromRecord(r *result.Record, runStart time.Time, openLoop bool) vllmRequest {
	q := vllmRequest{ok: r.Error == "", promptLen: r.PromptTokens, ttft: r.FirstTokenS,
		start: r.Start.Sub(runStart).Seconds(), queue: r.IntendedLagS, itl: []float64{}}
	if !openLoop {
		q.queue = max(q.start, 0)
	}
	for i := 1; i < len(r.Events); i++ {
		q.itl = append(q.itl, r.Events[i][0]-r.Events[i-1][0])
	}
	if q.ok {
		q.outputLen, q.latency = r.OutputTokens, r.E2ES
	} else {
		q.err = r.Error
		if r.ErrorText != "" {
			q.err += ": " + r.ErrorText
		}
	}
	return q
}

// outcomes are run's measured requests in the order they were sent.
func outcomes(recs []result.Record, run string) []*result.Record {
	var out []*result.Record
	for i := range recs {
		if recs[i].Run == run && recs[i].Outcome() {
			out = append(out, &recs[i])
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// VLLMRun is one run's result object as `vllm bench serve --save-result
// --save-detailed` writes it: one JSON object, no trailing newline.
type VLLMRun struct {
	Name string // the run's name in results.json
	JSON []byte
}

// VLLMRuns returns each run of res as its own vLLM result object, in the
// order of res.Runs: vLLM's files and readers hold one object per run.
func VLLMRuns(res *result.Results, recs []result.Record, opts Options) ([]VLLMRun, error) {
	if len(res.Runs) == 0 {
		return nil, fmt.Errorf("no runs to export (a start-up only result set)")
	}
	out := make([]VLLMRun, len(res.Runs))
	for i := range res.Runs {
		run := &res.Runs[i]
		b, err := json.Marshal(vllmObject(res, run, outcomes(recs, run.Name), opts))
		if err != nil {
			return nil, fmt.Errorf("run %q: %w", run.Name, err)
		}
		out[i] = VLLMRun{Name: run.Name, JSON: b}
	}
	return out, nil
}

// VLLM writes the runs of res one object per line: one run is exactly a
// vLLM result file, several are what `--append-result` leaves (each line
// one run's object).
func VLLM(w io.Writer, res *result.Results, recs []result.Record, opts Options) error {
	runs, err := VLLMRuns(res, recs, opts)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if _, err := w.Write(append(r.JSON, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// Appended is what to append to a file ending in tail (its last bytes, nil
// when empty) to add runs as vLLM's --append-result adds a result: a
// newline first unless the file is empty (or already ends in one), then the
// objects one per line. Unlike vLLM, the last line ends in a newline too, so
// the file is a text file (cat, wc -l and the next append all see whole lines).
func Appended(tail []byte, runs []VLLMRun) []byte {
	var b bytes.Buffer
	if len(tail) > 0 && tail[len(tail)-1] != '\n' {
		b.WriteByte('\n')
	}
	for _, r := range runs {
		b.Write(r.JSON)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func vllmObject(res *result.Results, run *result.Run, recs []*result.Record, opts Options) object {
	wl := run.Workload
	reqs := make([]vllmRequest, len(recs))
	for i, r := range recs {
		reqs[i] = fromRecord(r, run.StartedAt, wl.OpenLoop())
	}
	var ttfts, tpots, itls, e2els []float64
	var completed, totalIn, totalOut int
	for _, q := range reqs {
		if !q.ok {
			continue
		}
		completed++
		totalIn += q.promptLen
		totalOut += q.outputLen
		ttfts = append(ttfts, q.ttft)
		if q.outputLen > 1 {
			tpots = append(tpots, (q.latency-q.ttft)/float64(q.outputLen-1))
		}
		itls = append(itls, q.itl...)
		e2els = append(e2els, q.latency)
	}
	dur := run.DurationS
	per := func(n int) float64 {
		if dur <= 0 {
			return 0
		}
		return float64(n) / dur
	}
	backend := "openai-chat"
	if wl.Endpoint == "completions" {
		backend = "openai"
	}
	var rate, burst, maxConc any = "inf", 1.0, nil
	switch wl.Mode {
	case result.ModeRate:
		rate = wl.Rate
		switch wl.Arrival {
		case "gamma":
			burst = wl.Burstiness
		case "constant":
			burst = "inf" // vLLM: infinite burstiness is a constant gap; JSON has no Infinity
		}
	case result.ModeConcurrent:
		maxConc = wl.Concurrency
	default:
		maxConc = 1
	}
	peakTok, peakConc := peaks(reqs)
	o := object{
		{"date", run.StartedAt.Add(time.Duration(dur * float64(time.Second))).UTC().Format("20060102-150405")},
		{"endpoint_type", backend},
		{"backend", backend},
		{"label", nil},
		{"model_id", wl.Model},
		{"tokenizer_id", nil}, // servebench counts tokens from usage, with no tokenizer
		{"num_prompts", len(reqs)},
		{"request_rate", rate},
		{"burstiness", burst},
		{"max_concurrency", maxConc},
		{"duration", dur},
		{"completed", completed},
		{"failed", len(reqs) - completed},
		{"total_input_tokens", totalIn},
		{"total_output_tokens", totalOut},
		{"request_throughput", per(completed)},
		{"request_goodput", goodput(run)}, // vLLM: null without --goodput
		{"output_throughput", per(totalOut)},
		{"total_token_throughput", per(totalIn + totalOut)},
		{"input_lens", column(reqs, func(q vllmRequest) any { return q.promptLen })},
		{"output_lens", column(reqs, func(q vllmRequest) any { return q.outputLen })},
		{"ttfts", column(reqs, func(q vllmRequest) any { return q.ttft })},
		{"itls", column(reqs, func(q vllmRequest) any { return q.itl })},
		{"latencies", column(reqs, func(q vllmRequest) any { return q.latency })},
		{"start_times", column(reqs, func(q vllmRequest) any { return q.start })},
		{"queue_times", column(reqs, func(q vllmRequest) any { return q.queue })},
		{"generated_texts", column(reqs, func(vllmRequest) any { return "" })}, // not kept by servebench
		{"errors", column(reqs, func(q vllmRequest) any { return q.err })},
		{"max_output_tokens_per_s", peakTok},
		{"max_concurrent_requests", peakConc},
		{"rtfx", 0.0},
	}
	ps := opts.Percentiles
	if ps == nil {
		ps = DefaultPercentiles
	}
	for _, m := range vllmMetrics {
		xs := map[string][]float64{"ttft": ttfts, "tpot": tpots, "itl": itls, "e2el": e2els}[m]
		o = append(o, metricKeys(m, xs, ps)...)
	}
	return append(o, field{ExtraKey, extra(res, run)})
}

// goodput is the run's SLO-attaining requests per second (servebench's
// --slo, on its client figures), or nil as vLLM writes without --goodput.
func goodput(run *result.Run) any {
	if run.Goodput == nil {
		return nil
	}
	return run.Goodput.RatePerS
}

func column(reqs []vllmRequest, f func(vllmRequest) any) []any {
	out := make([]any, len(reqs))
	for i, q := range reqs {
		out[i] = f(q)
	}
	return out
}

// metricKeys are vLLM's mean/median/std and percentile keys of one metric,
// in milliseconds, with numpy's definitions: population std, linear
// interpolation between ranks, 0 for no samples (np.mean(xs or 0)).
func metricKeys(m string, xs []float64, ps []float64) object {
	s := slices.Clone(xs)
	slices.Sort(s)
	mean, std := meanStd(s)
	o := object{
		{"mean_" + m + "_ms", mean * 1000},
		{"median_" + m + "_ms", Percentile(s, 50) * 1000},
		{"std_" + m + "_ms", std * 1000},
	}
	for _, p := range ps {
		o = append(o, field{PercentileKey(p, m), Percentile(s, p) * 1000})
	}
	return o
}

// PercentileKey is vLLM's key for percentile p of metric m: p99_ttft_ms,
// p99.9_itl_ms (Python's str of the float, without ".0").
func PercentileKey(p float64, m string) string {
	return "p" + strconv.FormatFloat(p, 'f', -1, 64) + "_" + m + "_ms"
}

func meanStd(xs []float64) (mean, std float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(xs)))
}

// Percentile is numpy's default percentile (linear interpolation between
// the closest ranks) of sorted; 0 when sorted is empty, as vLLM's
// np.percentile(xs or 0, p).
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	pos := p / 100 * float64(n-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, n-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(pos-float64(lo))
}

// peaks are vLLM's max_output_tokens_per_s (the most token chunks arriving
// in one second, counted from the first request's start) and
// max_concurrent_requests (the most requests in flight at once, over
// half-open [start, start+latency)), both over successful requests.
func peaks(reqs []vllmRequest) (float64, int) {
	type ev struct {
		t float64
		d int
	}
	var evs []ev
	minStart, maxEnd := math.Inf(1), math.Inf(-1)
	for _, q := range reqs {
		if q.ok {
			minStart, maxEnd = min(minStart, q.start), max(maxEnd, q.start+q.latency)
			evs = append(evs, ev{q.start, 1}, ev{q.start + q.latency, -1})
		}
	}
	if len(evs) == 0 {
		return 0, 0
	}
	buckets := make([]float64, int(math.Ceil(maxEnd-minStart))+1)
	for _, q := range reqs {
		if !q.ok {
			continue
		}
		t := q.start + q.ttft
		for i := 0; ; i++ {
			if b := int(t - minStart); b >= 0 && b < len(buckets) {
				buckets[b]++
			}
			if i == len(q.itl) {
				break
			}
			t += q.itl[i]
		}
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].t != evs[j].t {
			return evs[i].t < evs[j].t
		}
		return evs[i].d < evs[j].d
	})
	cur, peak := 0, 0
	for _, e := range evs {
		cur += e.d
		peak = max(peak, cur)
	}
	return slices.Max(buckets), peak
}

// Extra is the value of ExtraKey: servebench's own figures for the run.
type Extra struct {
	Schema      string             `json:"schema"`
	Run         string             `json:"run"`
	Stream      bool               `json:"stream"`
	Workload    result.Workload    `json:"workload"`
	Server      result.Server      `json:"server"`
	Requests    int                `json:"requests"`
	OK          int                `json:"ok"`
	Errors      map[string]int     `json:"errors"`
	Throughput  result.Throughput  `json:"throughput"`
	Client      result.ClientStats `json:"client"`
	Engine      result.EngineStats `json:"engine"`
	Goodput     *result.Goodput    `json:"goodput,omitempty"`
	Definitions string             `json:"definitions"`
}

// definitions says how the vLLM keys were derived from servebench's trace.
const definitions = "vLLM keys from servebench's per-request trace: ttft = client.first_token " +
	"(vLLM's first chunk with choices; the role-only chunk arrives with the first token), " +
	"itl = gaps between token-carrying events, latency = client.e2e, request_goodput = servebench's --slo goodput (its client definitions), " +
	"queue_times = send time minus arrival as vLLM's client_queue_time (open loop: the send lag; closed loop, vLLM's --request-rate inf: " +
	"the wait for a slot from the run's start); times in vLLM's units (s in arrays, ms in *_ms keys). " +
	"The servebench key holds servebench's own figures in seconds: client medians over successful requests, " +
	"engine means from /metrics deltas."

// reasoningDefinitions joins definitions for a run whose model reasoned.
const reasoningDefinitions = " This run reasoned: vLLM's ttft is its first token of any kind, here a reasoning token, " +
	"and its tpot divides by every output token, thinking included; the first answer token is the servebench key's " +
	"client.first_visible_s, the thinking its client.thinking_s and reasoning_tokens, the answer's pace client.answer_tpot_s."

func extra(res *result.Results, run *result.Run) Extra {
	srv := res.Server
	srv.Startup = nil // start-up is not a run figure
	defs := definitions
	if run.Client.ReasoningTokens != nil {
		defs += reasoningDefinitions
	}
	return Extra{Schema: result.Schema, Run: run.Name, Stream: run.Stream, Workload: run.Workload, Server: srv,
		Requests: run.Requests, OK: run.OK, Errors: run.Errors, Throughput: run.Throughput,
		Client: run.Client, Engine: run.Engine, Goodput: run.Goodput, Definitions: defs}
}
