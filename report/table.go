package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// Formats are the valid values of Table's format (and of --format), in the
// order help text lists them.
var Formats = []string{"text", "markdown", "csv", "json"}

// tableWriter renders one table model in one format. One model, several
// writers, picked once by name.
type tableWriter func(w io.Writer, t *TableModel) error

var tableWriters = map[string]tableWriter{
	"text":     writeText,
	"markdown": writeMarkdown,
	"csv":      writeCSV,
	"json":     writeJSON,
}

// Table writes the seed's latency table for res to w in format (one of
// Formats): a row per run; columns client first visible output and E2E
// (medians), engine TTFT, E2E and queue wait (means from /metrics).
func Table(w io.Writer, res *result.Results, format string) error {
	return TableWith(w, res, format, TableOptions{})
}

// TableOptions choose a table's optional columns.
type TableOptions struct {
	// Load adds the figures a load test is read by (loadColumns): the
	// client p99s of first visible output and E2E, and throughput in
	// requests and output tokens per second. run's, sweep's and report.md's
	// table; the seed's (servebench table) is without.
	Load bool
}

// TableWith is Table with opts.
func TableWith(w io.Writer, res *result.Results, format string, opts TableOptions) error {
	wr, ok := tableWriters[format]
	if !ok {
		return fmt.Errorf("table format %q: expected one of %s", format, strings.Join(Formats, ", "))
	}
	if res == nil {
		return fmt.Errorf("table: no results")
	}
	return wr(w, NewTableModelWith(res, opts))
}

// Column describes one column of the latency table.
type Column struct {
	Key       string `json:"key"`       // machine name, e.g. "first_visible_s"; also the CSV header
	Header    string `json:"header"`    // as the seed prints it, with the statistic
	Quantity  string `json:"quantity"`  // vocabulary name, e.g. "client.first_visible"
	Clock     string `json:"clock"`     // "client" or "engine"
	Statistic string `json:"statistic"` // "median" or "mean"
	Unit      string `json:"unit"`
	Decimals  int    `json:"-"` // the seed's precision in text and Markdown
}

// Cell is one value of the table; OK is false when the quantity is not
// available (then Note indexes TableModel.Notes).
type Cell struct {
	Value float64
	OK    bool
	Note  int
}

// Row is one run.
type Row struct {
	Run   string // result.Run.Name
	Label string // "Streaming", "Non-streaming", or the run name
	Cells []Cell // one per column
}

// TableModel is the latency table independent of its format.
type TableModel struct {
	Columns []Column
	Rows    []Row
	// Caption says which statistic and clock each figure is.
	Caption string
	// Notes explain the "n/a" cells; Cell.Note is an index into it.
	Notes []string
}

// Keys of the five quantities; they also name the chart colours.
const (
	KeyFirstVisible = "first_visible_s"
	KeyE2EClient    = "e2e_client_s"
	KeyEngineTTFT   = "engine_ttft_s"
	KeyE2EEngine    = "e2e_engine_s"
	KeyQueue        = "queue_wait_s"
	KeyFirstTokenS  = "first_token_s"
	KeyThinking     = "thinking_s"
	KeyReasoningTok = "reasoning_tokens"
	KeyGoodput      = "goodput_per_s"
	KeyAttainment   = "slo_attainment_pct"
	KeyFirstVisP99  = "first_visible_p99_s"
	KeyE2EClientP99 = "e2e_client_p99_s"
	KeyRequestsPerS = "requests_per_s"
	KeyOutputTokPS  = "output_tokens_per_s"
)

// tableColumns are the seed's columns, in the seed's order and precision.
var tableColumns = []Column{
	{KeyFirstVisible, "First visible output (client, median)", "client.first_visible", "client", "median", "s", 3},
	{KeyE2EClient, "E2E (client, median)", "client.e2e", "client", "median", "s", 3},
	{KeyEngineTTFT, "Engine TTFT (mean)", "engine.ttft", "engine", "mean", "s", 4},
	{KeyE2EEngine, "E2E (engine, mean)", "engine.e2e", "engine", "mean", "s", 3},
	{KeyQueue, "Queue wait (engine, mean)", "engine.queue", "engine", "mean", "s", 1},
}

