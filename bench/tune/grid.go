package tune

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/option"
)

// Factor kinds (result.TuneFactor.Kind): where a setting goes.
const (
	KindEngine   = "engine"   // a bundled engine flag: --NAME=VALUE
	KindTemplate = "template" // {NAME} in --server-cmd
	KindEnv      = "env"      // NAME=VALUE in the server's environment
)

// SeedPlaceholder in --server-cmd is filled with each unit's seed (repeat r
// of a tune with seed S: S*1000+r, what the bundled engine started by tune
// gets as --seed), so a server that draws from a seed draws afresh in every
// repeat. It is reserved: no --grid names it.
const SeedPlaceholder = "{seed}"

// fieldOf names each kind's list of factors as an option, for errors
// (option.FieldError; the command words it as its flag).
var fieldOf = map[string]string{KindEngine: "EngineGrid", KindTemplate: "Grid", KindEnv: "EnvGrid"}

// Grid is the factors a tune crosses, in the order given.
type Grid []result.TuneFactor

var factorName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// ParseFactor reads "max-num-seqs=64,128,256" (a flag of kind's).
func ParseFactor(kind, s string) (result.TuneFactor, error) {
	field := fieldOf[kind]
	name, vals, ok := strings.Cut(strings.TrimSpace(s), "=")
	name = strings.TrimLeft(strings.TrimSpace(name), "-")
	if !ok || name == "" {
		return result.TuneFactor{}, option.Errorf(field, s, "expected NAME=V1,V2,... (e.g. max-num-seqs=64,128,256)")
	}
	if !factorName.MatchString(name) {
		return result.TuneFactor{}, option.Errorf(field, s, "name %q: expected letters, digits, '_', '-', '.'", name)
	}
	f := result.TuneFactor{Name: name, Kind: kind}
	for _, v := range strings.Split(vals, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			return result.TuneFactor{}, option.Errorf(field, s, "an empty value")
		}
		if slices.Contains(f.Values, v) {
			return result.TuneFactor{}, option.Errorf(field, s, "value %q given twice", v)
		}
		f.Values = append(f.Values, v)
	}
	return f, nil
}

// Check refuses a grid that cannot apply to so: no factor, a name given
// twice, engine flags without the bundled engine, placeholders missing from
// (or left unfilled in) --server-cmd, environment values for a server
// servebench does not start.
func (g Grid) Check(so bench.ServerOptions) error {
	if len(g) == 0 {
		return option.Errorf("Grid", nil, "tune: no settings to compare: expected {EngineGrid}, {Grid} or {EnvGrid}")
	}
	seen := map[string]bool{}
	for _, f := range g {
		if seen[f.Kind+f.Name] {
			return option.Errorf(fieldOf[f.Kind], nil, "{"+fieldOf[f.Kind]+"} %s given twice: expected one list of values per setting", f.Name)
		}
		seen[f.Kind+f.Name] = true
		if f.Kind == KindTemplate && "{"+f.Name+"}" == SeedPlaceholder {
			return option.Errorf("Grid", nil, "{Grid} %s: %s is reserved: tune fills it with each repeat's seed ({Seed} S: S*1000+r); name the placeholder otherwise", f.Name, SeedPlaceholder)
		}
		switch f.Kind {
		case KindEngine:
			if !so.Bundled() {
				return option.Errorf("EngineGrid", nil, "{EngineGrid} %s: only for the bundled engine (no {ServerCmd}, {Preset} or {BaseURL}); {Grid} fills a {ServerCmd}, {EnvGrid} a preset's environment", f.Name)
			}
		case KindTemplate:
			if !strings.Contains(so.ServerCmd, "{"+f.Name+"}") {
				return option.Errorf("Grid", nil, "{Grid} %s: {ServerCmd} has no {%s} placeholder to fill", f.Name, f.Name)
			}
		case KindEnv:
			if so.BaseURL != "" && so.ServerCmd == "" && so.Preset == "" {
				return option.Errorf("EnvGrid", nil, "{EnvGrid} %s: {BaseURL} alone names a running server; the environment is set on a server servebench starts", f.Name)
			}
		default:
			return fmt.Errorf("factor %s: unknown kind %q", f.Name, f.Kind)
		}
	}
	if m := regexp.MustCompile(`\{[A-Za-z_][A-Za-z0-9_.-]*\}`).FindString(g.fill(so.ServerCmd, nil, "\x00")); m != "" {
		return option.Errorf("ServerCmd", nil, "placeholder %s has no {Grid} %s=V1,V2", m, strings.Trim(m, "{}"))
	}
	return nil
}

// fill replaces the template factors' placeholders in cmd by set's values
// and SeedPlaceholder by seed (set nil: by a marker, to find placeholders
// nothing fills).
func (g Grid) fill(cmd string, set []result.TuneSetting, seed string) string {
	cmd = strings.ReplaceAll(cmd, SeedPlaceholder, seed)
	for i, f := range g {
		if f.Kind != KindTemplate {
			continue
		}
		v := "\x00"
		if set != nil {
			v = set[i].Value
		}
		cmd = strings.ReplaceAll(cmd, "{"+f.Name+"}", v)
	}
	return cmd
}

// Treatments crosses the factors: every combination of their values, the
// last factor varying fastest.
func (g Grid) Treatments() []result.TuneTreatment {
	out := []result.TuneTreatment{{}}
	for _, f := range g {
		var next []result.TuneTreatment
		for _, t := range out {
			for _, v := range f.Values {
				set := append(slices.Clip(t.Settings), result.TuneSetting{Name: f.Name, Value: v})
				next = append(next, result.TuneTreatment{Settings: set})
			}
		}
		out = next
	}
	for i := range out {
		out[i].Name = Name(out[i].Settings)
	}
	return out
}

// Name is a treatment's name: "max-num-seqs=64 block-size=16".
func Name(set []result.TuneSetting) string {
	parts := make([]string, len(set))
	for i, s := range set {
		parts[i] = s.Name + "=" + s.Value
	}
	return strings.Join(parts, " ")
}

// Apply is the server of treatment set in the repeat seeded seed: base
// with the engine flags added, the --server-cmd filled and the environment
// set.
func (g Grid) Apply(base bench.ServerOptions, set []result.TuneSetting, seed int64) bench.ServerOptions {
	so := base
	so.EngineArgs = slices.Clone(base.EngineArgs)
	so.Env = slices.Clone(base.Env)
	for i, f := range g {
		switch f.Kind {
		case KindEngine:
			so.EngineArgs = append(so.EngineArgs, "--"+f.Name+"="+set[i].Value)
		case KindEnv:
			so.Env = append(so.Env, f.Name+"="+set[i].Value)
		}
	}
	so.ServerCmd = g.fill(base.ServerCmd, set, strconv.FormatInt(seed, 10))
	return so
}
