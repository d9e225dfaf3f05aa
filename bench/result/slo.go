package result

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/bench/stats"
)

// SLO is a set of client-clock thresholds (DistServe's goodput): a request
// attains it when it succeeded and meets every threshold that is set. A zero
// field is not part of the SLO. What each key measures:
//
//   - ttft: client.first_token, from the intended send time in open-loop runs
//     (IntendedLagS added), so a server that falls behind cannot hide it.
//   - tpot: client.tpot, (e2e - first_visible) / (output_tokens - 1); for a
//     request that reasoned, the answer's (Record.AnswerTPOT): thinking
//     tokens come before first_visible.
//   - itl: the request's largest per-token inter-token latency (see
//     Record.TokenGaps): no stall between tokens longer than the bound.
//   - e2e: client.e2e, from the intended send time in open-loop runs.
//   - ttfo: client.first_visible, the first output the user sees (a
//     reasoning model's first answer token, after its thinking; AIPerf's
//     "time to first output token"), from the intended send time in
//     open-loop runs. ttft counts a thinking token as a first token.
//
// tpot and itl need a stream: a non-streaming request, or one with a single
// output token, has no gap between tokens and is not judged on them.
//
// A key written with a percentile, ttft.p99=2s, is judged on the run
// instead: the run's 99th percentile of that quantity must be within the
// bound (Goodput.Percentiles); requests are not judged on it one by one,
// so attainment counts only the keys without a percentile. A failed
// request, or one that never reached the moment, counts as beyond any
// bound in the percentile.
type SLO struct {
	TTFT, TPOT, ITL, E2E, TTFO time.Duration
	// P is, per key in SLOKeys' order, the percentile the key is judged at
	// over a run (0: per request).
	P [5]float64
}

// SLOKeys are the keys --slo takes, in the order String writes them.
var SLOKeys = []string{"ttft", "tpot", "itl", "e2e", "ttfo"}

// sloForm is the expected form, quoted by every parse error.
const sloForm = "KEY[.pNN]=DURATION[,...], keys ttft, tpot, itl, e2e, ttfo, a percentile judging the run's (e.g. ttft=200ms,tpot=50ms or ttft.p99=2s,tpot=50ms)"

// ParseSLO reads "ttft=200ms,tpot=50ms,itl=100ms,e2e=10s" (any subset, any
// order). Errors name the key at fault.
func ParseSLO(s string) (SLO, error) {
	var slo SLO
	if strings.TrimSpace(s) == "" {
		return slo, fmt.Errorf("empty SLO: expected %s", sloForm)
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if !ok {
			return SLO{}, fmt.Errorf("%q has no '=': expected %s", part, sloForm)
		}
		key, pct, err := splitPercentile(key)
		if err != nil {
			return SLO{}, err
		}
		f := slo.field(key)
		if f == nil {
			return SLO{}, fmt.Errorf("unknown key %q: expected one of %s", key, strings.Join(SLOKeys, ", "))
		}
		slo.P[slices.Index(SLOKeys, key)] = pct
		if seen[key] {
			return SLO{}, fmt.Errorf("key %s given twice", key)
		}
		seen[key] = true
		d, err := time.ParseDuration(strings.TrimSpace(val))
		if err != nil {
			return SLO{}, fmt.Errorf("key %s: %q is not a duration (e.g. 200ms, 1.5s)", key, val)
		}
		if d <= 0 {
			return SLO{}, fmt.Errorf("key %s: %v: expected a duration > 0", key, d)
		}
		*f = d
	}
	return slo, nil
}

// splitPercentile reads "ttft.p99" as ttft at the 99th percentile (pct 0:
// no percentile, "ttft").
func splitPercentile(key string) (string, float64, error) {
	name, p, ok := strings.Cut(key, ".")
	if !ok {
		return key, 0, nil
	}
	v, err := strconv.ParseFloat(strings.TrimPrefix(p, "p"), 64)
	if !strings.HasPrefix(p, "p") || err != nil || !(v > 0 && v <= 100) {
		return "", 0, fmt.Errorf("key %q: expected a percentile in (0, 100] after the dot, e.g. ttft.p99", key)
	}
	return name, v, nil
}

// field is the threshold of key, or nil for an unknown key.
func (s *SLO) field(key string) *time.Duration {
	switch key {
	case "ttft":
		return &s.TTFT
	case "tpot":
		return &s.TPOT
	case "itl":
		return &s.ITL
	case "e2e":
		return &s.E2E
	case "ttfo":
		return &s.TTFO
	}
	return nil
}

// shortDuration is d.String() without zero trailing units: 1h, not 1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// IsZero reports whether s sets no threshold.
func (s SLO) IsZero() bool { return s == SLO{} }

