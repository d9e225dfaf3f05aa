package report

import (
	"fmt"
	"image/color"
	"slices"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// FilePath is the chart of what the path to the engine adds, per request
// (run --direct-url).
const FilePath = "path.png"

// PathPair is a run sent through the path under test and its direct side:
// the same requests, sent one after the other in alternating order.
type PathPair struct {
	Proxied, Direct *result.Run
	// Added first visible output and E2E, per request (proxied - direct),
	// over the requests that succeeded on both paths, by index and turn.
	AddedFirstVisible, AddedE2E []float64
}

// PathPairs finds the runs of res sent with --direct-url and pairs their
// requests (recs: measured outcomes of both sides).
func PathPairs(res *result.Results, recs []result.Record) []PathPair {
	var pairs []PathPair
	for i := range res.Runs {
		p := &res.Runs[i]
		if p.Workload.Path != result.PathProxied {
			continue
		}
		j := slices.IndexFunc(res.Runs, func(r result.Run) bool {
			return r.Name == p.Workload.PairedWith && r.Workload.Path == result.PathDirect
		})
		if j < 0 {
			continue
		}
		pair := PathPair{Proxied: p, Direct: &res.Runs[j]}
		pair.added(measured(p.Name, recs), measured(res.Runs[j].Name, recs))
		pairs = append(pairs, pair)
	}
	return pairs
}

// added fills the per-request differences from both sides' successful
// measured records (measured's, in index order).
func (pp *PathPair) added(prox, direct []result.Record) {
	type key struct{ index, turn int }
	byKey := make(map[key]*result.Record, len(direct))
	for i := range direct {
		if direct[i].Error == "" {
			byKey[key{direct[i].Index, direct[i].Turn}] = &direct[i]
		}
	}
	for _, p := range prox {
		d, ok := byKey[key{p.Index, p.Turn}]
		if !ok || p.Error != "" {
			continue
		}
		if p.FirstVisibleS > 0 && d.FirstVisibleS > 0 {
			pp.AddedFirstVisible = append(pp.AddedFirstVisible, p.FirstVisibleS-d.FirstVisibleS)
		}
		pp.AddedE2E = append(pp.AddedE2E, p.E2ES-d.E2ES)
	}
}

// writePath writes the "What the path adds" section: per pair of runs,
// both sides' medians, the per-request added latency and the stutter.
func writePath(b *strings.Builder, pairs []PathPair) {
	if len(pairs) == 0 {
		return
	}
	fmt.Fprintf(b, "## What the path adds\n\nEvery request went twice, one after the other in alternating order: "+
		"through the base URL (the path under test: a proxy, a gateway) and straight to the engine (`--direct-url`). "+
		"Added is proxied minus direct, per request (the same request index on both paths), over the requests that "+
		"succeeded on both; its quantiles are over one run's requests, which share its batch schedule: repeat the "+
		"run before calling a difference of a few milliseconds a finding.\n\n")
	b.WriteString("| Run | Pairs | First visible, proxied / direct (median) | Added first visible (median, p90, max) | " +
		"E2E, proxied / direct (median) | Added E2E (median, p90, max) | Tokens per arrival, proxied / direct (mean) | " +
		"Tokens in bursts, proxied / direct |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, pp := range pairs {
		p, d := pp.Proxied.Client, pp.Direct.Client
		fmt.Fprintf(b, "| %s | %d | %s / %s | %s | %s / %s | %s | %s | %s |\n", mdEscape(RunLabel(pp.Proxied.Name)),
			len(pp.AddedE2E), medianText(p.FirstVisibleS), medianText(d.FirstVisibleS), addedText(pp.AddedFirstVisible),
			medianText(p.E2ES), medianText(d.E2ES), addedText(pp.AddedE2E),
			pairStutter(p.Stutter, func(s *result.RunStutter) string { return fmt.Sprintf("%.2f", s.TokensPerArrivalMean) }, d.Stutter),
			pairStutter(p.Stutter, func(s *result.RunStutter) string { return pct(s.BurstShare) }, d.Stutter))
	}
	b.WriteString("\n")
	for _, pp := range pairs {
		if v := pathVerdict(&pp); v != "" {
			b.WriteString("- " + v + "\n")
		}
	}
	b.WriteString("\n")
}

// pathVerdict says in a sentence what the path added to a streaming run's
// first visible output, with the numbers.
func pathVerdict(pp *PathPair) string {
	if len(pp.AddedFirstVisible) == 0 || !pp.Proxied.Stream {
		return ""
	}
	s := stats.Summarize(pp.AddedFirstVisible)
	label := mdEscape(RunLabel(pp.Proxied.Name))
	text := fmt.Sprintf("**%s:** the path added a median %s to first visible output (p90 %s, %d requests of one run)",
		label, msText(s.Median), msText(s.P90), s.N)
	if st := pp.Proxied.Client.Stutter; st != nil && pp.Direct.Client.Stutter != nil &&
		st.TokensPerArrivalMean > 2*max(pp.Direct.Client.Stutter.TokensPerArrivalMean, 1) {
		text += fmt.Sprintf(" and clumped the stream: %.1f tokens per arrival against %.1f direct, so its "+
			"ITL is not the engine's", st.TokensPerArrivalMean, pp.Direct.Client.Stutter.TokensPerArrivalMean)
	}
	return text + "."
}

func medianText(s *stats.Summary) string {
	if s == nil || s.N == 0 {
		return "n/a"
	}
	return secsText(s.Median)
}

func addedText(v []float64) string {
	if len(v) == 0 {
		return "n/a"
	}
	s := stats.Summarize(v)
	return fmt.Sprintf("%s, %s, %s", msText(s.Median), msText(s.P90), msText(s.Max))
}

func pairStutter(p *result.RunStutter, f func(*result.RunStutter) string, d *result.RunStutter) string {
	if p == nil || d == nil {
		return "n/a"
	}
	return f(p) + " / " + f(d)
}

// pathChart renders path.png: the CDF of the added first visible output
// and E2E per request, one curve per pair of runs.
func pathChart(res *result.Results, pairs []PathPair) ([]byte, error) {
	var panels []*plot.Plot
	leg := newLegend()
	for k, q := range []struct {
		key, title string
		vals       func(*PathPair) []float64
	}{
		{KeyFirstVisible, "Added first visible output (proxied - direct)", func(p *PathPair) []float64 { return p.AddedFirstVisible }},
		{KeyE2EClient, "Added E2E (proxied - direct)", func(p *PathPair) []float64 { return p.AddedE2E }},
	} {
		p := newPlot(q.title, "milliseconds added per request", "fraction of requests at or below")
		p.Title.TextStyle.Font.Size = labelSize
		p.Title.TextStyle.Color = Palette[q.key]
		p.X.Tick.Marker, p.Y.Tick.Marker = linearTicks{}, linearTicks{}
		p.Y.Min, p.Y.Max = 0, 1
		for i := range pairs {
			vals := q.vals(&pairs[i])
			if len(vals) == 0 {
				continue
			}
			ms := make([]float64, len(vals))
			for j, v := range vals {
				ms[j] = 1000 * v
			}
			l, err := plotter.NewLine(cdfXYs(ms))
			if err != nil {
				return nil, fmt.Errorf("path chart: %w", err)
			}
			l.LineStyle = draw.LineStyle{Color: runShade(Palette[q.key], i, len(pairs)), Width: vg.Points(2.5), Dashes: runDash(i)}
			p.Add(l)
			if k == 0 {
				leg.Add(RunLabel(pairs[i].Proxied.Name), lineThumb{runShade(color.RGBA{0x33, 0x33, 0x33, 0xff}, i, len(pairs)), vg.Points(2.5), runDash(i)})
			}
		}
		panels = append(panels, p)
	}
	f := figure{title: "What the path adds, per request: proxied against the same request sent direct",
		panels: panels, cols: 2, legend: leg, footnote: joinNotes("Below 0: the proxied request was the faster one (noise, or the order).", clockNote(res))}
	return f.render()
}
