package compare

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/servebench/servebench/bench/stats"
)

// Calibration is what servebench calibrate measured: each quantity's
// run-to-run spread over K runs of one build and the relative limit that
// holds FalseAlarm when PerSide runs a side are compared by that limit
// alone (stats.Spread.Limit).
type Calibration struct {
	Runs       int          `json:"runs"`
	FalseAlarm float64      `json:"false_alarm"`
	PerSide    int          `json:"per_side"`
	Limits     []Calibrated `json:"limits"`
}

// Calibrated is one statistic's spread and limit; with several run names
// (streaming and non-streaming) the widest.
type Calibrated struct {
	Key    string    `json:"key"`
	Run    string    `json:"run"` // the run name the spread is from
	Unit   string    `json:"unit"`
	Mean   float64   `json:"mean"`
	SD     float64   `json:"sd"`
	CV     float64   `json:"cv"`
	Limit  float64   `json:"limit"` // relative: 0.042 = 4.2%
	Values []float64 `json:"values"`
}

// Calibrate measures s's runs (at least two) of one build: every
// statistic with a relative default limit, and each quantity's headline.
func Calibrate(s *Side, falseAlarm float64, perSide int) (*Calibration, error) {
	if !(falseAlarm > 0 && falseAlarm < 1) || perSide < 1 {
		return nil, fmt.Errorf("%w: false-alarm rate %g (want (0, 1)), %d runs a side (want >= 1)", ErrInput, falseAlarm, perSide)
	}
	s = sideIn(s, defaultClock(s.repeats()...)) // the means in the runs' clock, as SummarizeRepeats
	reps := s.repeats()
	if len(reps) < 2 {
		return nil, fmt.Errorf("%w: %s: %d run; calibrating needs at least 2 runs of one build (10 or more for a useful limit)", ErrInput, s.Path, len(reps))
	}
	c := &Calibration{Runs: len(reps), FalseAlarm: falseAlarm, PerSide: perSide}
	keys := map[string]bool{}
	for _, t := range DefaultThresholds() {
		keys[t.Key()] = t.Rel > 0
	}
	for _, run := range reps[0].Results.Runs {
		slo, _ := commonSLO(&run, &run)
		rs := repRuns(s, run.Name, slo)
		for _, q := range quantities {
			for _, stat := range q.Stats {
				if rel, ok := keys[q.Name+"."+stat]; (ok && !rel) || (!ok && stat != q.Headline) || q.src == fromErrors {
					continue
				}
				c.add(q, stat, run.Name, values(q, stat, rs), falseAlarm, perSide)
			}
		}
	}
	return c, nil
}

// add keeps the widest limit of a key over the run names.
func (c *Calibration) add(q quantity, stat, run string, vs []float64, falseAlarm float64, perSide int) {
	sp := stats.SpreadOf(vs)
	lim := sp.Limit(falseAlarm, perSide)
	if math.IsNaN(lim) {
		return
	}
	key := q.Name + "." + stat
	cal := Calibrated{Key: key, Run: run, Unit: q.unitOf(stat), Mean: sp.Mean, SD: sp.SD, CV: sp.CV, Limit: lim, Values: vs}
	for i := range c.Limits {
		if c.Limits[i].Key == key {
			if lim > c.Limits[i].Limit {
				c.Limits[i] = cal
			}
			return
		}
	}
	c.Limits = append(c.Limits, cal)
}

// WriteCalibration writes the spread and limits as a text table.
func WriteCalibration(w io.Writer, c *Calibration) error {
	ew := &errWriter{w: w}
	ew.printf("\nrun-to-run spread over %d runs of one build, and the limit that holds a %g%% false-alarm rate with %d run(s) a side judged by the limit alone:\n",
		c.Runs, c.FalseAlarm*100, c.PerSide)
	cells := [][]string{{"quantity", "run", "mean", "run-to-run SD", "CV", "limit"}}
	for _, l := range c.Limits {
		cells = append(cells, []string{l.Key, l.Run, fmtValue(l.Mean, l.Unit), fmtValue(l.SD, l.Unit),
			fmt.Sprintf("%.1f%%", l.CV*100), fmt.Sprintf("%.1f%%", l.Limit*100)})
	}
	writeTable(ew, "  ", cells, []bool{false, false, true, true, true, true})
	return ew.err
}

// WriteLimitsFile writes c's limits where ReadLimits (--limits-from)
// reads them: one QUANTITY.STAT=LIMIT a line, the spread as a comment.
func WriteLimitsFile(path string, c *Calibration) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# servebench calibrate: %d runs of one build; limits hold a %g%% false-alarm rate with %d run(s) a side (limits alone)\n",
		c.Runs, c.FalseAlarm*100, c.PerSide)
	for _, l := range c.Limits {
		fmt.Fprintf(&b, "%-40s # run %s: mean %s, run-to-run SD %s (CV %.2f%%)\n", FormatLimit(l.Key, l.Limit), l.Run,
			fmtValue(l.Mean, l.Unit), fmtValue(l.SD, l.Unit), l.CV*100)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing limits: %w", err)
	}
	return nil
}