// String is the canonical form, "ttft.p99=2s,tpot=50ms", which ParseSLO reads.
func (s SLO) String() string {
	var parts []string
	for i, k := range SLOKeys {
		if d := *s.field(k); d > 0 {
			if s.P[i] > 0 {
				k += ".p" + strconv.FormatFloat(s.P[i], 'g', -1, 64)
			}
			parts = append(parts, k+"="+shortDuration(d))
		}
	}
	return strings.Join(parts, ",")
}

// Judge reports, for record r, whether it attains s and, per key of s,
// whether it met that key. A failed request attains nothing and meets no
// key. met is indexed like SLOKeys; keys not in s stay false. A
// percentile key is reported in met but left out of attained: the run is
// judged on it (Goodput.Percentiles).
func (s SLO) Judge(r *Record) (attained bool, met [5]bool) {
	attained, met, _ = s.judge(r)
	return attained, met
}

// judge is Judge with each key's value for the percentile keys: the
// quantity judged, or +Inf for a failed request or a moment not reached;
// a key with nothing to judge (no gap between tokens) is NaN.
func (s SLO) judge(r *Record) (attained bool, met [5]bool, vals [5]float64) {
	for i := range vals {
		vals[i] = math.Inf(1)
	}
	if r.Error != "" {
		return false, met, vals
	}
	tpot, hasTPOT := r.TPOT()
	if r.Reasoned() {
		tpot, hasTPOT = r.AnswerTPOT()
	}
	maxITL, hasITL := r.MaxTokenGap()
	within := func(limit time.Duration, v float64) bool { return v <= limit.Seconds() }
	values := [5]struct {
		limit time.Duration
		ok    bool // measurable, else the key is met by default (no gap to judge)
		v     float64
	}{
		{s.TTFT, r.FirstTokenS > 0, r.FirstTokenS + r.IntendedLagS},
		{s.TPOT, hasTPOT, tpot},
		{s.ITL, hasITL, maxITL},
		{s.E2E, r.E2ES > 0, r.E2ES + r.IntendedLagS},
		{s.TTFO, r.FirstVisibleS > 0, r.FirstVisibleS + r.IntendedLagS},
	}
	attained = true
	for i, q := range values {
		if q.limit <= 0 {
			continue
		}
		reached := i == 0 || i == 3 || i == 4 // ttft, e2e and ttfo must have been reached
		switch {
		case reached:
			met[i] = q.ok && within(q.limit, q.v)
		default:
			met[i] = !q.ok || within(q.limit, q.v)
		}
		switch {
		case q.ok:
			vals[i] = q.v
		case !reached:
			vals[i] = math.NaN()
		}
		if s.P[i] == 0 {
			attained = attained && met[i]
		}
	}
	return attained, met, vals
}

// Goodput is a run's SLO attainment (results.json runs[].goodput).
type Goodput struct {
	SLO        string  `json:"slo"`        // SLO.String()
	Attained   int     `json:"attained"`   // measured requests that met every threshold
	Requests   int     `json:"requests"`   // measured requests (failed ones included: they never attain)
	Attainment float64 `json:"attainment"` // percent: 100 * attained / requests
	RatePerS   float64 `json:"rate_per_s"` // attained / the run's duration
	// Met counts, per SLO key, the measured requests that met that key alone.
	Met map[string]int `json:"met,omitempty"`
	// Percentiles are the SLO's percentile keys (ttft.p99=2s), judged on
	// the run: Attainment counts the other keys only.
	Percentiles []SLOPercentile `json:"percentiles,omitempty"`

	hists [5]*stats.Hist // the percentile keys' values, while Add runs
}

// beyondBoundS stands, in a percentile key's values, for a failed request
// or a moment never reached: an hour, past any SLO bound.
const beyondBoundS = 3600.0

// SLOPercentile is one percentile key judged on a run.
type SLOPercentile struct {
	Key    string  `json:"key"`     // e.g. ttft.p99
	LimitS float64 `json:"limit_s"` // the bound
	// ValueS is the run's percentile (within 0.1%), failed requests and
	// moments not reached counted as beyond any bound: 3600 s, the
	// histogram's ceiling.
	ValueS float64 `json:"value_s"`
	Met    bool    `json:"met"`
	N      int     `json:"n"` // requests judged
}

// Held reports whether the run met g's SLO: its percentile keys within
// their bounds and at least target percent of its requests attaining the
// rest (a run that measured no request holds nothing).
func (g *Goodput) Held(target float64) bool {
	if g == nil || g.Requests == 0 || g.Attainment < target {
		return false
	}
	for _, p := range g.Percentiles {
		if !p.Met {
			return false
		}
	}
	return true
}

// NewGoodput judges the measured outcomes among recs (Record.Outcome)
// against s over a run that lasted durationS seconds.
func NewGoodput(s SLO, recs []Record, durationS float64) *Goodput {
	g := s.EmptyGoodput()
	for i := range recs {
		g.Add(s, &recs[i])
	}
	g.Finish(durationS)
	return g
}

