package result

import (
	"fmt"
	"strings"
	"time"
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
type SLO struct {
	TTFT, TPOT, ITL, E2E, TTFO time.Duration
}

// SLOKeys are the keys --slo takes, in the order String writes them.
var SLOKeys = []string{"ttft", "tpot", "itl", "e2e", "ttfo"}

// sloForm is the expected form, quoted by every parse error.
const sloForm = "KEY=DURATION[,KEY=DURATION...], keys ttft, tpot, itl, e2e, ttfo (e.g. ttft=200ms,tpot=50ms)"

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
		f := slo.field(key)
		if f == nil {
			return SLO{}, fmt.Errorf("unknown key %q: expected one of %s", key, strings.Join(SLOKeys, ", "))
		}
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

// String is the canonical form, "ttft=200ms,tpot=50ms", which ParseSLO reads.
func (s SLO) String() string {
	var parts []string
	for _, k := range SLOKeys {
		if d := *s.field(k); d > 0 {
			parts = append(parts, k+"="+shortDuration(d))
		}
	}
	return strings.Join(parts, ",")
}

// Judge reports, for record r, whether it attains s and, per key of s,
// whether it met that key. A failed request attains nothing and meets no
// key. met is indexed like SLOKeys; keys not in s stay false.
func (s SLO) Judge(r *Record) (attained bool, met [5]bool) {
	if r.Error != "" {
		return false, met
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
		switch {
		case i == 0 || i == 3 || i == 4: // ttft, e2e and ttfo must have been reached
			met[i] = q.ok && within(q.limit, q.v)
		default:
			met[i] = !q.ok || within(q.limit, q.v)
		}
		attained = attained && met[i]
	}
	return attained, met
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
	ok, met := s.Judge(r)
	if ok {
		g.Attained++
	}
	for k, m := range met {
		if m {
			g.Met[SLOKeys[k]]++
		}
	}
}

// Finish sets the attainment and the rate over a run of durationS seconds.
func (g *Goodput) Finish(durationS float64) {
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
	Note         string  `json:"note,omitempty"`  // why the answer is only a bound, if it is
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
	if m.Note != "" {
		s += "; " + m.Note
	}
	return s
}
