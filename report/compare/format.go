package compare

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/servebench/servebench/bench/result"
)

// fmtValue renders a figure in its unit, scaled for reading.
func fmtValue(v float64, unit string) string {
	if math.IsNaN(v) {
		return "-"
	}
	switch unit {
	case "s":
		switch a := math.Abs(v); {
		case a == 0:
			return "0"
		case a >= 1:
			return fmt.Sprintf("%.3fs", v)
		case a >= 1e-3:
			return fmt.Sprintf("%.2fms", v*1e3)
		default:
			return fmt.Sprintf("%.1fµs", v*1e6)
		}
	case "tokens/s":
		return fmt.Sprintf("%.1f tok/s", v)
	case "req/s":
		return fmt.Sprintf("%.2f req/s", v)
	case "fraction":
		return fmt.Sprintf("%.1f%%", v*100)
	}
	if math.Abs(v) >= 1000 { // token counts: whole
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v) // a spread of 0.1571 tokens, not 0.15705975611079798
}

func fmtChange(c *float64) string {
	if c == nil {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", *c*100)
}

func fmtP(p *float64) string {
	switch {
	case p == nil:
		return "-"
	case *p < 0.001:
		return "<0.001"
	}
	return fmt.Sprintf("%.3f", *p)
}

// MarshalJSON writes NaN figures (a side without the quantity) as null,
// which encoding/json cannot do by itself.
func (r Row) MarshalJSON() ([]byte, error) {
	type plain Row
	return json.Marshal(struct {
		plain
		Base *float64 `json:"base"`
		New  *float64 `json:"new"`
	}{plain(r), finite(r.Base), finite(r.New)})
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// describeWorkload is a one-line summary of a workload.
func describeWorkload(w result.Workload, stream bool) string {
	parts := []string{orDash(string(w.Mode))}
	switch w.Mode {
	case result.ModeConcurrent:
		parts[0] = fmt.Sprintf("concurrency %d", w.Concurrency)
	case result.ModeRate:
		parts[0] = fmt.Sprintf("rate %g/s %s", w.Rate, w.Arrival)
	}
	if stream {
		parts = append(parts, "stream")
	} else {
		parts = append(parts, "non-stream")
	}
	parts = append(parts, orDash(w.Endpoint), "model "+orDash(w.Model), fmt.Sprintf("max_tokens %d", w.MaxTokens))
	if w.ExactLength {
		parts = append(parts, "exact length")
	}
	prompt := "prompt " + orDash(w.PromptKind)
	if w.PromptTokens > 0 {
		prompt += fmt.Sprintf(" %d tokens", w.PromptTokens)
	}
	parts = append(parts, prompt)
	if w.Source != "" && w.Source != w.PromptKind { // the traffic beyond the prompt kind (issue 11)
		src := "source " + w.Source
		if w.SourceFile != "" {
			src += " " + filepath.Base(w.SourceFile)
		}
		parts = append(parts, src)
	}
	if w.InputTokens != "" && w.PromptTokens == 0 {
		parts = append(parts, "input "+w.InputTokens)
	}
	if w.OutputTokens != "" {
		parts = append(parts, "output "+w.OutputTokens)
	}
	if w.Turns != "" {
		parts = append(parts, w.Turns+" turns")
	}
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// manifestRows are the facts shown for both sides at the top of a report.
func manifestRows(b, n SideInfo) [][3]string {
	row := func(name string, f func(SideInfo) string) [3]string { return [3]string{name, f(b), f(n)} }
	return [][3]string{
		row("path", func(s SideInfo) string { return s.Path }),
		row("servebench", func(s SideInfo) string { return orDash(s.Manifest.Version) }),
		row("command line", func(s SideInfo) string { return orDash(strings.Join(s.Manifest.CommandLine, " ")) }),
		row("started", func(s SideInfo) string { return fmtTime(s.Manifest.StartedAt) }),
		row("host", func(s SideInfo) string {
			h := s.Manifest.Host
			if h == (result.Host{}) {
				return "-"
			}
			return fmt.Sprintf("%s/%s, %d CPUs, %s", orDash(h.OS), orDash(h.Arch), h.CPUs, orDash(h.GoVersion))
		}),
		row("server", func(s SideInfo) string { return orDash(s.Server.BaseURL) }),
		row("server command", func(s SideInfo) string { return orDash(s.Server.Command) }),
		row("server version", func(s SideInfo) string { return orDash(s.Server.Version) }),
		row("model", func(s SideInfo) string { return orDash(s.Server.Model) }),
		row("bundled engine", func(s SideInfo) string {
			bd := s.Server.Bundled
			if bd == nil {
				return "-"
			}
			return fmt.Sprintf("%s / %s, speedup %g, seed %d", bd.GPU, bd.Model, bd.Speedup, bd.Seed)
		}),
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// verdictLine sums up the report in one line.
func verdictLine(r *Report) string {
	regs := r.Regressions()
	if len(regs) == 0 {
		n := 0
		for _, run := range r.Runs {
			n += len(run.Rows)
		}
		return fmt.Sprintf("no regression (%s in %s)", plural(n, "figure"), plural(len(r.Runs), "run"))
	}
	return fmt.Sprintf("REGRESSION: %s", plural(len(regs), "regressed figure"))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