// thinkingColumns join the table when a run reasoned: the first token of
// any kind (the engine's TTFT in the client's view), how long the model
// thought, and how many tokens that took; first visible output is the
// first answer token.
var thinkingColumns = []Column{
	{KeyFirstTokenS, "First token, any (client, median)", "client.first_token", "client", "median", "s", 3},
	{KeyThinking, "Thinking (client, median)", "client.thinking", "client", "median", "s", 3},
	{KeyReasoningTok, "Reasoning tokens (client, median)", "client.reasoning_tokens", "client", "median", "tokens", 0},
}

// loadColumns join the table with TableOptions.Load: the tails and the
// throughput a load level is judged by.
var loadColumns = []Column{
	{KeyFirstVisP99, "First visible output (client, p99)", "client.first_visible", "client", "p99", "s", 3},
	{KeyE2EClientP99, "E2E (client, p99)", "client.e2e", "client", "p99", "s", 3},
	{KeyRequestsPerS, "Throughput (client, requests)", "throughput.requests_per_s", "client", "rate", "req/s", 2},
	{KeyOutputTokPS, "Output tokens (client, rate)", "throughput.output_tokens_per_s", "client", "rate", "tok/s", 1},
}

// goodputColumns join the table when a run has an SLO (--slo).
var goodputColumns = []Column{
	{KeyGoodput, "Goodput (client, SLO)", "goodput.rate_per_s", "client", "rate", "req/s", 2},
	{KeyAttainment, "SLO attainment (client, share)", "goodput.attainment", "client", "percent", "%", 1},
}

// Where the engine figures come from, as the table's caption says.
const (
	engineFromMetrics = "mean of the /metrics histogram delta over the run"
	engineFromOllama  = "mean of Ollama's own per-request timings (TTFT = load + prompt eval, E2E = total, queue = the rest)"
	engineFromNone    = "none on this endpoint (Ollama has no /metrics)"
)

// tableCaption states the two clocks once, under every human-readable
// table, with the engine figures' source.
func tableCaption(engineFrom string) string {
	return "Client figures: median over the run's successful requests, client clock, from request sent. " +
		"Engine figures: " + engineFrom + ", engine clock, from request arrival. " +
		"Compare the two sources at the order-of-magnitude level only."
}

// RunLabel is how tables and charts name a run: the seed's "Streaming" and
// "Non-streaming" for the two standard runs, the run name otherwise.
func RunLabel(name string) string {
	switch result.RunName(name) {
	case result.RunStreaming:
		return "Streaming"
	case result.RunNonStreaming:
		return "Non-streaming"
	}
	return name
}

// NewTableModel builds the seed's table for res, in the clock it was
// recorded in (result.Shown), the caption saying which when the engine was
// sped up.
func NewTableModel(res *result.Results) *TableModel { return NewTableModelWith(res, TableOptions{}) }

