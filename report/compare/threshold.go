package compare

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/servebench/servebench/bench/result"
)

// Threshold is how much worse one statistic of one quantity may get before
// a significant change counts as a regression. With both parts set the
// change must pass both: at least Rel relative AND at least Abs absolute,
// so a 50% change of a 0.2 ms figure is not a finding.
type Threshold struct {
	Quantity string  `json:"quantity"`      // e.g. "client.e2e"
	Stat     string  `json:"stat"`          // e.g. "median"
	Rel      float64 `json:"rel,omitempty"` // fraction of base: 0.1 = 10%
	Abs      float64 `json:"abs,omitempty"` // in the quantity's unit (seconds for latencies)
	Off      bool    `json:"off,omitempty"` // disables a default
}

// Key is "QUANTITY.STAT", the form --max-regression uses.
func (t Threshold) Key() string { return t.Quantity + "." + t.Stat }

// String renders the threshold in --max-regression's syntax.
func (t Threshold) String() string {
	if t.Off {
		return "off"
	}
	var parts []string
	if t.Rel > 0 {
		parts = append(parts, strconv.FormatFloat(t.Rel*100, 'g', -1, 64)+"%")
	}
	if t.Abs > 0 {
		q, _ := lookupQuantity(t.Quantity)
		parts = append(parts, "+"+formatAbs(t.Abs, q.isTime()))
	}
	return strings.Join(parts, ",")
}

