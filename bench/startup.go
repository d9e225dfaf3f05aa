package bench

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/engine/launch"
)

// This file summarises repeated start-ups (servebench startup --repeat):
// engine/launch measures each one, and the statistics live here, beside
// bench/stats, because engine may not import bench.

// startupKey is one key of result.Startup, for summaries.
type startupKey struct {
	key string
	get func(*result.Startup) (float64, bool)
}

func fptr(p *float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}

func iptr(p *int64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return float64(*p), true
}

// startupKeys are result.Startup's JSON keys with accessors, in document order.
var startupKeys = []startupKey{
	{"port_open_s", func(s *result.Startup) (float64, bool) { return fptr(s.PortOpenS) }},
	{"health_ok_s", func(s *result.Startup) (float64, bool) { return fptr(s.HealthOKS) }},
	{"model_listed_s", func(s *result.Startup) (float64, bool) { return fptr(s.ModelListedS) }},
	{"first_token_s", func(s *result.Startup) (float64, bool) { return fptr(s.FirstTokenS) }},
	{"weights_load_s", func(s *result.Startup) (float64, bool) { return fptr(s.WeightsLoadS) }},
	{"weights_loaded_at_s", func(s *result.Startup) (float64, bool) { return fptr(s.WeightsLoadedAtS) }},
	{"model_gib", func(s *result.Startup) (float64, bool) { return fptr(s.ModelGiB) }},
	{"init_engine_s", func(s *result.Startup) (float64, bool) { return fptr(s.InitEngineS) }},
	{"kv_cache_tokens", func(s *result.Startup) (float64, bool) { return iptr(s.KVCacheTokens) }},
	{"max_concurrency", func(s *result.Startup) (float64, bool) { return fptr(s.MaxConcurrency) }},
	{"max_concurrency_tokens", func(s *result.Startup) (float64, bool) { return iptr(s.MaxConcurrencyTokens) }},
	{"poll_interval_s", func(s *result.Startup) (float64, bool) { return fptr(s.PollIntervalS) }},
	{"model_load_s", func(s *result.Startup) (float64, bool) { return fptr(s.ModelLoadS) }},
	{"model_loaded_at_s", func(s *result.Startup) (float64, bool) { return fptr(s.ModelLoadedAtS) }},
}

// SummarizeStartups returns, per result.Startup key, the summary over the runs that
// have it (keys no run has are left out).
func SummarizeStartups(runs []*result.Startup) map[string]*stats.Summary {
	out := map[string]*stats.Summary{}
	for _, k := range startupKeys {
		var xs []float64
		for _, r := range runs {
			if v, ok := k.get(r); ok {
				xs = append(xs, v)
			}
		}
		if s := stats.Summarize(xs); s != nil {
			out[k.key] = s
		}
	}
	return out
}

// MedianStartup returns the per-key median of runs as one result.Startup (integer
// keys rounded down), the figure results.json's server.startup holds when a
// start-up was repeated.
func MedianStartup(runs []*result.Startup) *result.Startup {
	sum := SummarizeStartups(runs)
	med := func(key string) *float64 {
		if s, ok := sum[key]; ok {
			v := s.Median
			return &v
		}
		return nil
	}
	medI := func(key string) *int64 {
		if p := med(key); p != nil {
			v := int64(*p)
			return &v
		}
		return nil
	}
	return &result.Startup{
		PortOpenS: med("port_open_s"), HealthOKS: med("health_ok_s"), ModelListedS: med("model_listed_s"),
		FirstTokenS: med("first_token_s"), WeightsLoadS: med("weights_load_s"), WeightsLoadedAtS: med("weights_loaded_at_s"),
		ModelGiB: med("model_gib"), InitEngineS: med("init_engine_s"), KVCacheTokens: medI("kv_cache_tokens"),
		MaxConcurrency: med("max_concurrency"), MaxConcurrencyTokens: medI("max_concurrency_tokens"),
		PollIntervalS: med("poll_interval_s"), ModelLoadS: med("model_load_s"), ModelLoadedAtS: med("model_loaded_at_s"),
	}
}

// phaseAt returns when run passed phase, in seconds since spawn.
func phaseAt(st *result.Startup, phase string) (float64, bool) {
	switch phase {
	case launch.PhaseSpawned:
		return 0, true
	case launch.PhaseWeightsLoaded:
		return fptr(st.WeightsLoadedAtS)
	case launch.PhasePortOpen:
		return fptr(st.PortOpenS)
	case launch.PhaseHealthOK:
		return fptr(st.HealthOKS)
	case launch.PhaseModelListed:
		return fptr(st.ModelListedS)
	case launch.PhaseModelLoaded:
		return fptr(st.ModelLoadedAtS)
	case launch.PhaseFirstToken:
		return fptr(st.FirstTokenS)
	}
	return 0, false
}

