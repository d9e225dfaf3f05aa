package launch

import (
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fact is one number a server printed about its start-up.
type Fact struct {
	Value float64
	Line  int           // 1-based line of the log (a tqdm '\r' segment shares its line's number)
	At    time.Duration // when servebench read the line, since spawn; 0 when parsed from a saved log
}

// Mark is a moment in the log: the line that says something happened.
type Mark struct {
	Line int
	At   time.Duration // since spawn; 0 when parsed from a saved log
}

// Facts are the start-up facts read from a server's log (and, for SGLang,
// its /metrics gauges). A nil field was not seen. The first occurrence of a
// fact wins, so with tensor parallelism the figures are rank 0's.
type Facts struct {
	Engine string // "vllm", "sglang", "llamacpp" or "ollama": who printed the lines that matched; "" if none

	WeightsLoad          *Fact // seconds, a duration stated by the server (or derived from begin/end lines)
	WeightsLoaded        *Mark // the line that says the weights are in memory
	ModelGiB             *Fact // memory the weights take (vLLM, SGLang) or the model file size (llama.cpp)
	InitEngineS          *Fact // vLLM: init engine (profile, create kv cache, warmup model)
	KVCacheTokens        *Fact
	MaxConcurrency       *Fact // vLLM: requests of MaxConcurrencyTokens tokens the KV cache holds at once
	MaxConcurrencyTokens *Fact
	TorchCompileS        *Fact // vLLM: torch.compile takes ... s in total
	GraphCaptureS        *Fact // vLLM: Graph capturing finished in ... secs
	EngineStartupS       *Fact // SGLang: sglang:engine_startup_time gauge

	// URL is where the server says it listens ("Starting vLLM API server 0 on
	// http://127.0.0.1:PORT", uvicorn's "Uvicorn running on", llama.cpp's
	// "server is listening on"), with a wildcard host replaced by 127.0.0.1.
	URL   string
	URLAt *Mark
}

// Fill copies the facts into st's log-derived fields, leaving fields that are
// already set alone.
func (f *Facts) Fill(st *Startup) {
	setF := func(dst **float64, src *Fact) {
		if *dst == nil && src != nil {
			v := src.Value
			*dst = &v
		}
	}
	setI := func(dst **int64, src *Fact) {
		if *dst == nil && src != nil {
			v := int64(src.Value)
			*dst = &v
		}
	}
	setF(&st.WeightsLoadS, f.WeightsLoad)
	if st.WeightsLoadedAtS == nil && f.WeightsLoaded != nil && f.WeightsLoaded.At > 0 {
		v := f.WeightsLoaded.At.Seconds()
		st.WeightsLoadedAtS = &v
	}
	setF(&st.ModelGiB, f.ModelGiB)
	setF(&st.InitEngineS, f.InitEngineS)
	setI(&st.KVCacheTokens, f.KVCacheTokens)
	setF(&st.MaxConcurrency, f.MaxConcurrency)
	setI(&st.MaxConcurrencyTokens, f.MaxConcurrencyTokens)
}

// Merge fills f's missing facts from o.
func (f *Facts) Merge(o Facts) {
	pick := func(dst **Fact, src *Fact) {
		if *dst == nil && src != nil {
			*dst = src
		}
	}
	pick(&f.WeightsLoad, o.WeightsLoad)
	pick(&f.ModelGiB, o.ModelGiB)
	pick(&f.InitEngineS, o.InitEngineS)
	pick(&f.KVCacheTokens, o.KVCacheTokens)
	pick(&f.MaxConcurrency, o.MaxConcurrency)
	pick(&f.MaxConcurrencyTokens, o.MaxConcurrencyTokens)
	pick(&f.TorchCompileS, o.TorchCompileS)
	pick(&f.GraphCaptureS, o.GraphCaptureS)
	pick(&f.EngineStartupS, o.EngineStartupS)
	if f.WeightsLoaded == nil {
		f.WeightsLoaded = o.WeightsLoaded
	}
	if f.URL == "" {
		f.URL, f.URLAt = o.URL, o.URLAt
	}
	if f.Engine == "" {
		f.Engine = o.Engine
	}
}

// ParseLog reads a whole server log and returns the facts in it. Lines may
// carry docker-compose ("vllm-1  | ") and vLLM process ("(EngineCore_DP0
// pid=278) INFO ...") prefixes; '\r' ends a line too (tqdm progress bars). A
// read error ends parsing with the facts found so far.
func ParseLog(r io.Reader) Facts {
	p := NewParser()
	var sp lineSplitter
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		sp.feed(buf[:n], func(line []byte, no int) { p.Line(string(line), no, 0) })
		if err != nil {
			break
		}
	}
	sp.flush(func(line []byte, no int) { p.Line(string(line), no, 0) })
	return p.Facts()
}

