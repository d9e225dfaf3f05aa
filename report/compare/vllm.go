package compare

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/report/export"
)

// ForeignVLLM is Side.Foreign for a side read from `vllm bench serve`'s
// result JSON.
const ForeignVLLM = "vllm bench serve"

// vllmFiles says whether pathOrDir is a vLLM result: a *.json file other
// than results.json, or a directory without results.json holding *.json
// files (all of them are read, in name order).
func vllmFiles(pathOrDir string) ([]string, bool) {
	fi, err := os.Stat(pathOrDir)
	if err != nil {
		return nil, false
	}
	if !fi.IsDir() {
		base := filepath.Base(pathOrDir)
		return []string{pathOrDir}, base != result.ResultsFile && strings.HasSuffix(base, ".json")
	}
	if _, err := os.Stat(filepath.Join(pathOrDir, result.ResultsFile)); err == nil {
		return nil, false
	}
	files, _ := filepath.Glob(filepath.Join(pathOrDir, "*.json"))
	sort.Strings(files)
	return files, len(files) > 0
}

// loadVLLM reads vLLM result objects (saved with --save-detailed) as a
// Side: one run per object, per-request samples from its arrays. A run is
// named by the "servebench" key servebench's export writes, else by its
// file (FILE, or FILE#2... for vLLM's --append-result).
func loadVLLM(path string, files []string) (*Side, error) {
	res := &result.Results{Schema: result.Schema, Manifest: result.Manifest{Version: ForeignVLLM}, Warnings: []string{}}
	var recs []result.Record
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, &InputError{Path: f, Err: err}
		}
		vs, err := export.ReadVLLM(f, data)
		if err != nil {
			return nil, err
		}
		for i := range vs {
			v := &vs[i]
			name := strings.TrimSuffix(filepath.Base(f), ".json")
			if len(vs) > 1 {
				name += "#" + strconv.Itoa(i+1)
			}
			if v.Servebench != nil && v.Servebench.Run != "" {
				name = v.Servebench.Run
			}
			start, _ := time.Parse("20060102-150405", v.Date)
			run, rr := vllmRun(v, name, start)
			if res.Manifest.StartedAt.IsZero() {
				res.Manifest.StartedAt, res.Server.Model = start, v.ModelID
			}
			res.Runs = append(res.Runs, run)
			recs = append(recs, rr...)
		}
	}
	return &Side{Path: path, Results: res, Records: recs, Foreign: ForeignVLLM}, nil
}

func vllmRun(v *export.VLLMResult, name string, start time.Time) (result.Run, []result.Record) {
	recs := v.Records(name, start)
	run := result.Run{Name: name, Stream: v.Stream(), Workload: v.Workload(), Requests: len(recs), Errors: map[string]int{},
		StartedAt: start, DurationS: v.Duration}
	var out int
	for i := range recs {
		if recs[i].Error != "" {
			run.Errors[recs[i].Error]++
			continue
		}
		run.OK++
		out += recs[i].OutputTokens
	}
	if v.Duration > 0 {
		run.Throughput = result.Throughput{RequestsPerS: float64(run.OK) / v.Duration, OutputTokensPerS: float64(out) / v.Duration}
	}
	return run, recs
}

// foreign is the name of the tool that wrote a side not written by
// servebench ("" when both are servebench's).
func foreign(base, cur *Side) string {
	if base.Foreign != "" {
		return base.Foreign
	}
	return cur.Foreign
}

// matchForeign pairs a one-run foreign side whose name matches nothing
// with the other side's only streaming run (vLLM's benchmark always
// streams), or its only run.
func matchForeign(base, cur *Side) (b, n *result.Run, ok bool) {
	one := func(s *Side) *result.Run {
		if len(s.Results.Runs) == 1 {
			return &s.Results.Runs[0]
		}
		var st []*result.Run
		for i := range s.Results.Runs {
			if s.Results.Runs[i].Stream {
				st = append(st, &s.Results.Runs[i])
			}
		}
		if len(st) == 1 {
			return st[0]
		}
		return nil
	}
	switch {
	case base.Foreign != "" && len(base.Results.Runs) == 1:
		b, n = &base.Results.Runs[0], one(cur)
	case cur.Foreign != "" && len(cur.Results.Runs) == 1:
		b, n = one(base), &cur.Results.Runs[0]
	}
	return b, n, b != nil && n != nil
}

// foreignDiffs compares what both a servebench run and a foreign one
// record of their workloads: the model, the traffic (mode, concurrency,
// rate, arrival), streaming, the endpoint where the foreign side names it,
// and the prompt tokens the server counted (median over successful
// requests). unchecked lists what the foreign result does not record.
func foreignDiffs(base, cur *Side, b, n *result.Run) (d []Diff, unchecked []string) {
	wb, wn := b.Workload, n.Workload
	add := func(field string, x, y any) {
		if xs, ys := fmt.Sprint(x), fmt.Sprint(y); xs != ys {
			d = append(d, Diff{Field: field, Base: xs, New: ys})
		}
	}
	add("model", wb.Model, wn.Model)
	add("mode", wb.Mode, wn.Mode)
	add("stream", b.Stream, n.Stream)
	if wb.Endpoint != "" && wn.Endpoint != "" {
		add("endpoint", wb.Endpoint, wn.Endpoint)
	} else {
		unchecked = append(unchecked, "endpoint (backend neither openai-chat nor openai)")
	}
	if wb.Mode == wn.Mode { // the mode's own parameters (a sequential run may record concurrency 1 or 0)
		switch wb.Mode {
		case result.ModeConcurrent:
			add("concurrency", wb.Concurrency, wn.Concurrency)
		case result.ModeRate:
			add("rate", wb.Rate, wn.Rate)
			add("arrival", wb.Arrival, wn.Arrival)
		}
	}
	if wb.Arrival == "gamma" || wn.Arrival == "gamma" { // servebench keeps --burstiness's default for other arrivals
		add("burstiness", wb.Burstiness, wn.Burstiness)
	}
	pb, pn := medianPrompt(base.Records, b.Name), medianPrompt(cur.Records, n.Name)
	if !math.IsNaN(pb) && !math.IsNaN(pn) {
		add("prompt_tokens (median counted by the server)", fmtFloat(pb), fmtFloat(pn))
	} else {
		unchecked = append(unchecked, "prompt tokens (not counted on one side)")
	}
	return d, append(unchecked, export.Unchecked...)
}

func medianPrompt(recs []result.Record, run string) float64 {
	var xs []float64
	for i := range recs {
		if r := &recs[i]; r.Run == run && r.Outcome() && r.Error == "" && r.PromptTokens > 0 {
			xs = append(xs, float64(r.PromptTokens))
		}
	}
	if len(xs) == 0 {
		return math.NaN()
	}
	return stats.Median(xs)
}

// foreignThresholds gates TTFT against a foreign side: its TTFT is the
// client's first token (vLLM records no first visible output), so
// client.first_token.median gets client.first_visible.median's limit
// unless one was given for it.
func foreignThresholds(th map[string]Threshold, user []Threshold) {
	const fv, ft = "client.first_visible.median", "client.first_token.median"
	if slices.ContainsFunc(user, func(t Threshold) bool { return t.Key() == ft }) {
		return
	}
	if t, ok := th[fv]; ok {
		t.Quantity = "client.first_token"
		th[ft] = t
	}
}

// errNoForeignMatch explains why a foreign side's runs matched nothing.
var errNoForeignMatch = errors.New("a vLLM result with one run is compared with the other side's only streaming run; name the run with the \"servebench\" key's \"run\" to choose another")
