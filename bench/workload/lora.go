package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/servebench/servebench/engine/option"
)

// LoRA adapter mixes: each conversation is sent to one adapter (its
// "model"), picked by the conversation's index and the run's seed, so a
// re-run sends the same adapters in the same order. A dataset line's
// "lora" field names it instead.

// LoRA mix distributions (--lora-dist).
const (
	LoRAUniform  = "uniform"  // every adapter alike
	LoRAWeighted = "weighted" // by the weights --lora gives (NAME:WEIGHT)
	LoRAZipf     = "zipf"     // the k-th listed adapter by 1/k^s (zipf:S; s 1 by default)
)

// LoRADists lists the --lora-dist forms, for help and errors.
var LoRADists = []string{LoRAUniform, LoRAWeighted, LoRAZipf + "[:S]"}

// LoRAMix picks each conversation's adapter.
type LoRAMix struct {
	Names []string
	cum   []float64 // cumulative shares, the last 1
	desc  string
}

// ParseLoRA reads --lora (NAME[:WEIGHT],...) and --lora-dist ("": weighted
// when a weight is given, else uniform).
func ParseLoRA(spec, dist string) (*LoRAMix, error) {
	m := &LoRAMix{}
	var weights []float64
	weighted := false
	for _, part := range strings.Split(spec, ",") {
		name, w, hasW := strings.Cut(strings.TrimSpace(part), ":")
		if name == "" {
			return nil, option.Errorf("LoRA", spec, "want NAME[:WEIGHT],... (an empty name)")
		}
		weight := 1.0
		if hasW {
			v, err := strconv.ParseFloat(w, 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return nil, option.Errorf("LoRA", spec, "weight %q of %s: want a positive number", w, name)
			}
			weight, weighted = v, true
		}
		m.Names, weights = append(m.Names, name), append(weights, weight)
	}
	if dist == "" {
		dist = LoRAUniform
		if weighted {
			dist = LoRAWeighted
		}
	}
	kind, arg, hasArg := strings.Cut(dist, ":")
	switch {
	case kind == LoRAUniform && !hasArg:
		for i := range weights {
			weights[i] = 1
		}
	case kind == LoRAWeighted && !hasArg:
	case kind == LoRAZipf:
		s := 1.0
		if hasArg {
			v, err := strconv.ParseFloat(arg, 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return nil, option.Errorf("LoRADist", dist, "want zipf:S with S > 0")
			}
			s = v
		}
		for i := range weights {
			weights[i] = 1 / math.Pow(float64(i+1), s)
		}
	default:
		return nil, option.Errorf("LoRADist", dist, "expected one of %s", strings.Join(LoRADists, ", "))
	}
	total := 0.0
	for _, w := range weights {
		total += w
	}
	acc := 0.0
	parts := make([]string, len(weights))
	for i, w := range weights {
		acc += w / total
		m.cum = append(m.cum, acc)
		parts[i] = fmt.Sprintf("%s:%.3g", m.Names[i], w/total)
	}
	m.cum[len(m.cum)-1] = 1
	m.desc = dist + " " + strings.Join(parts, ",")
	return m, nil
}

// Pick is conversation i's adapter under seed.
func (m *LoRAMix) Pick(seed int64, i int) string {
	var pcg rand.PCG
	pcg.Seed(uint64(seed)^0x4c6f5241, uint64(i))
	u := rand.New(&pcg).Float64() //nolint:gosec // a load pattern
	for k, c := range m.cum {
		if u < c {
			return m.Names[k]
		}
	}
	return m.Names[len(m.Names)-1]
}

// String is the mix as results.json records it: the distribution and
// each adapter's share.
func (m *LoRAMix) String() string { return m.desc }