func formatAbs(v float64, isTime bool) string {
	if !isTime {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	if v < 1 {
		return strconv.FormatFloat(roundSig(v*1000), 'g', -1, 64) + "ms"
	}
	return strconv.FormatFloat(v, 'g', -1, 64) + "s"
}

// roundSig drops float noise such as 0.1*1000 = 100.00000000000001.
func roundSig(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	return f
}

// past reports whether going from base to cur is worse by more than t.
func (t Threshold) past(base, cur float64, higherIsWorse bool) bool {
	if t.Off || (t.Rel <= 0 && t.Abs <= 0) {
		return false
	}
	worse := cur - base
	if !higherIsWorse {
		worse = -worse
	}
	if !(worse > 0) {
		return false
	}
	if t.Rel > 0 && base != 0 && worse/math.Abs(base) <= t.Rel {
		return false
	}
	if t.Abs > 0 && worse <= t.Abs {
		return false
	}
	return true
}

// thresholdForm is the expected form, quoted by every parse error.
const thresholdForm = "QUANTITY.STAT=LIMIT, LIMIT one of 10% (relative), +5ms or +0.005s (absolute; a plain +0.01 for errors.rate and throughput), both as 10%,+5ms, or off"

// DefaultThresholds is the set applied unless overridden. It is meant not
// to cry wolf: each latency limit has an absolute floor as well as a
// relative one (sub-millisecond shifts on loopback are noise), the engine
// limits are larger because engine figures get no significance test, and
// queue wait, often ~0, is judged absolutely.
func DefaultThresholds() []Threshold {
	const ms = 1e-3
	return []Threshold{
		{Quantity: "client.first_visible", Stat: "median", Rel: 0.10, Abs: 1 * ms},
		{Quantity: "client.e2e", Stat: "median", Rel: 0.10, Abs: 1 * ms},
		{Quantity: "client.usable", Stat: "median", Rel: 0.10, Abs: 1 * ms},
		{Quantity: "client.tpot", Stat: "median", Rel: 0.10, Abs: 0.1 * ms},
		// A quarter of the tokens more in bursts, and most of them now: a
		// proxy started buffering (quantity.past).
		{Quantity: "client.burst_share", Stat: "median", Abs: 0.25},
		{Quantity: "engine.ttft", Stat: "mean", Rel: 0.10, Abs: 5 * ms},
		{Quantity: "engine.e2e", Stat: "mean", Rel: 0.10, Abs: 5 * ms},
		{Quantity: "engine.queue", Stat: "mean", Abs: 50 * ms},
		{Quantity: "throughput", Stat: "output_tokens_per_s", Rel: 0.10},
		{Quantity: "errors", Stat: "rate", Abs: 0.01},
	}
}

// ParseThreshold parses one --max-regression value, e.g.
// "client.e2e.median=10%", "engine.ttft.mean=+5ms", "client.e2e.p90=10%,+2ms"
// or "engine.queue.mean=off". Errors name the value and the expected form.
func ParseThreshold(s string) (Threshold, error) {
	fail := func(why string) (Threshold, error) {
		return Threshold{}, result.OptionErrorf("Thresholds", s, "%s; want %s", why, thresholdForm)
	}
	key, limit, ok := strings.Cut(s, "=")
	if !ok {
		return fail("no '='")
	}
	key, limit = strings.TrimSpace(key), strings.TrimSpace(limit)
	dot := strings.LastIndexByte(key, '.')
	if dot <= 0 {
		return fail("no QUANTITY.STAT before '='")
	}
	t := Threshold{Quantity: key[:dot], Stat: key[dot+1:]}
	q, ok := lookupQuantity(t.Quantity)
	if !ok {
		return fail(fmt.Sprintf("unknown quantity %q (known: %s)", t.Quantity, strings.Join(quantityNames(), ", ")))
	}
	if !q.hasStat(t.Stat) {
		return fail(fmt.Sprintf("quantity %s has no statistic %q (it has: %s)", t.Quantity, t.Stat, strings.Join(q.Stats, ", ")))
	}
	if limit == "off" {
		t.Off = true
		return t, nil
	}
	if limit == "" {
		return fail("empty limit")
	}
	for part := range strings.SplitSeq(limit, ",") {
		if err := t.parsePart(strings.TrimSpace(part), q); err != nil {
			return fail(err.Error())
		}
	}
	return t, nil
}

func (t *Threshold) parsePart(p string, q quantity) error {
	if strings.HasPrefix(p, "-") {
		return fmt.Errorf("limit %q is negative: a limit is how much worse a figure may get", p)
	}
	if num, ok := strings.CutSuffix(p, "%"); ok {
		v, err := parsePositive(strings.TrimPrefix(num, "+"))
		if err != nil {
			return fmt.Errorf("relative limit %q: %v", p, err)
		}
		if t.Rel > 0 {
			return errors.New("two relative limits")
		}
		t.Rel = v / 100
		return nil
	}
	num := strings.TrimPrefix(p, "+")
	scale := 1.0
	if q.isTime() {
		switch {
		case strings.HasSuffix(num, "ms"):
			num, scale = strings.TrimSuffix(num, "ms"), 1e-3
		case strings.HasSuffix(num, "us"), strings.HasSuffix(num, "µs"):
			num, scale = strings.TrimSuffix(strings.TrimSuffix(num, "us"), "µs"), 1e-6
		case strings.HasSuffix(num, "s"):
			num = strings.TrimSuffix(num, "s")
		default:
			return fmt.Errorf("absolute limit %q of %s needs a unit: ms, s or us", p, q.Name)
		}
	}
	v, err := parsePositive(num)
	if err != nil {
		if _, perr := strconv.ParseFloat(num, 64); perr != nil && q.isTime() {
			// "+5parsecs" ends in s: the number part is "5parsec"; say what a limit looks like.
			return fmt.Errorf("absolute limit %q of %s: expected a number and a unit (ms, s or us), e.g. +5ms", p, q.Name)
		}
		return fmt.Errorf("absolute limit %q: %v", p, err)
	}
	if t.Abs > 0 {
		return errors.New("two absolute limits")
	}
	t.Abs = v * scale
	return nil
}

func parsePositive(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v <= 0 {
		return 0, fmt.Errorf("%q is not above zero", s)
	}
	return v, nil
}

func quantityNames() []string {
	names := make([]string, len(quantities))
	for i, q := range quantities {
		names[i] = q.Name
	}
	return names
}

// activeThresholds overlays user thresholds on the defaults by key (a
// user's "off" removes a default) and returns them keyed.
func activeThresholds(user []Threshold) map[string]Threshold {
	m := map[string]Threshold{}
	for _, t := range DefaultThresholds() {
		m[t.Key()] = t
	}
	for _, t := range user {
		m[t.Key()] = t
	}
	for k, t := range m {
		if t.Off {
			delete(m, k)
		}
	}
	return m
}

// Help describes the quantities, their statistics and the default limits,
// for the command's help text.
func Help() string {
	var b strings.Builder
	b.WriteString("Quantities (QUANTITY: statistics; * = shown by default):\n")
	for _, q := range quantities {
		stats := make([]string, len(q.Stats))
		for i, s := range q.Stats {
			stats[i] = s
			if s == q.Headline {
				stats[i] += "*"
			}
		}
		fmt.Fprintf(&b, "  %-22s %s  (%s)\n", q.Name, strings.Join(stats, " "), q.Doc)
	}
	b.WriteString("Default limits (--max-regression KEY=off removes one; KEY=LIMIT replaces it):\n")
	for _, t := range DefaultThresholds() {
		fmt.Fprintf(&b, "  %s=%s\n", t.Key(), t)
	}
	return b.String()
}