// NewTableModelWith is NewTableModel with opts.
func NewTableModelWith(res *result.Results, opts TableOptions) *TableModel {
	res = result.Shown(res)
	engineFrom := engineFromMetrics
	switch {
	case slices.ContainsFunc(res.Runs, func(r result.Run) bool {
		return r.Engine.Source != nil && r.Engine.Source.Kind == result.SourceOllama
	}):
		engineFrom = engineFromOllama
	case res.Server.Engine == result.EngineOllama && len(res.Server.MetricsURL) == 0 && res.Server.PrometheusURL == "":
		engineFrom = engineFromNone
	}
	t := &TableModel{Columns: slices.Clone(tableColumns), Caption: tableCaption(engineFrom)}
	if Structured(res) {
		t.Columns = withUsable(t.Columns)
		t.Caption += " Usable output: when a structured answer's JSON, or its tool call's arguments, first parsed complete and valid."
	}
	if note := clockNote(res); note != "" {
		t.Caption += " " + note
	}
	if opts.Load {
		t.Columns = append(t.Columns, loadColumns...)
		t.Caption += " p99: the client figure's 99th percentile (nearest rank). Throughput: successful requests and their" +
			" output tokens per second. Both over the run's steady state (its first answer to its last send: ramp-up and drain" +
			" left out; report.md's Steady state) where it has one, else over the whole run."
	}
	if slices.ContainsFunc(res.Runs, func(r result.Run) bool { return saturated(&r) }) {
		t.Caption += saturatedCaption
	}
	if Reasoned(res) {
		t.Columns = append(t.Columns, thinkingColumns...)
		t.Caption += " Thinking: a reasoning model's first to last reasoning token; first visible output is its first answer token."
	}
	if slo := runsSLO(res); slo != "" {
		t.Columns = append(t.Columns, goodputColumns...)
		t.Caption += " Goodput: requests meeting every threshold of the SLO " + slo +
			" (client figures; a failed request never does) per second of the run's duration, its start to the last" +
			" response (as vLLM's request_goodput); attainment: their share of the run's requests."
	}
	for _, run := range res.Runs {
		row := Row{Run: run.Name, Label: RunLabel(run.Name)}
		if saturated(&run) {
			row.Label += saturatedLabel
		}
		for _, col := range t.Columns {
			v, ok, why := runValue(res, &run, col.Key)
			c := Cell{Value: v, OK: ok}
			if !ok {
				c.Note = t.note(why)
			}
			row.Cells = append(row.Cells, c)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// note returns the index of text in t.Notes, adding it if new.
func (t *TableModel) note(text string) int {
	if i := slices.Index(t.Notes, text); i >= 0 {
		return i
	}
	t.Notes = append(t.Notes, text)
	return len(t.Notes) - 1
}

// runValue returns the table figure key of run, or why it is missing.
func runValue(res *result.Results, run *result.Run, key string) (float64, bool, string) {
	switch key {
	case KeyFirstVisible:
		if run.Client.FirstVisibleS == nil && run.Client.ReasoningTokens != nil {
			return 0, false, "no answer token came: the model was still thinking at max_tokens"
		}
		return clientSample(run, run.Client.FirstVisibleS)
	case KeyE2EClient:
		return clientSample(run, run.Client.E2ES)
	case KeyEngineTTFT:
		return engineMean(res, run, run.Engine.TTFTS, "engine TTFT")
	case KeyE2EEngine:
		return engineMean(res, run, run.Engine.E2ES, "engine E2E")
	case KeyQueue:
		return engineMean(res, run, run.Engine.QueueS, "engine queue wait")
	case KeyFirstTokenS:
		return clientMedian(run.Client.FirstTokenS)
	case KeyUsable:
		return usableValue(run)
	case KeyFirstVisP99, KeyE2EClientP99, KeyRequestsPerS, KeyOutputTokPS:
		return loadValue(run, key)
	case KeyThinking:
		if run.Client.ReasoningTokens == nil {
			return 0, false, "nothing reasoned in this run"
		}
		if run.Client.ThinkingS == nil {
			return 0, false, "thinking time needs streaming"
		}
		return clientMedian(run.Client.ThinkingS)
	case KeyReasoningTok:
		if run.Client.ReasoningTokens == nil {
			return 0, false, "nothing reasoned in this run"
		}
		return clientMedian(run.Client.ReasoningTokens)
	case KeyGoodput, KeyAttainment:
		g := run.Goodput
		switch {
		case g == nil:
			return 0, false, "this run had no SLO"
		case g.Requests == 0:
			return 0, false, "no measured requests to judge against the SLO"
		case key == KeyGoodput:
			return g.RatePerS, true, ""
		}
		return g.Attainment, true, ""
	}
	return 0, false, "unknown quantity " + key
}

// clientSample is clientMedian of a figure every successful request has
// (E2E, first visible output): absent when requests succeeded, it was lost
// (a spilled file unreadable), and the note says so rather than that none
// succeeded.
func clientSample(run *result.Run, s *stats.Summary) (float64, bool, string) {
	if (s == nil || s.N == 0) && run.OK > 0 {
		return 0, false, fmt.Sprintf("%d requests succeeded but their samples could not be read back (see the warnings)", run.OK)
	}
	return clientMedian(s)
}

func clientMedian(s *stats.Summary) (float64, bool, string) {
	if s == nil || s.N == 0 {
		return 0, false, "no successful requests in this run"
	}
	return s.Median, true, ""
}

func clientP99(s *stats.Summary) (float64, bool, string) {
	if s == nil || s.N == 0 {
		return 0, false, "no successful requests in this run"
	}
	return s.P99, true, ""
}

// noAfterScrape: why a run rebuilt from its checkpoint (servebench killed)
// without windows' engine deltas has no engine figures.
const noAfterScrape = "servebench stopped mid-run, before the after-run /metrics scrape: no engine delta"

func engineMean(res *result.Results, run *result.Run, h *result.Hist, what string) (float64, bool, string) {
	if h != nil && h.Count > 0 && !math.IsNaN(h.Mean) {
		return h.Mean, true, ""
	}
	rec := run.Engine.Reconciliation
	switch d := res.Server.Dialect; {
	case res.Server.Engine == result.EngineOllama && (d == "" || d == "none"):
		return 0, false, "Ollama has no /metrics, and the endpoint used carries no engine timings: --endpoint ollama-chat (its /api/chat) gives them per request"
	case d == "" || d == "none":
		return 0, false, "no engine /metrics were scraped (no known dialect), so engine figures are unavailable"
	case rec != nil && rec.EngineAbsent:
		return 0, false, "engine figures left out: " + rec.Note
	case run.Incomplete && h == nil:
		return 0, false, noAfterScrape
	case rec != nil && rec.OK == 0 && rec.EngineCount == 0:
		// An empty delta, not a missing metric (e.g. every request got a 401).
		return 0, false, fmt.Sprintf("the engine finished none of this run's %d requests, so it has no %s to report", rec.Sent, what)
	case h != nil:
		return 0, false, fmt.Sprintf("the engine counted no requests for %s in this run", what)
	default:
		return 0, false, fmt.Sprintf("the server (dialect %s) does not export %s", d, what)
	}
}

// format renders a cell for people: seconds at the column's precision, or
// "n/a [k]" pointing at note k (1-based).
func (c Cell) format(col Column) string {
	if !c.OK {
		return fmt.Sprintf("n/a [%d]", c.Note+1)
	}
	return fmt.Sprintf("%.*f %s", decimalsFor(c.Value, col.Decimals), c.Value, col.Unit)
}

// decimalsFor keeps the seed's precision d unless it would leave v with
// fewer than two significant digits (a bundled engine at --speedup 100
// answers in tenths of a millisecond); then it shows two. Zero stays "0.0".
func decimalsFor(v float64, d int) int {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) >= math.Pow(10, float64(1-d)) {
		return d
	}
	return max(d, 1-int(math.Floor(math.Log10(math.Abs(v)))))
}

// noteLines are the footnotes as printed under a text or Markdown table.
func (t *TableModel) noteLines() []string {
	out := make([]string, len(t.Notes))
	for i, n := range t.Notes {
		out[i] = fmt.Sprintf("[%d] n/a: %s.", i+1, n)
	}
	return out
}

// Reasoned reports whether any run of res had requests that reasoned.
func Reasoned(res *result.Results) bool {
	for _, r := range res.Runs {
		if r.Client.ReasoningTokens != nil {
			return true
		}
	}
	return false
}

// runsSLO is the SLO the runs of res were judged against ("" when none
// was); several differing SLOs are listed joined by "; ".
func runsSLO(res *result.Results) string {
	var slos []string
	for _, r := range res.Runs {
		if r.Goodput != nil && !slices.Contains(slos, r.Goodput.SLO) {
			slos = append(slos, r.Goodput.SLO)
		}
	}
	return strings.Join(slos, "; ")
}

// seconds is t without its columns in other units than seconds (goodput).
func (t *TableModel) seconds() *TableModel {
	out := *t
	out.Columns, out.Rows = nil, nil
	var keep []int
	for i, c := range t.Columns {
		if c.Unit == "s" {
			keep = append(keep, i)
			out.Columns = append(out.Columns, c)
		}
	}
	for _, r := range t.Rows {
		nr := Row{Run: r.Run, Label: r.Label}
		for _, i := range keep {
			nr.Cells = append(nr.Cells, r.Cells[i])
		}
		out.Rows = append(out.Rows, nr)
	}
	return &out
}