// Parser reads a log line by line, as the server writes it. It is not safe
// for concurrent use; Server serialises access to its own parser.
type Parser struct {
	f Facts
	// begin/end pairs for servers that print no duration.
	sglBegin, llamaBegin       *Mark
	sglBeginClk, llamaBeginClk time.Duration
	sglClkOK, llamaClkOK       bool
	llamaTensors               bool // a load_tensors line was seen: the next context line ends loading
	weightsFromModelLoading    bool // WeightsLoad came from "Model loading took": "Loading weights took" is better
}

// NewParser returns an empty Parser.
func NewParser() *Parser { return &Parser{} }

// Facts returns a copy of what has been parsed so far.
func (p *Parser) Facts() Facts { return p.f }

// rule is one log pattern: a cheap substring test, then the regexp.
type rule struct {
	engine string
	key    string
	re     *regexp.Regexp
	apply  func(p *Parser, m []string, mk Mark, line string) bool // reports whether it used the line
}

var rules = []rule{
	{"vllm", "Loading weights took", regexp.MustCompile(`Loading weights took ([0-9.]+) seconds`),
		func(p *Parser, m []string, mk Mark, _ string) bool {
			if _, ok := parseNumber(m[1]); !ok {
				return false
			}
			if p.weightsFromModelLoading {
				p.f.WeightsLoad, p.weightsFromModelLoading = nil, false
			}
			p.set(&p.f.WeightsLoad, m[1], mk)
			p.mark(&p.f.WeightsLoaded, mk)
			return true
		}},
	// "Model loading took 51.7891 GiB and 29.929735 seconds", and the older
	// "Model loading took 14.99 GiB memory and 7.14 seconds" / "... GB and ...".
	{"vllm", "Model loading took", regexp.MustCompile(`Model loading took ([0-9.]+) (?:GiB|GB)(?: memory)? and ([0-9.]+) seconds`),
		func(p *Parser, m []string, mk Mark, _ string) bool {
			if p.f.WeightsLoad == nil && p.set(&p.f.WeightsLoad, m[2], mk) {
				p.weightsFromModelLoading = true
			}
			if !p.set(&p.f.ModelGiB, m[1], mk) && !p.weightsFromModelLoading {
				return false
			}
			p.mark(&p.f.WeightsLoaded, mk)
			return true
		}},
	// vLLM V0 (0.4-0.6): "Loading model weights took 14.9888 GB".
	{"vllm", "Loading model weights took", regexp.MustCompile(`Loading model weights took ([0-9.]+) (?:GiB|GB)`),
		func(p *Parser, m []string, mk Mark, _ string) bool {
			if !p.set(&p.f.ModelGiB, m[1], mk) {
				return false
			}
			p.mark(&p.f.WeightsLoaded, mk)
			return true
		}},
	{"vllm", "GPU KV cache size:", regexp.MustCompile(`GPU KV cache size: ([0-9][0-9,]*) tokens`),
		func(p *Parser, m []string, mk Mark, _ string) bool { return p.set(&p.f.KVCacheTokens, m[1], mk) }},
	{"vllm", "Maximum concurrency for", regexp.MustCompile(`Maximum concurrency for ([0-9][0-9,]*) tokens per request: ([0-9.]+)x`),
		func(p *Parser, m []string, mk Mark, _ string) bool {
			if p.f.MaxConcurrency != nil {
				return false
			}
			if _, ok := parseNumber(m[1]); !ok || !p.set(&p.f.MaxConcurrency, m[2], mk) {
				return false
			}
			return p.set(&p.f.MaxConcurrencyTokens, m[1], mk)
		}},
	{"vllm", "init engine", regexp.MustCompile(`init engine \([^)]*\) took ([0-9.]+) seconds`),
		func(p *Parser, m []string, mk Mark, _ string) bool { return p.set(&p.f.InitEngineS, m[1], mk) }},
	{"vllm", "torch.compile takes", regexp.MustCompile(`torch\.compile takes ([0-9.]+) s in total`),
		func(p *Parser, m []string, mk Mark, _ string) bool { return p.set(&p.f.TorchCompileS, m[1], mk) }},
	{"vllm", "Graph capturing finished in", regexp.MustCompile(`Graph capturing finished in ([0-9.]+) secs?`),
		func(p *Parser, m []string, mk Mark, _ string) bool { return p.set(&p.f.GraphCaptureS, m[1], mk) }},
	{"", " on http", regexp.MustCompile(`(?:Starting vLLM API server(?: [0-9]+)?|Uvicorn running|server is listening) on (https?://[^\s/]+)`),
		func(p *Parser, m []string, mk Mark, _ string) bool {
			if p.f.URL != "" {
				return false
			}
			p.f.URL = localURL(m[1])
			p.f.URLAt = &mk
			return true
		}},
	// Ollama: msg="Listening on 127.0.0.1:41235 (version 0.17.4)"; with
	// OLLAMA_HOST=127.0.0.1:0 it is the only place the port is named.
	{"ollama", "Listening on ", regexp.MustCompile(`Listening on ((?:[0-9.]+|\[[0-9a-fA-F:]+\]):[0-9]+) \(version [^)]*\)`),
		func(p *Parser, m []string, mk Mark, _ string) bool {
			if p.f.URL != "" {
				return false
			}
			p.f.URL = localURL("http://" + m[1])
			p.f.URLAt = &mk
			return true
		}},
	// SGLang: "[2025-08-13 14:27:52 TP0] Load weight begin. avail mem=175.34 GB".
	{"sglang", "Load weight begin.", regexp.MustCompile(`Load weight begin\.`),
		func(p *Parser, _ []string, mk Mark, line string) bool {
			if p.sglBegin != nil {
				return false
			}
			p.sglBegin = &mk
			p.sglBeginClk, p.sglClkOK = logClock(line)
			return true
		}},
	// SGLang: "Load weight end. elapsed=100.34 s, type=Qwen3ForCausalLM, avail
	// mem=17.40 GB, mem usage=61.07 GB." (older versions: no elapsed, or no mem usage).
	{"sglang", "Load weight end.", regexp.MustCompile(`Load weight end\.(?:.*?elapsed=([0-9.]+) s)?(?:.*?mem usage=([0-9.]+) GB)?`),
		func(p *Parser, m []string, mk Mark, line string) bool {
			if p.f.WeightsLoaded != nil {
				return false // a draft model or another rank
			}
			p.mark(&p.f.WeightsLoaded, mk)
			if m[2] != "" {
				p.set(&p.f.ModelGiB, m[2], mk) // SGLang's GB is 2^30 bytes
			}
			if m[1] != "" {
				p.set(&p.f.WeightsLoad, m[1], mk)
			} else if p.sglBegin != nil {
				clk, ok := logClock(line)
				p.between(p.sglBegin, p.sglBeginClk, p.sglClkOK && ok, clk, mk)
			}
			return true
		}},
	{"sglang", "KV Cache is allocated.", regexp.MustCompile(`KV Cache is allocated\. #tokens: ([0-9]+)`),
		func(p *Parser, m []string, mk Mark, _ string) bool { return p.set(&p.f.KVCacheTokens, m[1], mk) }},
	{"sglang", "max_total_num_tokens=", regexp.MustCompile(`max_total_num_tokens=([0-9]+)`),
		func(p *Parser, m []string, mk Mark, _ string) bool { return p.set(&p.f.KVCacheTokens, m[1], mk) }},
	// llama.cpp: "print_info: file size   = 4.36 GiB (4.95 BPW)"; older builds
	// "llm_load_print_meta: model size       = 4.36 GiB (4.95 BPW)".
	{"llamacpp", " size ", regexp.MustCompile(`(?:print_info: file size|llm_load_print_meta: model size)\s*=\s*([0-9.]+) (MiB|GiB)`),
		func(p *Parser, m []string, mk Mark, _ string) bool {
			if !p.set(&p.f.ModelGiB, m[1], mk) {
				return false
			}
			if m[2] == "MiB" {
				p.f.ModelGiB.Value /= 1024
			}
			return true
		}},
	{"llamacpp", "load_tensors:", regexp.MustCompile(`load_tensors:`),
		func(p *Parser, _ []string, mk Mark, line string) bool {
			if p.llamaTensors {
				return false
			}
			p.llamaTensors = true
			p.llamaBegin = &mk
			p.llamaBeginClk, p.llamaClkOK = logClock(line)
			return true
		}},
	// llama.cpp prints the context set-up right after the tensors are loaded.
	{"llamacpp", "llama_", regexp.MustCompile(`(?:llama_context|llama_new_context_with_model|llama_init_from_model):`),
		func(p *Parser, _ []string, mk Mark, line string) bool {
			if !p.llamaTensors || p.f.WeightsLoaded != nil {
				return false
			}
			p.mark(&p.f.WeightsLoaded, mk)
			clk, ok := logClock(line)
			p.between(p.llamaBegin, p.llamaBeginClk, p.llamaClkOK && ok, clk, mk)
			return true
		}},
	{"llamacpp", "main: model loaded", regexp.MustCompile(`main: model loaded`),
		func(p *Parser, _ []string, mk Mark, _ string) bool {
			if p.f.WeightsLoaded != nil {
				return false
			}
			p.mark(&p.f.WeightsLoaded, mk)
			return true
		}},
	// "llama_kv_cache_unified: size = 1536.00 MiB (  4096 cells,  32 layers, ..." (newer: llama_kv_cache:).
	{"llamacpp", "cells", regexp.MustCompile(`llama_kv_cache(?:_unified)?: size =\s*[0-9.]+ MiB \(\s*([0-9]+) cells`),
		func(p *Parser, m []string, mk Mark, _ string) bool { return p.set(&p.f.KVCacheTokens, m[1], mk) }},
}

