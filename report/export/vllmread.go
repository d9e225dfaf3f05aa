package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/bench/result"
)

// VLLMResult is what servebench reads of one `vllm bench serve
// --save-result --save-detailed` result object. Rate and burstiness are
// numbers or the string "inf".
type VLLMResult struct {
	Date           string          `json:"date"`
	Backend        string          `json:"backend"`
	ModelID        string          `json:"model_id"`
	NumPrompts     int             `json:"num_prompts"`
	RequestRate    json.RawMessage `json:"request_rate"`
	Burstiness     json.RawMessage `json:"burstiness"`
	MaxConcurrency *int            `json:"max_concurrency"`
	Duration       float64         `json:"duration"`
	Completed      int             `json:"completed"`
	// The detailed arrays (--save-detailed), one entry per request.
	InputLens  []int       `json:"input_lens"`
	OutputLens []int       `json:"output_lens"`
	TTFTs      []float64   `json:"ttfts"`
	ITLs       [][]float64 `json:"itls"`
	Latencies  []float64   `json:"latencies"` // absent before vLLM wrote it; then ttft + sum(itl), as vLLM's timeline plot does
	StartTimes []float64   `json:"start_times"`
	Errors     []*string   `json:"errors"`
	Servebench *struct {
		Run    string `json:"run"`
		Stream *bool  `json:"stream"`
	} `json:"servebench"` // set when servebench wrote the file: its run's name, and whether it streamed
}

// ErrNotDetailed marks a vLLM result saved without --save-detailed: it has
// no per-request samples to compare.
var ErrNotDetailed = errors.New("no per-request arrays (input_lens, output_lens, ttfts, itls, errors): save the result with `vllm bench serve --save-result --save-detailed`")

// ReadVLLM reads the vLLM result objects in data (name is used in errors):
// one object, an array of them (servebench's export of several runs), or
// objects one after another (vLLM's --append-result). Errors are
// *result.InputError naming the file, and the object's line.
func ReadVLLM(name string, data []byte) ([]VLLMResult, error) {
	if !json.Valid(data) && pyNonFinite.Match(data) {
		// Python's json.dump writes a float inf (--burstiness inf) as a
		// bare Infinity, which is not JSON.
		data = pyNonFinite.ReplaceAll(data, []byte(`$1"inf"`))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []VLLMResult
	add := func(off int64, raw json.RawMessage) error {
		var v VLLMResult
		if err := json.Unmarshal(raw, &v); err != nil {
			return inputErr(name, data, off, fmt.Errorf("not a vLLM result object: %w", err))
		}
		if err := v.check(); err != nil {
			return inputErr(name, data, off, err)
		}
		out = append(out, v)
		return nil
	}
	for {
		off := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			break
		} else if err != nil {
			return nil, inputErr(name, data, off, fmt.Errorf("bad JSON: %w", err))
		}
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
			var arr []json.RawMessage
			if err := json.Unmarshal(raw, &arr); err != nil {
				return nil, inputErr(name, data, off, fmt.Errorf("bad JSON: %w", err))
			}
			for _, a := range arr {
				if err := add(off, a); err != nil {
					return nil, err
				}
			}
			continue
		}
		if err := add(off, raw); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, &result.InputError{Path: name, Err: errors.New("no vLLM result object")}
	}
	return out, nil
}

// pyNonFinite finds Python's bare Infinity after a key or in an array.
var pyNonFinite = regexp.MustCompile(`([:\[,]\s*)-?Infinity\b`)

func inputErr(name string, data []byte, off int64, err error) error {
	off = min(max(off, 0), int64(len(data)))
	// The decoder's offset is where the previous value ended: skip to the next one.
	for off < int64(len(data)) && strings.ContainsRune(" \t\r\n", rune(data[off])) {
		off++
	}
	return &result.InputError{Path: name, Line: 1 + bytes.Count(data[:off], []byte("\n")), Err: err}
}

// check refuses an object without the detailed arrays or with arrays of
// different lengths.
func (v *VLLMResult) check() error {
	if v.InputLens == nil || v.OutputLens == nil || v.TTFTs == nil || v.ITLs == nil || v.Errors == nil {
		return ErrNotDetailed
	}
	n := len(v.TTFTs)
	lens := map[string]int{"input_lens": len(v.InputLens), "output_lens": len(v.OutputLens), "itls": len(v.ITLs), "errors": len(v.Errors)}
	if v.Latencies != nil {
		lens["latencies"] = len(v.Latencies)
	}
	for k, l := range lens {
		if l != n {
			return fmt.Errorf("%s has %d entries, ttfts %d: expected one per request", k, l, n)
		}
	}
	return nil
}