// WriteStartupText writes the phase table (time since spawn and duration of each
// phase, min/median/max when there are several runs) and the log facts.
// Phases are listed in the order they happened (by median time): a server
// that answers 503 while loading opens its port before its weights load.
func WriteStartupText(w io.Writer, runs []*launch.Measurement) error {
	if len(runs) == 0 {
		return fmt.Errorf("no start-up measured")
	}
	sts := make([]*result.Startup, len(runs))
	for i, m := range runs {
		sts[i] = (*result.Startup)(m.Startup)
	}
	rows := phaseOrder(sts)

	first := runs[0]
	fmt.Fprintf(w, "server %s, model %s; %d cold start(s)", first.BaseURL, first.Model, len(runs))
	if p := first.Startup.PollIntervalS; p != nil {
		fmt.Fprintf(w, "; times to a resolution of %.3f s (the poll interval)", *p)
	}
	fmt.Fprintln(w)
	multi := len(runs) > 1
	if multi {
		fmt.Fprintf(w, "%-16s%27s  |%24s\n", "", "since spawn (s)", "phase (s)")
		fmt.Fprintf(w, "%-16s%9s%9s%9s  |%8s%8s%8s\n", "phase", "min", "median", "max", "min", "median", "max")
	} else {
		fmt.Fprintf(w, "%-16s%16s%11s\n", "phase", "since spawn (s)", "phase (s)")
	}
	for i, phase := range rows {
		var at, dur []float64
		for _, st := range sts {
			v, ok := phaseAt(st, phase)
			if !ok {
				continue
			}
			at = append(at, v)
			if i > 0 {
				if prev, ok := phaseAt(st, rows[i-1]); ok {
					dur = append(dur, v-prev)
				}
			}
		}
		a, d := stats.Summarize(at), stats.Summarize(dur)
		if multi {
			fmt.Fprintf(w, "%-16s%s  |%s\n", phase, cells(a, 9, true), cells(d, 8, true))
		} else {
			fmt.Fprintf(w, "%-16s%s%s\n", phase, cells(a, 16, false), cells(d, 11, false))
		}
	}
	return writeFacts(w, runs)
}

// phaseOrder returns the phases some run passed, ordered by their median
// time since spawn (ties keep Phases' order).
func phaseOrder(sts []*result.Startup) []string {
	type row struct {
		phase string
		med   float64
	}
	var rows []row
	for _, p := range launch.Phases {
		var xs []float64
		for _, st := range sts {
			if v, ok := phaseAt(st, p); ok {
				xs = append(xs, v)
			}
		}
		if s := stats.Summarize(xs); s != nil {
			rows = append(rows, row{p, s.Median})
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(a.med, b.med) })
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.phase
	}
	return out
}

// cells formats a summary as one right-aligned cell of width wd (single
// run) or three: min, median, max.
func cells(s *stats.Summary, wd int, multi bool) string {
	f := func(v float64) string { return fmt.Sprintf("%*.2f", wd, v) }
	switch {
	case s == nil && multi:
		return fmt.Sprintf("%*s%*s%*s", wd, "-", wd, "-", wd, "-")
	case s == nil:
		return fmt.Sprintf("%*s", wd, "-")
	case multi:
		return f(s.Min) + f(s.Median) + f(s.Max)
	}
	return f(s.Median)
}

// writeFacts lists the log-derived facts (min/median/max over runs).
func writeFacts(w io.Writer, runs []*launch.Measurement) error {
	type fact struct {
		name, unit, format string
		get                func(*launch.Facts) *launch.Fact
	}
	facts := []fact{
		{"weights load (log)", "s", "%.2f", func(f *launch.Facts) *launch.Fact { return f.WeightsLoad }},
		{"model memory", "GiB", "%.4g", func(f *launch.Facts) *launch.Fact { return f.ModelGiB }},
		{"init engine (log)", "s", "%.2f", func(f *launch.Facts) *launch.Fact { return f.InitEngineS }},
		{"torch.compile (log)", "s", "%.2f", func(f *launch.Facts) *launch.Fact { return f.TorchCompileS }},
		{"graph capture (log)", "s", "%.0f", func(f *launch.Facts) *launch.Fact { return f.GraphCaptureS }},
		{"engine start-up (metrics)", "s", "%.2f", func(f *launch.Facts) *launch.Fact { return f.EngineStartupS }},
		{"KV cache", "tokens", "%s", func(f *launch.Facts) *launch.Fact { return f.KVCacheTokens }},
		{"max concurrency", "x", "%.2f", func(f *launch.Facts) *launch.Fact { return f.MaxConcurrency }},
		{"  at tokens per request", "tokens", "%s", func(f *launch.Facts) *launch.Fact { return f.MaxConcurrencyTokens }},
	}
	var lines []string
	for _, fa := range facts {
		var xs []float64
		for _, m := range runs {
			if v := fa.get(&m.Facts); v != nil {
				xs = append(xs, v.Value)
			}
		}
		s := stats.Summarize(xs)
		if s == nil {
			continue
		}
		f := func(v float64) string {
			if fa.format == "%s" {
				return result.FormatCount(int64(v))
			}
			return fmt.Sprintf(fa.format, v)
		}
		val := f(s.Median)
		if len(runs) > 1 && s.Min != s.Max {
			val = fmt.Sprintf("%s (min %s, max %s, n=%d)", f(s.Median), f(s.Min), f(s.Max), s.N)
		}
		lines = append(lines, fmt.Sprintf("  %-26s %s %s", fa.name, val, fa.unit))
	}
	if len(lines) == 0 {
		_, err := fmt.Fprintln(w, "log facts: none found")
		return err
	}
	_, err := fmt.Fprintf(w, "log facts (%s):\n%s\n", engineName(runs[0].Facts.Engine), strings.Join(lines, "\n"))
	return err
}

func engineName(e string) string {
	if e == "" {
		return "unknown server"
	}
	return e + " format"
}

// WriteStartupFacts writes facts parsed from a saved log (startup --from-log).
func WriteStartupFacts(w io.Writer, f launch.Facts) error {
	return writeFacts(w, []*launch.Measurement{{Facts: f}})
}
