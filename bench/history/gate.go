package history

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/servebench/servebench/bench/stats"
)

// BaselinePrefix starts a --baseline that names a history rather than a
// results directory: history:DB[?branch=main&last=20].
const BaselinePrefix = "history:"

// DefaultGateKeys are the statistics the history gate judges unless the
// baseline names others (stat=...): the client's headline latencies and
// the throughput.
var DefaultGateKeys = []string{"client.first_visible.median", "client.e2e.median", "client.tpot.median", "throughput.output_tokens_per_s"}

// Gate defaults: the last 20 comparable runs, at least 5 of them to judge
// at all, and a 99% prediction interval, so that with the four default
// statistics an unchanged build fails about 4 x 0.5% = 2% of the time
// (only the worse side of each interval fails).
const (
	DefaultLast      = 20
	DefaultMinRuns   = 5
	DefaultGateLevel = 0.99
)

// Baseline is a parsed history:DB[?...] baseline: which past runs a new
// run is judged against, and how.
type Baseline struct {
	DSN    string // the history, as Open takes it
	Branch string // only runs of this branch ("" any)
	Last   int    // the last N comparable runs
	Since  time.Duration
	Min    int      // fewer comparable runs than this: no verdict
	Level  float64  // the prediction interval's level
	Keys   []string // statistics judged, QUANTITY.STAT
	// Floors are limits a change must pass too to fail the gate, by key
	// (--max-regression, --limits-from): a change the noise does not
	// explain but too small to matter is "worse, within limit".
	Floors map[string]Floor
}

// Floor is a limit on a worse change: relative to the history's mean
// (0.05 = 5%) and absolute, in the statistic's unit; each set part must
// be passed, as compare's limits.
type Floor struct{ Rel, Abs float64 }

// passed reports whether going from mean to v (worse by worse > 0) passes f.
func (f Floor) passed(mean, worse float64) bool {
	if f.Rel > 0 && mean != 0 && worse/math.Abs(mean) <= f.Rel {
		return false
	}
	return !(f.Abs > 0 && worse <= f.Abs)
}

// IsBaseline reports whether a --baseline names a history.
func IsBaseline(s string) bool { return strings.HasPrefix(s, BaselinePrefix) }

// baselineKeys are the query keys ParseBaseline reads; any other key is
// the database's (a postgres URL's sslmode, say).
var baselineKeys = []string{"branch", "last", "since", "min", "level", "stat"}

// ParseBaseline reads history:DB[?branch=B&last=N&since=30d&min=M&level=L&stat=Q.S...].
func ParseBaseline(s string) (Baseline, error) {
	b := Baseline{Last: DefaultLast, Min: DefaultMinRuns, Level: DefaultGateLevel, Keys: DefaultGateKeys}
	rest, ok := strings.CutPrefix(s, BaselinePrefix)
	if !ok || rest == "" {
		return b, fmt.Errorf("expected %sDB[?branch=main&last=20]", BaselinePrefix)
	}
	db, query, _ := strings.Cut(rest, "?")
	if i := strings.LastIndex(rest, "?"); IsPostgres(rest) && i >= 0 {
		db, query = rest[:i], rest[i+1:]
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return b, fmt.Errorf("%q: %w", query, err)
	}
	if err := b.read(q); err != nil {
		return b, err
	}
	for _, k := range baselineKeys {
		q.Del(k)
	}
	if len(q) > 0 && !IsPostgres(db) {
		return b, fmt.Errorf("unknown key %q: expected any of %s", firstKey(q), strings.Join(baselineKeys, ", "))
	}
	if len(q) > 0 {
		db += "?" + q.Encode()
	}
	b.DSN = db
	return b, nil
}

func firstKey(q url.Values) string {
	for k := range q {
		return k
	}
	return ""
}

func (b *Baseline) read(q url.Values) error {
	b.Branch = q.Get("branch")
	for _, n := range []struct {
		key string
		v   *int
		min int
	}{{"last", &b.Last, 2}, {"min", &b.Min, 2}} {
		if s := q.Get(n.key); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil || v < n.min {
				return fmt.Errorf("%s=%s: expected a whole number of runs, at least %d", n.key, s, n.min)
			}
			*n.v = v
		}
	}
	if s := q.Get("level"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v > 0 && v < 1) {
			return fmt.Errorf("level=%s: expected a prediction interval's level in (0, 1), e.g. 0.99", s)
		}
		b.Level = v
	}
	if s := q.Get("since"); s != "" {
		d, err := ParseAge(s)
		if err != nil {
			return fmt.Errorf("since=%s: %w", s, err)
		}
		b.Since = d
	}
	if ks := q["stat"]; len(ks) > 0 {
		b.Keys = ks
	}
	return nil
}

// ParseAge reads an age such as 30d, 12h or 90m (a Go duration, or a
// whole number of days).
func ParseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err == nil && n > 0 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("expected an age such as 30d, 12h or 90m")
	}
	return d, nil
}

// Judgement is one new run judged against its comparable history.
type Judgement struct {
	Run     string
	History []Entry // the comparable past runs, oldest first
	Rows    []GateRow
	// Note says why there is no verdict (too few comparable runs).
	Note string
}

