// Package dist is the distribution grammar shared by the harness
// (--input-tokens, --output-tokens, --think-time) and the bundled engine
// (--reasoning-tokens): one parser, so that a spec means the same on both
// ends. It sits at engine level because engine/ imports nothing above it;
// bench re-exports it under its old names.
package dist

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Distribution kinds, as written in --input-tokens, --output-tokens and
// --think-time.
const (
	Const     = "const"
	Uniform   = "uniform"
	Normal    = "normal"
	Lognormal = "lognormal"
	Zipf      = "zipf"
)

// Grammar is the accepted syntax, for help texts and errors.
const Grammar = "N, uniform:MIN-MAX, normal:MEAN,STD, lognormal:MEAN,STD or zipf:S,MAX"

// Dist is a distribution of positive values: token counts (rounded) or
// seconds. Parse one with Parse; the zero Dist is invalid. A Dist is a
// value: safe for concurrent use, each caller brings its own rand.Rand.
type Dist struct {
	Kind string  // Const, Uniform, Normal, Lognormal or Zipf
	A, B float64 // const: A; uniform: MIN, MAX; normal, lognormal: MEAN, STD; zipf: S, MAX
	// mu and sigma are the lognormal's parameters of the log, from A and B.
	mu, sigma float64
}

// Parse reads a distribution: "N" (every value N), "uniform:MIN-MAX",
// "normal:MEAN,STD", "lognormal:MEAN,STD" (the mean and standard deviation
// of the values themselves, not of their log, as GuideLLM and AIPerf take
// them) or "zipf:S,MAX" (P(k) proportional to k^-S on 1..MAX, S > 1).
// Errors say what was expected; the caller names the flag.
func Parse(s string) (Dist, error) {
	kind, args, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		v, err := Number(kind)
		if err != nil || v < 0 {
			return Dist{}, fmt.Errorf("%q: expected %s", s, Grammar)
		}
		return Dist{Kind: Const, A: v}, nil
	}
	form, known := forms[kind]
	if !known {
		return Dist{}, fmt.Errorf("%q: unknown distribution %q: expected %s", s, kind, Grammar)
	}
	as, bs, ok := strings.Cut(args, form.sep)
	a, errA := Number(as)
	b, errB := Number(bs)
	if !ok || errA != nil || errB != nil {
		return Dist{}, fmt.Errorf("%q: expected %s with numbers", s, form.want)
	}
	if !form.valid(a, b) {
		return Dist{}, fmt.Errorf("%q: expected %s with %s", s, form.want, form.bounds)
	}
	d := Dist{Kind: kind, A: a, B: b}
	if kind == Lognormal {
		// The log's parameters that give the values mean A and std B.
		d.sigma = math.Sqrt(math.Log1p(b * b / (a * a)))
		d.mu = math.Log(a) - d.sigma*d.sigma/2
	}
	return d, nil
}

// forms are the distributions that take two numbers: how they are written,
// what separates the numbers and the bounds they must keep.
var forms = map[string]struct {
	want, sep, bounds string
	valid             func(a, b float64) bool
}{
	Uniform:   {"uniform:MIN-MAX", "-", "0 <= MIN <= MAX", func(a, b float64) bool { return a >= 0 && a <= b }},
	Normal:    {"normal:MEAN,STD", ",", "MEAN > 0 and STD >= 0", meanStd},
	Lognormal: {"lognormal:MEAN,STD", ",", "MEAN > 0 and STD >= 0", meanStd},
	Zipf:      {"zipf:S,MAX", ",", "S > 1 and 1 <= MAX <= 1e9", func(a, b float64) bool { return a > 1 && b >= 1 && b <= 1e9 }},
}

func meanStd(mean, std float64) bool { return mean > 0 && std >= 0 }

// Number parses a finite number (the grammar's numbers; also other
// flags' plain numbers).
func Number(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err == nil && (math.IsInf(v, 0) || math.IsNaN(v)) {
		err = fmt.Errorf("not finite")
	}
	return v, err
}

// String is the distribution as Parse reads it (recorded in results.json).
func (d Dist) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch d.Kind {
	case Const:
		return f(d.A)
	case Uniform:
		return Uniform + ":" + f(d.A) + "-" + f(d.B)
	case "":
		return ""
	}
	return d.Kind + ":" + f(d.A) + "," + f(d.B)
}

// IsZero reports whether d was never set.
func (d Dist) IsZero() bool { return d.Kind == "" }

// Sample draws one value (>= 0 for every kind but normal, which the caller
// clips).
func (d Dist) Sample(rng *rand.Rand) float64 {
	switch d.Kind {
	case Uniform:
		return d.A + rng.Float64()*(d.B-d.A)
	case Normal:
		return d.A + d.B*rng.NormFloat64()
	case Lognormal:
		return math.Exp(d.mu + d.sigma*rng.NormFloat64())
	case Zipf:
		return zipfSample(rng, d.A, d.B)
	}
	return d.A
}

// Int draws a value rounded to an integer and clipped to [lo, hi]: token
// counts.
func (d Dist) Int(rng *rand.Rand, lo, hi int) int {
	v := math.Round(d.Sample(rng))
	switch {
	case !(v >= float64(lo)): // NaN too
		return lo
	case v > float64(hi):
		return hi
	}
	return int(v)
}

// zipfSample draws k in 1..max with P(k) proportional to k^-s, with
// math/rand's rejection sampler (no table of max entries).
func zipfSample(rng *rand.Rand, s, max float64) float64 {
	z := rand.NewZipf(rng, s, 1, uint64(max)-1)
	return float64(z.Uint64() + 1)
}