// ErrorClass is the error class of a request that failed in vLLM's
// benchmark: vLLM keeps only the message (HTTP reason or traceback).
const ErrorClass = "vllm"

// Stream says whether the requests streamed: always for vLLM's benchmark;
// servebench's export of a non-streaming run says so in its extra key.
func (v *VLLMResult) Stream() bool {
	return v.Servebench == nil || v.Servebench.Stream == nil || *v.Servebench.Stream
}

// Records are v's requests as servebench records of run: first_token is
// vLLM's TTFT, e2e its latency, one event of one chunk per vLLM chunk
// (ttft, then each ITL). vLLM records no first visible output and no time
// to first byte.
func (v *VLLMResult) Records(run string, start time.Time) []result.Record {
	recs := make([]result.Record, len(v.TTFTs))
	for i := range recs {
		r := result.Record{Run: run, Index: i, Stream: v.Stream(), Start: start, PromptTokens: v.InputLens[i],
			OutputTokens: v.OutputLens[i], TokensFrom: "usage"}
		if i < len(v.StartTimes) && len(v.StartTimes) > 0 {
			r.Start = start.Add(time.Duration((v.StartTimes[i] - v.StartTimes[0]) * float64(time.Second)))
		}
		if e := v.Errors[i]; e != nil && *e != "" {
			r.Error, r.ErrorText = ErrorClass, *e
			recs[i] = r
			continue
		}
		r.FirstTokenS = v.TTFTs[i]
		t := v.TTFTs[i]
		r.Events = append(r.Events, [2]float64{t, 1})
		for _, g := range v.ITLs[i] {
			t += g
			r.Events = append(r.Events, [2]float64{t, 1})
		}
		r.E2ES = t
		if v.Latencies != nil {
			r.E2ES = v.Latencies[i]
		}
		recs[i] = r
	}
	return recs
}

// Workload is what v records of its workload, in servebench's terms;
// Unchecked names what vLLM's result does not record.
func (v *VLLMResult) Workload() result.Workload {
	wl := result.Workload{Model: v.ModelID, Stream: v.Stream(), Requests: len(v.TTFTs), Endpoint: v.Endpoint()}
	rate, finite := infOrNumber(v.RequestRate)
	switch {
	case finite:
		wl.Mode, wl.Rate = result.ModeRate, rate
		b, bfinite := infOrNumber(v.Burstiness)
		switch {
		case len(v.Burstiness) == 0 || (bfinite && b == 1):
			wl.Arrival = "poisson"
		case !bfinite:
			wl.Arrival = "constant"
		default:
			wl.Arrival, wl.Burstiness = "gamma", b
		}
	case v.MaxConcurrency != nil && *v.MaxConcurrency == 1:
		wl.Mode = result.ModeSequential
	case v.MaxConcurrency != nil:
		wl.Mode, wl.Concurrency = result.ModeConcurrent, *v.MaxConcurrency
	default:
		wl.Mode, wl.Concurrency = result.ModeConcurrent, len(v.TTFTs) // all sent at once
	}
	return wl
}

// Unchecked lists what a vLLM result does not record, so a comparison
// with it cannot check.
var Unchecked = []string{"max_tokens (only the tokens each request got)", "exact_length (ignore_eos)",
	"prompt text, kind and file", "source and length distributions", "sessions and shared prefixes", "seed", "warm-up"}

// Endpoint is "chat" or "completions" from vLLM's backend; "" when the
// backend is neither OpenAI chat nor completions.
func (v *VLLMResult) Endpoint() string {
	switch v.Backend {
	case "openai-chat":
		return "chat"
	case "openai", "vllm":
		return "completions"
	}
	return ""
}

// infOrNumber reads vLLM's request_rate/burstiness: a number, or "inf".
func infOrNumber(raw json.RawMessage) (float64, bool) {
	s := strings.Trim(string(bytes.TrimSpace(raw)), `"`)
	if s == "" || s == "null" {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return math.Inf(1), false
	}
	return f, true
}