// maxLineParse caps the part of a line the patterns look at: the facts sit at
// the start, and a pathological line must not cost quadratic time.
const maxLineParse = 4096

// Line parses one log line (without its line break). no is its 1-based line
// number and at when it was read (0 when unknown).
func (p *Parser) Line(line string, no int, at time.Duration) {
	if len(line) > maxLineParse {
		line = line[:maxLineParse]
	}
	mk := Mark{Line: no, At: at}
	for i := range rules {
		r := &rules[i]
		if !strings.Contains(line, r.key) {
			continue
		}
		m := r.re.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if r.apply(p, m, mk, line) && r.engine != "" && p.f.Engine == "" {
			p.f.Engine = r.engine
		}
	}
}

// set stores the number s (commas allowed) in *dst unless it is already set.
// It reports whether it stored it.
func (p *Parser) set(dst **Fact, s string, mk Mark) bool {
	if *dst != nil {
		return false
	}
	v, ok := parseNumber(s)
	if !ok {
		return false
	}
	*dst = &Fact{Value: v, Line: mk.Line, At: mk.At}
	return true
}

func (p *Parser) mark(dst **Mark, mk Mark) {
	if *dst == nil {
		*dst = &mk
	}
}

// between sets WeightsLoad from a begin and an end line when the server
// states no duration: from the log's own clock when both lines have one,
// else from when servebench read them.
func (p *Parser) between(begin *Mark, beginClk time.Duration, clkOK bool, endClk time.Duration, end Mark) {
	if p.f.WeightsLoad != nil || begin == nil {
		return
	}
	var d time.Duration
	switch {
	case clkOK && endClk >= beginClk:
		d = endClk - beginClk
	case begin.At > 0 && end.At >= begin.At:
		d = end.At - begin.At
	default:
		return
	}
	p.f.WeightsLoad = &Fact{Value: d.Seconds(), Line: end.Line, At: end.At}
}