// GateRow is one statistic of a judged run.
type GateRow struct {
	Key       string
	Test      stats.HistoryTest
	Regressed bool // outside the prediction interval on the worse side, and past its floor
	// WithinLimit: outside the interval on the worse side, but not past
	// the key's floor.
	WithinLimit bool
}

// Regressed reports whether any statistic regressed.
func (j *Judgement) Regressed() bool {
	for _, r := range j.Rows {
		if r.Regressed {
			return true
		}
	}
	return false
}

// Judged reports whether the run had enough history for a verdict.
func (j *Judgement) Judged() bool { return j.Note == "" }

// HigherIsWorse: latencies and error rates, not throughput or goodput.
func HigherIsWorse(key string) bool {
	return !strings.HasPrefix(key, "throughput.") && !strings.HasPrefix(key, "goodput.")
}

// Judge judges each new entry (a run not yet stored) against the last
// b.Last runs in st with its workload and server fingerprints (and
// branch, and age). The newest runs that failed their gate one after
// another (the current failing streak) are left out, so a regression
// stays one night after night instead of becoming its own baseline; a
// failure followed by a pass was noise after all and counts as such (left
// out, it would make the history look quieter than it is). A statistic
// regresses when the new run's value falls outside the prediction interval
// of one more run drawn from that history (stats.AgainstHistory), on the
// worse side.
func (b Baseline) Judge(ctx context.Context, st *Store, news []Entry, now time.Time) ([]Judgement, error) {
	var out []Judgement
	for i := range news {
		e := &news[i]
		f := Filter{WorkloadFP: e.WorkloadFP, ServerFP: e.ServerFP, Branch: b.Branch, Last: b.Last + maxStreak}
		if b.Since > 0 {
			f.Since = now.Add(-b.Since)
		}
		past, err := st.Query(ctx, f)
		if err != nil {
			return nil, err
		}
		past = beforeStreak(past, b.Last)
		j := Judgement{Run: e.Run, History: past}
		if len(past) < b.Min {
			j.Note = fmt.Sprintf("%d comparable runs in the history, need %d: no verdict", len(past), b.Min)
			out = append(out, j)
			continue
		}
		for _, key := range b.Keys {
			row, ok, err := judgeKey(key, e, past, b.Level, b.Floors)
			if err != nil {
				return nil, err
			}
			if ok {
				j.Rows = append(j.Rows, row)
			}
		}
		out = append(out, j)
	}
	return out, nil
}

// maxStreak bounds how far back Judge looks past a failing streak.
const maxStreak = 100

// beforeStreak drops the newest runs that failed their gate in a row and
// keeps the last n of the rest.
func beforeStreak(past []Entry, n int) []Entry {
	end := len(past)
	for end > 0 && past[end-1].Gate == GateFail {
		end--
	}
	return past[max(0, end-n):end]
}

// judgeKey tests one statistic; ok is false when the new run or too few
// past runs have it.
func judgeKey(key string, e *Entry, past []Entry, level float64, floors map[string]Floor) (GateRow, bool, error) {
	v, ok := e.Stats[key]
	if !ok {
		return GateRow{}, false, nil
	}
	var hist []float64
	for _, p := range past {
		if x, ok := p.Stats[key]; ok {
			hist = append(hist, x)
		}
	}
	t, err := stats.AgainstHistory(hist, v, level)
	if errors.Is(err, stats.ErrTooFewRuns) {
		return GateRow{}, false, nil
	}
	if err != nil {
		return GateRow{}, false, fmt.Errorf("%s: %w", key, err)
	}
	outside, by := t.Value > t.Hi, t.Value-t.Mean
	if !HigherIsWorse(key) {
		outside, by = t.Value < t.Lo, -by
	}
	row := GateRow{Key: key, Test: t, Regressed: outside}
	if f, ok := floors[key]; ok && outside && !f.passed(t.Mean, by) {
		row.Regressed, row.WithinLimit = false, true
	}
	return row, true, nil
}

// WriteJudgements writes the gate's verdicts as text.
func WriteJudgements(w io.Writer, b Baseline, js []Judgement) error {
	where := "any branch"
	if b.Branch != "" {
		where = "branch " + b.Branch
	}
	fmt.Fprintf(w, "history gate: each run against the last %d comparable runs (%s; same workload and server) in %s\n", b.Last, where, Redact(b.DSN))
	fmt.Fprintf(w, "test: the new run's value against the %g%% prediction interval of one more run of the history (Student t; each run one observation)\n", b.Level*100)
	for _, j := range js {
		fmt.Fprintf(w, "\nrun %q: ", j.Run)
		if !j.Judged() {
			fmt.Fprintln(w, j.Note)
			continue
		}
		fmt.Fprintf(w, "%d past runs, %s .. %s\n", len(j.History), j.History[0].StartedAt.Format(time.DateTime), j.History[len(j.History)-1].StartedAt.Format(time.DateTime))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  statistic\tnew\thistory mean\tchange vs prediction interval\tverdict")
		for _, r := range j.Rows {
			verdict := "ok"
			switch {
			case r.Regressed:
				verdict = "REGRESSION"
			case r.WithinLimit:
				verdict = "worse, within limit"
			case r.Test.Outside():
				verdict = "better"
			}
			fmt.Fprintf(tw, "  %s\t%.6g\t%.6g\t%s\t%s\n", r.Key, r.Test.Value, r.Test.Mean, r.Test, verdict)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
