package tune

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/option"
)

func TestParseFactor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{"max-num-seqs=64,128,256", []string{"64", "128", "256"}, ""},
		{"--max-num-seqs=64", []string{"64"}, ""},              // a leading -- as the engine flag is typed
		{"OLLAMA_NUM_PARALLEL= 1 , 4", []string{"1", "4"}, ""}, // spaces trimmed
		{"max-num-seqs", nil, "expected NAME=V1,V2"},
		{"x=1,,2", nil, "an empty value"},
		{"x=1,1", nil, "given twice"},
		{"a b=1", nil, "expected letters"},
	} {
		f, err := ParseFactor(KindEngine, tc.in)
		if tc.err != "" {
			if fe := (*option.FieldError)(nil); err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &fe) || fe.Field != "EngineGrid" {
				t.Errorf("ParseFactor(%q) = %v, want an EngineGrid error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(f.Values, tc.want) {
			t.Errorf("ParseFactor(%q) = %+v, %v; want values %v", tc.in, f, err, tc.want)
		}
	}
}

// TestTreatmentsCross: two factors of 3 and 2 values give 6 treatments,
// the last factor varying fastest, each applied to the server as its kind
// says, and {seed} filled with the repeat's seed.
func TestTreatmentsCross(t *testing.T) {
	a, _ := ParseFactor(KindTemplate, "seqs=64,128,256")
	b, _ := ParseFactor(KindEnv, "MODE=x,y")
	g := Grid{a, b}
	so := bench.ServerOptions{ServerCmd: "vllm serve m --max-num-seqs {seqs} --seed {seed}", Env: []string{"KEEP=1"}}
	if err := g.Check(so); err != nil {
		t.Fatal(err)
	}
	ts := g.Treatments()
	var names []string
	for _, tr := range ts {
		names = append(names, tr.Name)
	}
	want := []string{"seqs=64 MODE=x", "seqs=64 MODE=y", "seqs=128 MODE=x", "seqs=128 MODE=y", "seqs=256 MODE=x", "seqs=256 MODE=y"}
	if !slices.Equal(names, want) {
		t.Fatalf("treatments %q, want %q", names, want)
	}
	got := g.Apply(so, ts[3].Settings, 2003)
	if got.ServerCmd != "vllm serve m --max-num-seqs 128 --seed 2003" || !slices.Equal(got.Env, []string{"KEEP=1", "MODE=y"}) {
		t.Errorf("Apply = %q %v", got.ServerCmd, got.Env)
	}
	if len(so.Env) != 1 {
		t.Errorf("Apply changed the base's environment: %v", so.Env)
	}
	e, _ := ParseFactor(KindEngine, "max-num-seqs=4,16")
	if got := (Grid{e}).Apply(bench.ServerOptions{EngineArgs: []string{"--gpu=l4"}}, []result.TuneSetting{{Name: "max-num-seqs", Value: "16"}}, 1); !slices.Equal(got.EngineArgs, []string{"--gpu=l4", "--max-num-seqs=16"}) {
		t.Errorf("engine args %v", got.EngineArgs)
	}
}

func TestGridCheck(t *testing.T) {
	e, _ := ParseFactor(KindEngine, "max-num-seqs=4,16")
	tmpl, _ := ParseFactor(KindTemplate, "seqs=1,2")
	env, _ := ParseFactor(KindEnv, "OLLAMA_NUM_PARALLEL=1,4")
	seed, _ := ParseFactor(KindTemplate, "seed=1,2")
	for _, tc := range []struct {
		name string
		g    Grid
		so   bench.ServerOptions
		err  string
	}{
		{"nothing to compare", nil, bench.ServerOptions{}, "no settings"},
		{"engine flags need the bundled engine", Grid{e}, bench.ServerOptions{ServerCmd: "vllm serve m"}, "EngineGrid max-num-seqs: only for the bundled engine"},
		{"placeholder missing", Grid{tmpl}, bench.ServerOptions{ServerCmd: "vllm serve m"}, "no {seqs} placeholder"},
		{"placeholder left unfilled", Grid{tmpl}, bench.ServerOptions{ServerCmd: "x {seqs} {other}"}, "placeholder {other} has no Grid other"},
		{"env on a running server", Grid{env}, bench.ServerOptions{BaseURL: "http://127.0.0.1:1"}, "running server"},
		{"twice", Grid{e, e}, bench.ServerOptions{}, "given twice"},
		{"ok: env on a preset", Grid{env}, bench.ServerOptions{Preset: "ollama"}, ""},
		{"{seed} is tune's", Grid{seed}, bench.ServerOptions{ServerCmd: "x --seed {seed}"}, "Grid seed: {seed} is reserved"},
		{"ok: {seed} filled by tune", Grid{tmpl}, bench.ServerOptions{ServerCmd: "x {seqs} --seed {seed}"}, ""},
	} {
		err := tc.g.Check(tc.so)
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: Check = %v, want %q", tc.name, err, tc.err)
		}
	}
}

// TestOrderBlocks: every block (repeat) holds every treatment once, the
// order within blocks is shuffled by the seed, and the same seed gives the
// same order.
func TestOrderBlocks(t *testing.T) {
	const n, reps = 5, 4
	u := Order(n, reps, 1)
	if len(u) != n*reps {
		t.Fatalf("%d units, want %d", len(u), n*reps)
	}
	identity := 0
	for r := 0; r < reps; r++ {
		seen := map[int]bool{}
		for i, x := range u[r*n : (r+1)*n] {
			if x.Repeat != r+1 || seen[x.Treatment] {
				t.Fatalf("block %d: unit %+v repeats a treatment or belongs to another block", r+1, x)
			}
			seen[x.Treatment] = true
			if x.Treatment == i {
				identity++
			}
		}
	}
	if identity == n*reps {
		t.Error("no block was shuffled")
	}
	if !slices.Equal(Order(n, reps, 1), u) {
		t.Error("the same seed gave another order")
	}
	if slices.Equal(Order(n, reps, 2), u) {
		t.Error("another seed gave the same order")
	}
}

// TestUnitConfig: a unit's session has the treatment's server, its own
// directory, the repeat's seed on every run (and the engine), and one
// warm-up per server.
func TestUnitConfig(t *testing.T) {
	e, _ := ParseFactor(KindEngine, "max-num-seqs=4,16")
	runs, err := bench.Sweep{Concurrencies: []int{1, 4}}.Runs(bench.RunSpec{Request: bench.RequestSpec{MaxTokens: 8}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		runs[i].Workload.Warmup = 3
	}
	o := Options{Session: bench.Config{Dir: "/x", Runs: runs}, Grid: Grid{e}, Repeats: 2, Seed: 7}
	tu := &result.Tune{Treatments: o.Grid.Treatments()}
	u := &result.TuneUnit{Treatment: 1, Repeat: 2, Dir: "units/t2-r2"}
	cfg := o.unitConfig(tu, u)
	if cfg.Dir != "/x/units/t2-r2" || !slices.Equal(cfg.Server.EngineArgs, []string{"--max-num-seqs=16", "--seed=7002"}) {
		t.Errorf("dir %s, engine args %v", cfg.Dir, cfg.Server.EngineArgs)
	}
	for i, r := range cfg.Runs {
		if r.Workload.Seed != 7002 || r.Workload.Offset != runs[i].Workload.Offset+2*repeatStride || r.Workload.Warmup != []int{3, 0}[i] {
			t.Errorf("run %s: %+v", r.Name, r.Workload)
		}
	}
	if runs[1].Workload.Warmup != 3 || runs[0].Workload.Seed != 0 {
		t.Error("unitConfig changed the session's own runs")
	}
}