// maxExact is the largest float64 below which every integer is exact; larger
// "numbers" in a log are garbage, not facts.
const maxExact = 1 << 53

func parseNumber(s string) (float64, bool) {
	s = strings.ReplaceAll(s, ",", "")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > maxExact {
		return 0, false
	}
	return v, true
}

// localURL turns a listen address into one a client on this host can dial.
func localURL(u string) string {
	for _, wild := range []string{"0.0.0.0", "[::]", "::"} {
		if rest, ok := strings.CutPrefix(strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://"), wild+":"); ok {
			scheme := "http://"
			if strings.HasPrefix(u, "https://") {
				scheme = "https://"
			}
			return scheme + "127.0.0.1:" + rest
		}
	}
	return u
}

var (
	sglClockRE   = regexp.MustCompile(`^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)`)
	llamaClockRE = regexp.MustCompile(`^(\d+)\.(\d\d)\.(\d{3})\.(\d{3}) `)
)

// logClock reads the server's own timestamp at the start of a line: SGLang's
// "[2025-08-13 14:27:52 TP0]" or llama.cpp's "0.05.583.299 I" (minutes,
// seconds, ms, us since start). The result is only good for differences.
func logClock(line string) (time.Duration, bool) {
	if m := sglClockRE.FindStringSubmatch(line); m != nil {
		t, err := time.Parse("2006-01-02 15:04:05", m[1])
		if err != nil {
			return 0, false
		}
		return time.Duration(t.Unix()) * time.Second, true
	}
	if m := llamaClockRE.FindStringSubmatch(line); m != nil {
		var n [4]int64
		for i := range n {
			v, err := strconv.ParseInt(m[i+1], 10, 64)
			if err != nil || v > 1<<30 {
				return 0, false
			}
			n[i] = v
		}
		return time.Duration(n[0])*time.Minute + time.Duration(n[1])*time.Second +
			time.Duration(n[2])*time.Millisecond + time.Duration(n[3])*time.Microsecond, true
	}
	return 0, false
}

