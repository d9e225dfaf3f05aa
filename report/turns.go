package report

import (
	"fmt"
	"image/color"
	"strconv"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// FileTurns is the by-turn chart of multi-turn sessions.
const FileTurns = "turns.png"

// Keys of the by-turn chart's quantities in Palette.
const (
	KeyFirstToken   = "first_token"
	KeyPromptTokens = "prompt_tokens"
	KeyCachedTokens = "cached_tokens"
	KeyPrefilled    = "prefilled_tokens"
)

// TurnRow is one turn of a run's sessions: the successful requests that
// were that turn, their client medians and their mean prompt and cached
// tokens (from usage; 0 when the server did not say). Engine TTFT per turn
// is not on /metrics (one histogram for the whole run): the client's first
// token stands for it, and the cached tokens say what the prefix cache saved.
type TurnRow struct {
	Turn            int
	N               int
	FirstVisibleP50 float64
	FirstTokenP50   float64
	E2EP50          float64
	PromptTokens    float64 // mean usage.prompt_tokens
	CachedTokens    float64 // mean usage.prompt_tokens_details.cached_tokens
	CachedKnown     bool    // some request reported cached tokens
	// UsableP50 is the median time to usable output of the turn's
	// structured answers (a tool call's arguments complete); UsableN how
	// many had one (0: none, UsableP50 unset).
	UsableP50 float64
	UsableN   int
}

// TurnRows summarises run's session requests by turn (nil without sessions).
func TurnRows(run string, recs []result.Record) []TurnRow {
	type acc struct {
		fv, ft, e2e, usable []float64
		prompt, cached      float64
		known               bool
	}
	var by []*acc
	for _, r := range measured(run, recs) {
		if r.Turn < 1 {
			continue
		}
		for len(by) < r.Turn {
			by = append(by, &acc{})
		}
		a := by[r.Turn-1]
		a.fv, a.ft, a.e2e = append(a.fv, r.FirstVisibleS), append(a.ft, r.FirstTokenS), append(a.e2e, r.E2ES)
		a.prompt += float64(r.PromptTokens)
		a.cached += float64(r.CachedTokens)
		a.known = a.known || r.CachedTokens > 0
		if r.UsableS > 0 {
			a.usable = append(a.usable, r.UsableS)
		}
	}
	var rows []TurnRow
	for i, a := range by {
		n := len(a.fv)
		if n == 0 {
			continue
		}
		row := TurnRow{Turn: i + 1, N: n, FirstVisibleP50: stats.Median(a.fv), FirstTokenP50: stats.Median(a.ft),
			E2EP50: stats.Median(a.e2e), PromptTokens: a.prompt / float64(n), CachedTokens: a.cached / float64(n), CachedKnown: a.known}
		if len(a.usable) > 0 {
			row.UsableP50, row.UsableN = stats.Median(a.usable), len(a.usable)
		}
		rows = append(rows, row)
	}
	return rows
}

// hasTurns reports whether any run has session records.
func hasTurns(res *result.Results, recs []result.Record) bool {
	for _, r := range res.Runs {
		if len(TurnRows(r.Name, recs)) > 0 {
			return true
		}
	}
	return false
}

// writeTurnsSection writes report.md's "Sessions: by turn" tables.
func writeTurnsSection(b *strings.Builder, res *result.Results, recs []result.Record, s *Sample, embed func(string)) {
	if !hasTurns(res, recs) {
		return
	}
	b.WriteString("## Sessions: by turn\n\n")
	b.WriteString("Each turn sends the whole history (earlier turns and the answers as received). Client medians over " +
		"successful requests; prompt and cached tokens are means from the server's usage (cached: " +
		"`usage.prompt_tokens_details.cached_tokens`). Engine TTFT by turn is not on `/metrics` (one histogram " +
		"per run): the client's first token stands for it. With a prefix cache, later turns reuse the history's " +
		"tokens and their first output stays near the first turn's; without one, it grows with the history.\n\n")
	if note := s.Note(res); note != "" {
		b.WriteString("_" + note + "_\n\n")
	}
	for _, run := range res.Runs {
		rows := TurnRows(run.Name, recs)
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(b, "**%s**\n\n", mdEscape(run.Name))
		b.WriteString("| turn | requests | first visible (client, p50) | first token (client, p50) | E2E (client, p50) | prompt tokens (mean) | cached tokens (mean) |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range rows {
			cached := "-"
			if r.CachedKnown {
				cached = strconv.FormatFloat(r.CachedTokens, 'f', 0, 64)
			}
			fmt.Fprintf(b, "| %d | %d | %s | %s | %s | %.0f | %s |\n", r.Turn, r.N, secsText(r.FirstVisibleP50),
				secsText(r.FirstTokenP50), secsText(r.E2EP50), r.PromptTokens, cached)
		}
		b.WriteString("\n")
		writeSessionLines(b, &run, rows)
	}
	embed(FileTurns)
}

// turnsChart renders turns.png: by turn, the client's first visible output
// and first token (medians, one dash per run) above the mean prompt and
// cached tokens, so a prefix cache's effect on later turns shows as flat
// latency while the cached share of a growing prompt rises. recs may be a
// Sample s (nil: all records), which it names.
func turnsChart(res *result.Results, recs []result.Record, s *Sample) ([]byte, error) {
	lat := newPlot("Time to first output by turn", "", "seconds (median)")
	toks := newPlot("Prompt tokens by turn", "turn", "tokens (mean)")
	leg := newLegend()
	maxTurn := 0
	i := 0
	for _, run := range res.Runs {
		rows := TurnRows(run.Name, recs)
		if len(rows) == 0 {
			continue
		}
		var fv, ft, pt, ct, pre plotter.XYs
		cached := false
		for _, r := range rows {
			x := float64(r.Turn)
			fv = append(fv, plotter.XY{X: x, Y: r.FirstVisibleP50})
			ft = append(ft, plotter.XY{X: x, Y: r.FirstTokenP50})
			pt = append(pt, plotter.XY{X: x, Y: r.PromptTokens})
			ct = append(ct, plotter.XY{X: x, Y: r.CachedTokens})
			pre = append(pre, plotter.XY{X: x, Y: r.PromptTokens - r.CachedTokens})
			cached = cached || r.CachedKnown
			maxTurn = max(maxTurn, r.Turn)
		}
		series := []struct {
			p    *plot.Plot
			name string
			xys  plotter.XYs
			key  string
		}{
			{lat, "first visible (client)", fv, KeyFirstVisible},
			{lat, "first token (client)", ft, KeyFirstToken},
			{toks, "prompt tokens", pt, KeyPromptTokens},
		}
		if cached {
			series = append(series, struct {
				p    *plot.Plot
				name string
				xys  plotter.XYs
				key  string
			}{toks, "cached tokens (prefix cache)", ct, KeyCachedTokens}, struct {
				p    *plot.Plot
				name string
				xys  plotter.XYs
				key  string
			}{toks, "prefilled tokens (prompt - cached)", pre, KeyPrefilled})
		}
		for _, s := range series {
			if err := addRunLine(s.p, leg, run.Name+": "+s.name, s.xys, Palette[s.key], i); err != nil {
				return nil, err
			}
		}
		i++
	}
	if maxTurn == 0 {
		return nil, fmt.Errorf("turns chart: no session records")
	}
	var ticks []plot.Tick
	for t := 1; t <= maxTurn; t++ {
		ticks = append(ticks, plot.Tick{Value: float64(t), Label: strconv.Itoa(t)})
	}
	for _, p := range []*plot.Plot{lat, toks} {
		p.Title.TextStyle.Font.Size = labelSize
		p.X.Min, p.X.Max = 0.8, float64(maxTurn)+0.2
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.Y.Min = 0
		p.Y.Tick.Marker = linearTicks{}
		grid := plotter.NewGrid()
		grid.Vertical.Color = color.Gray{0xdd}
		grid.Horizontal.Color = color.Gray{0xee}
		p.Add(grid)
	}
	f := figure{title: "Multi-turn sessions: latency and prompt by turn", panels: []*plot.Plot{lat, toks}, legend: leg,
		footnote: joinNotes("Engine TTFT by turn is not on /metrics; the client's first token stands for it. "+
			"Cached tokens are the server's usage.prompt_tokens_details.cached_tokens.", s.Note(res), clockNote(res))}
	return f.render()
}

// addRunLine adds a line with points for run number i (dashed by run).
func addRunLine(p *plot.Plot, leg *plot.Legend, name string, xys plotter.XYs, col color.RGBA, i int) error {
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color, l.Width, l.Dashes = col, 3, runDash(i)
	if col == Palette[KeyFirstToken] {
		l.Width = 1.5 // often on top of first visible: keep both in sight
	}
	pts.Color, pts.Radius = col, 3.5
	p.Add(l, pts)
	leg.Add(name, l, pts)
	return nil
}

// TrafficText says what traffic a run sent, from its workload block: the
// source (and its file's hash), the length distributions, sessions, shared
// prefixes, trace replay and seed; "" for the seed's fixed prompt.
func TrafficText(w result.Workload) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	switch {
	case w.Source == "" || w.Source == "fixed":
		return ""
	case w.SourceFile != "":
		sha := w.SourceSHA256
		if len(sha) > 12 {
			sha = sha[:12]
		}
		add("%s `%s` (sha256 %s…)", w.Source, w.SourceFile, sha)
		if w.SkippedEntries > 0 {
			add("%d entries skipped", w.SkippedEntries)
		}
	default:
		add("%s", w.Source)
	}
	if w.InputTokens != "" {
		add("input tokens %s", w.InputTokens)
	}
	if w.OutputTokens != "" {
		add("output tokens %s", w.OutputTokens)
	}
	if w.Turns != "" {
		add("sessions of %s turns", w.Turns)
	}
	if w.ThinkTimeS != "" {
		add("think time %s s", w.ThinkTimeS)
	}
	if w.PrefixGroups > 0 {
		add("%d shared prefixes of %d tokens (%s pick)", w.PrefixGroups, w.SharedPrefixTokens, w.PrefixPick)
	}
	if t := w.Trace; t != nil {
		tr := fmt.Sprintf("trace of %d requests over %.3g s, %gx speed", t.Entries, t.SpanS, t.Speed)
		if t.WindowDurationS > 0 {
			tr += fmt.Sprintf(", window %g s + %g s", t.WindowStartS, t.WindowDurationS)
		}
		add("%s", tr)
	}
	add("seed %d", w.Seed)
	return strings.Join(parts, ", ")
}

// writeSessionLines writes, under a run's turn table, each turn's time to
// usable output (a tool call's arguments complete, a structured answer's
// JSON) beside its first visible output, and the run's session figures
// (result.SessionStats).
func writeSessionLines(b *strings.Builder, run *result.Run, rows []TurnRow) {
	var parts []string
	for _, r := range rows {
		if r.UsableN > 0 {
			parts = append(parts, fmt.Sprintf("turn %d %s (first visible %s, %d answers)", r.Turn, secsText(r.UsableP50), secsText(r.FirstVisibleP50), r.UsableN))
		}
	}
	if len(parts) > 0 {
		b.WriteString("Usable output by turn (client, p50): " + strings.Join(parts, "; ") + "\n\n")
	}
	if s := run.Sessions; s != nil && s.LengthS != nil {
		fmt.Fprintf(b, "Sessions: %d whole of %d (every turn ok), length p50 %s, max %s (first send to last answer, think time included)\n\n",
			s.Whole, s.Sessions, secsText(s.LengthS.Median), secsText(s.LengthS.Max))
	}
}