// EmptyGoodput is a Goodput for s that has judged nothing yet: Add records
// one at a time (a run that keeps no records), then Finish.
func (s SLO) EmptyGoodput() *Goodput {
	g := &Goodput{SLO: s.String(), Met: map[string]int{}}
	for _, k := range SLOKeys {
		if *s.field(k) > 0 {
			g.Met[k] = 0
		}
	}
	return g
}

// Add judges r against s when it is a measured outcome (Record.Outcome).
func (g *Goodput) Add(s SLO, r *Record) {
	if !r.Outcome() {
		return
	}
	g.Requests++
	ok, met, vals := s.judge(r)
	if ok {
		g.Attained++
	}
	for i, p := range s.P {
		if p > 0 && *s.field(SLOKeys[i]) > 0 && !math.IsNaN(vals[i]) {
			if g.hists[i] == nil {
				g.hists[i] = &stats.Hist{}
			}
			v := vals[i]
			if math.IsInf(v, 1) {
				v = beyondBoundS
			}
			g.hists[i].Record(v, 1)
		}
	}
	for k, m := range met {
		if m {
			g.Met[SLOKeys[k]]++
		}
	}
}

// Finish sets the attainment, the percentile keys' figures and the rate
// over a run of durationS seconds.
func (g *Goodput) Finish(durationS float64) {
	s, _ := ParseSLO(g.SLO)
	g.Percentiles = nil
	for i, p := range s.P {
		limit := *s.field(SLOKeys[i])
		if p == 0 || limit == 0 {
			continue
		}
		sp := SLOPercentile{Key: SLOKeys[i] + ".p" + strconv.FormatFloat(p, 'g', -1, 64), LimitS: limit.Seconds()}
		if h := g.hists[i]; h != nil && h.N() > 0 {
			sp.N, sp.ValueS = h.N(), h.Quantile(p)
			sp.Met = sp.ValueS <= sp.LimitS
		} else if i == 1 || i == 2 {
			sp.Met = true // no gap between tokens to judge, as per request
		}
		g.Percentiles = append(g.Percentiles, sp)
	}
	if g.Requests > 0 {
		g.Attainment = 100 * float64(g.Attained) / float64(g.Requests)
	}
	if durationS > 0 {
		g.RatePerS = float64(g.Attained) / durationS
	}
}

// TokenGaps calls yield for each gap between consecutive token-carrying
// events of r: the event gap g and the tokens k the later event carried.
// Per-token inter-token latency is g/k, counted k times (a chunk of k
// tokens, as speculative decoding or a coalescing proxy sends, stands for k
// tokens that each took g/k). Only the events r kept are seen.
func (r *Record) TokenGaps(yield func(gap float64, tokens int)) {
	for i := 1; i < len(r.Events); i++ {
		k := int(r.Events[i][1])
		if k < 1 {
			k = 1
		}
		yield(r.Events[i][0]-r.Events[i-1][0], k)
	}
}

// MaxTokenGap is r's largest per-token inter-token latency (max g/k over
// TokenGaps); false when r has fewer than two token events.
func (r *Record) MaxTokenGap() (float64, bool) {
	m, seen := 0.0, false
	r.TokenGaps(func(g float64, k int) {
		seen = true
		m = max(m, g/float64(k))
	})
	return m, seen
}

// MaxRate is the outcome of sweep --find-max-rate: the highest request rate
// whose SLO attainment held Target percent.
type MaxRate struct {
	Target       float64 `json:"target"`          // attainment percent to keep
	SLO          string  `json:"slo"`             // SLO.String()
	RatePerS     float64 `json:"rate_per_s"`      // highest rate that held (0: none did)
	MissedAtPerS float64 `json:"missed_at_per_s"` // lowest rate above it that did not (0: none)
	Steps        int     `json:"steps"`           // runs the search made
	// Rechecks counts the runs that re-checked an answer with fresh seeds
	// (sweep/tune's re-check); Confirmed says the answer held in one.
	Rechecks  int    `json:"rechecks,omitempty"`
	Confirmed bool   `json:"confirmed,omitempty"`
	Note      string `json:"note,omitempty"` // why the answer is only a bound, if it is
}

// String is the one-line answer, as printed after the table.
func (m *MaxRate) String() string {
	s := fmt.Sprintf("highest rate with SLO %s attainment >= %g%%: ", m.SLO, m.Target)
	switch {
	case m.RatePerS == 0:
		s += "none"
	default:
		s += fmt.Sprintf("%g req/s", m.RatePerS)
	}
	if m.MissedAtPerS > 0 {
		s += fmt.Sprintf(" (%g req/s missed)", m.MissedAtPerS)
	}
	s += fmt.Sprintf(", %d runs", m.Steps)
	if m.Confirmed {
		plural := "s"
		if m.Rechecks == 1 {
			plural = ""
		}
		s += fmt.Sprintf(" (%d re-check%s with fresh seeds; the answer held in its last)", m.Rechecks, plural)
	}
	if m.Note != "" {
		s += "; " + m.Note
	}
	return s
}
