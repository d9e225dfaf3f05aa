package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// RepeatSummary is the run-level summary of a side of several runs of one
// workload (--repeats N): each quantity's headline statistic per run, and
// their mean with its 95% interval. It is DIR/repeats.json.
type RepeatSummary struct {
	Path    string          `json:"path"`
	Repeats int             `json:"repeats"`
	Clock   string          `json:"clock,omitempty"` // the figures' time, as the runs' tables: modelled when the engine was sped up
	Runs    []RepeatRunStat `json:"runs"`
}

// RepeatRunStat summarises one run name across the repeats.
type RepeatRunStat struct {
	Name string       `json:"name"`
	Rows []RepeatStat `json:"rows"`
}

// RepeatStat is one statistic across runs: N values, their mean, the
// run-to-run SD and CV, and the mean's 95% interval (Student t, N-1 dof).
type RepeatStat struct {
	Key    string    `json:"key"` // QUANTITY.STAT
	Unit   string    `json:"unit"`
	N      int       `json:"n"`
	Mean   float64   `json:"mean"`
	SD     *float64  `json:"sd"` // null with one run
	CV     *float64  `json:"cv"`
	Lo     *float64  `json:"ci95_lo"`
	Hi     *float64  `json:"ci95_hi"`
	Values []float64 `json:"values"`
}

// SummarizeRepeats computes s's run-level summary: the headline statistic
// of every quantity each run name has, and with extra (keys QUANTITY.STAT,
// e.g. the gate's limits) those statistics too, in the clock the runs
// were recorded in (modelled when any was, as compare reads them).
func SummarizeRepeats(s *Side, extra []string) *RepeatSummary {
	clock := defaultClock(s.repeats()...)
	s = sideIn(s, clock)
	reps := s.repeats()
	sum := &RepeatSummary{Path: s.Path, Repeats: len(reps), Clock: clock}
	for _, run := range reps[0].Results.Runs {
		slo, _ := commonSLO(&run, &run)
		rs := repRuns(s, run.Name, slo)
		rr := RepeatRunStat{Name: run.Name}
		for _, q := range quantities {
			for _, stat := range q.Stats {
				if stat != q.Headline && !slices.Contains(extra, q.Name+"."+stat) {
					continue
				}
				if st, ok := repeatStat(q, stat, rs); ok {
					rr.Rows = append(rr.Rows, st)
				}
			}
		}
		sum.Runs = append(sum.Runs, rr)
	}
	return sum
}

func repeatStat(q quantity, stat string, rs []repRun) (RepeatStat, bool) {
	vs := values(q, stat, rs)
	if len(vs) == 0 {
		return RepeatStat{}, false
	}
	sp := stats.SpreadOf(vs)
	st := RepeatStat{Key: q.Name + "." + stat, Unit: q.unitOf(stat), N: sp.N, Mean: sp.Mean, Values: vs}
	if sp.N >= 2 {
		st.SD, st.CV = finite(sp.SD), finite(sp.CV)
		_, lo, hi, _ := stats.MeanInterval(vs, 0)
		st.Lo, st.Hi = finite(lo), finite(hi)
	}
	return st, true
}

// WriteRepeatSummary writes the summary as a text table.
func WriteRepeatSummary(w io.Writer, s *RepeatSummary) error {
	ew := &errWriter{w: w}
	ew.printf("\nacross %d runs (each run one observation; 95%% interval of the mean, Student t):\n", s.Repeats)
	for _, run := range s.Runs {
		ew.printf("run %q:\n", run.Name)
		cells := [][]string{{"quantity", "mean", "95% CI", "run-to-run SD", "CV", "n"}}
		for _, r := range run.Rows {
			ci, sd, cv := "-", "-", "-"
			if r.Lo != nil && r.Hi != nil {
				ci = "[" + fmtValue(*r.Lo, r.Unit) + ", " + fmtValue(*r.Hi, r.Unit) + "]"
			}
			if r.SD != nil {
				sd = fmtValue(*r.SD, r.Unit)
			}
			if r.CV != nil {
				cv = fmt.Sprintf("%.1f%%", *r.CV*100)
			}
			cells = append(cells, []string{r.Key, fmtValue(r.Mean, r.Unit), ci, sd, cv, fmt.Sprint(r.N)})
		}
		writeTable(ew, "  ", cells, []bool{false, true, true, true, true, true})
	}
	return ew.err
}

// WriteRepeatsFile writes s as dir/repeats.json.
func WriteRepeatsFile(dir string, s *RepeatSummary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, result.RepeatsFile), append(b, '\n'), 0o644)
}