// MetricsFacts reads SGLang's start-up gauges from a /metrics exposition:
// sglang:engine_load_weights_time (-> WeightsLoad) and
// sglang:engine_startup_time (-> EngineStartupS). The first sample of each
// wins; other metrics are ignored. Kept to plain string handling so any text
// can be passed safely.
func MetricsFacts(exposition string) Facts {
	var f Facts
	for line := range strings.Lines(exposition) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "sglang:engine_") {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ \t"); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if strings.HasPrefix(rest, "{") {
			j := strings.LastIndexByte(rest, '}')
			if j < 0 {
				continue
			}
			rest = rest[j+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			continue
		}
		switch name {
		case "sglang:engine_load_weights_time":
			if f.WeightsLoad == nil {
				f.WeightsLoad = &Fact{Value: v}
			}
		case "sglang:engine_startup_time":
			if f.EngineStartupS == nil {
				f.EngineStartupS = &Fact{Value: v}
			}
		}
	}
	if f.WeightsLoad != nil || f.EngineStartupS != nil {
		f.Engine = "sglang"
	}
	return f
}

// maxLine caps one buffered log line; the rest of a longer line is dropped
// from parsing (the log file still gets every byte).
const maxLine = 64 << 10

// lineSplitter cuts a byte stream into lines at '\n', '\r\n' and lone '\r'
// (tqdm redraws its progress bar with '\r'). Segments split by '\r' share
// their line's number, so numbers match what an editor shows.
type lineSplitter struct {
	buf     []byte
	no      int  // number of the line being assembled, minus one
	afterCR bool // the last byte was '\r': a following '\n' ends nothing new
}

// feed splits p and calls emit for every completed line. emit must not keep line.
func (s *lineSplitter) feed(p []byte, emit func(line []byte, no int)) {
	for _, c := range p {
		switch c {
		case '\n':
			if !s.afterCR || len(s.buf) > 0 {
				s.emit(emit)
			}
			s.no++
			s.afterCR = false
		case '\r':
			s.emit(emit)
			s.afterCR = true
		default:
			s.afterCR = false
			if len(s.buf) < maxLine {
				s.buf = append(s.buf, c)
			}
		}
	}
}

func (s *lineSplitter) emit(emit func([]byte, int)) {
	emit(s.buf, s.no+1)
	s.buf = s.buf[:0]
}

// flush emits a last line that had no line break.
func (s *lineSplitter) flush(emit func([]byte, int)) {
	if len(s.buf) > 0 {
		s.emit(emit)
	}
}

// ring keeps the last n log lines for error messages. Safe for concurrent use.
type ring struct {
	mu    sync.Mutex
	lines []string
	next  int
	full  bool
}

func newRing(n int) *ring { return &ring{lines: make([]string, n)} }

func (r *ring) add(line string) {
	r.mu.Lock()
	r.lines[r.next] = line
	r.next++
	if r.next == len(r.lines) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// tail returns up to n of the last lines, oldest first.
func (r *ring) tail(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	size := r.next
	if r.full {
		size = len(r.lines)
	}
	if n > size {
		n = size
	}
	if n < 0 {
		n = 0
	}
	out := make([]string, 0, n)
	for i := size - n; i < size; i++ {
		j := i
		if r.full {
			j = (r.next + i) % len(r.lines)
		}
		out = append(out, r.lines[j])
	}
	return out
}
