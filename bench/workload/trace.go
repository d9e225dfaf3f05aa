package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/dist"
	"github.com/servebench/servebench/engine/option"
)

// Trace formats for --trace-format.
var TraceFormats = []string{SourceMooncake, SourceAzure}

// Trace is a recorded arrival trace replayed open loop: each entry is one
// request sent at its recorded time (divided by Speed, from the start of
// the window) with its recorded prompt and output lengths.
type Trace struct {
	Format string
	File   string
	Speed  float64
	// WindowStart and WindowDuration select the part replayed, from the
	// trace's first timestamp (0 duration: to the end).
	WindowStart, WindowDuration time.Duration
	sha256                      string
	convs                       []Conversation
}

// LoadTrace reads a trace file. format is mooncake or azure ("" guesses
// from the extension: .jsonl mooncake, .csv azure); speed K replays K
// times faster (0: 1); window is "START,DURATION" ("" all), each a Go
// duration or seconds. Errors name the file, line and field; times must
// not go backwards.
func LoadTrace(file, format string, speed float64, window string, seed int64) (*Trace, error) {
	t, err := newTrace(file, format, speed, window)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, option.Wrap("Trace", nil, err)
	}
	sum := sha256.Sum256(data)
	t.sha256 = hex.EncodeToString(sum[:])
	var entries []traceEntry
	if t.Format == SourceMooncake {
		entries, err = readMooncake(data, file)
	} else {
		entries, err = readAzure(data, file)
	}
	if err != nil {
		return nil, err
	}
	t.keep(entries, uint64(seed))
	if len(t.convs) == 0 {
		return nil, option.Errorf("TraceWindow", nil, "%s: no requests in {TraceWindow} %q (the trace has %d, over %.3f s)", file, window,
			len(entries), entries[len(entries)-1].at.Seconds())
	}
	return t, nil
}

// newTrace checks the trace flags (the format, from the name when not
// given, the speed and the window) without reading the file.
func newTrace(file, format string, speed float64, window string) (*Trace, error) {
	if format == "" {
		switch filepath.Ext(file) {
		case ".jsonl":
			format = SourceMooncake
		case ".csv":
			format = SourceAzure
		default:
			return nil, option.Errorf("Trace", nil, "{Trace} %s: expected {TraceFormat} %s (cannot tell from the name)", file, strings.Join(TraceFormats, " or "))
		}
	}
	if format != SourceMooncake && format != SourceAzure {
		return nil, option.Errorf("TraceFormat", format, "expected %s", strings.Join(TraceFormats, " or "))
	}
	if speed == 0 {
		speed = 1
	}
	if !(speed > 0) || math.IsInf(speed, 0) {
		return nil, option.Errorf("TraceSpeed", speed, "expected a factor > 0 (2: twice as fast)")
	}
	t := &Trace{Format: format, File: file, Speed: speed}
	return t, t.parseWindow(window)
}

// traceEntry is one request of a trace, at its offset from the first.
type traceEntry struct {
	at        time.Duration
	in, out   int
	hashes    []uint64
	lineIndex int
}

func (t *Trace) parseWindow(window string) error {
	if window == "" {
		return nil
	}
	a, b, ok := strings.Cut(window, ",")
	start, err1 := parseSeconds(a)
	dur, err2 := parseSeconds(b)
	if !ok || err1 != nil || err2 != nil || start < 0 || dur <= 0 {
		return option.Errorf("TraceWindow", window, "expected START,DURATION (e.g. 10m,5m or 600,300; start >= 0, duration > 0)")
	}
	t.WindowStart, t.WindowDuration = start, dur
	return nil
}

// parseSeconds reads a Go duration ("90s", "5m") or a number of seconds.
func parseSeconds(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	v, err := dist.Number(s)
	if err != nil {
		return 0, err
	}
	return time.Duration(v * float64(time.Second)), nil
}

// keep keeps the entries in the window, as conversations sent at their
// offset from the window's start divided by the speed.
func (t *Trace) keep(entries []traceEntry, seed uint64) {
	for _, e := range entries {
		if e.at < t.WindowStart || (t.WindowDuration > 0 && e.at >= t.WindowStart+t.WindowDuration) {
			continue
		}
		at := time.Duration(float64(e.at-t.WindowStart) / t.Speed)
		t.convs = append(t.convs, Conversation{At: at, TextSeed: seed,
			Turns: []Turn{{Blocks: e.hashes, Tokens: e.in, Seed: uint64(e.lineIndex), OutputTokens: e.out}}})
	}
}

// Len is the number of requests replayed.
func (t *Trace) Len() int { return len(t.convs) }

// Conversation returns request i (i < Len).
func (t *Trace) Conversation(i int) Conversation { return t.convs[i%len(t.convs)] }

// Describe records the trace, its hash and how it is replayed.
func (t *Trace) Describe(w *result.Workload) {
	w.Source, w.PromptKind, w.SourceFile, w.SourceSHA256 = t.Format, "trace", t.File, t.sha256
	w.Trace = &result.TraceWorkload{Format: t.Format, Speed: t.Speed, WindowStartS: t.WindowStart.Seconds(),
		WindowDurationS: t.WindowDuration.Seconds(), Entries: len(t.convs), SpanS: t.convs[len(t.convs)-1].At.Seconds()}
	describeLengths(w, "trace", t.convs)
}

// mooncakeLine is one line of a Mooncake trace.
type mooncakeLine struct {
	Timestamp    *float64  `json:"timestamp"` // ms
	InputLength  *int      `json:"input_length"`
	OutputLength *int      `json:"output_length"`
	HashIDs      *[]uint64 `json:"hash_ids"`
}

// readMooncake reads a Mooncake JSONL trace.
func readMooncake(data []byte, file string) ([]traceEntry, error) {
	var out []traceEntry
	var first, prev float64
	err := eachLine(bytes.NewReader(data), file, func(line int, text string) error {
		var m mooncakeLine
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			return fmt.Errorf("%s:%d: %v (expected {\"timestamp\": ms, \"input_length\", \"output_length\", \"hash_ids\": [...]})", file, line, err)
		}
		for _, f := range []struct {
			name string
			v    *int
		}{{"input_length", m.InputLength}, {"output_length", m.OutputLength}} {
			if f.v == nil || *f.v < 1 {
				return fmt.Errorf("%s:%d: %q: expected a token count >= 1", file, line, f.name)
			}
		}
		if m.Timestamp == nil || !(*m.Timestamp >= 0) {
			return fmt.Errorf("%s:%d: \"timestamp\": expected milliseconds >= 0", file, line)
		}
		if len(out) == 0 {
			first = *m.Timestamp
		} else if *m.Timestamp < prev {
			return fmt.Errorf("%s:%d: \"timestamp\" %g before the previous line's %g: expected times in order", file, line, *m.Timestamp, prev)
		}
		prev = *m.Timestamp
		e := traceEntry{at: time.Duration((*m.Timestamp - first) * float64(time.Millisecond)), in: *m.InputLength,
			out: *m.OutputLength, lineIndex: line}
		if m.HashIDs != nil {
			e.hashes = *m.HashIDs
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no requests (expected Mooncake JSONL lines)", file)
	}
	return out, nil
}

// azureLayouts are the timestamp forms of the Azure LLM inference traces
// ("2023-11-16 18:15:46.6805900", 7 fractional digits) and ISO 8601.
var azureLayouts = []string{"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", time.RFC3339Nano}

// readAzure reads an Azure LLM inference trace CSV with a header naming
// TIMESTAMP, ContextTokens and GeneratedTokens.
func readAzure(data []byte, file string) ([]traceEntry, error) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\uFEFF"))))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s:1: expected the header TIMESTAMP,ContextTokens,GeneratedTokens: %v", file, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	names := []string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"}
	idx := make([]int, 3)
	for k, n := range names {
		i, ok := col[strings.ToLower(n)]
		if !ok {
			return nil, fmt.Errorf("%s:1: header has no %s column: expected TIMESTAMP,ContextTokens,GeneratedTokens", file, n)
		}
		idx[k] = i
	}
	var out []traceEntry
	var first, prev time.Time
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil { // a *csv.ParseError names the line
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		line, _ := r.FieldPos(0)
		field := func(k int) string {
			if idx[k] < len(rec) {
				return strings.TrimSpace(rec[idx[k]])
			}
			return ""
		}
		ts, err := parseAzureTime(field(0))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: TIMESTAMP %q: expected a datetime like 2023-11-16 18:15:46.6805900", file, line, field(0))
		}
		in, errIn := strconv.Atoi(field(1))
		outTok, errOut := strconv.Atoi(field(2))
		switch {
		case errIn != nil || in < 1:
			return nil, fmt.Errorf("%s:%d: ContextTokens %q: expected a token count >= 1", file, line, field(1))
		case errOut != nil || outTok < 0:
			return nil, fmt.Errorf("%s:%d: GeneratedTokens %q: expected a token count >= 0", file, line, field(2))
		}
		if len(out) == 0 {
			first = ts
		} else if ts.Before(prev) {
			return nil, fmt.Errorf("%s:%d: TIMESTAMP %s before the previous row's %s: expected times in order", file, line, field(0), prev.Format(azureLayouts[0]))
		}
		prev = ts
		// A request needs one output token; the traces' rare 0 become 1.
		out = append(out, traceEntry{at: ts.Sub(first), in: in, out: max(outTok, 1), lineIndex: line})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no requests (expected rows of TIMESTAMP,ContextTokens,GeneratedTokens)", file)
	}
	return out, nil
}

func parseAzureTime(s string) (time.Time, error) {
	for _, l := range azureLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not a datetime")
}
