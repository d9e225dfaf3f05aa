package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/workload"
)

// searchAgainst drives m as Execute does, against a server whose attainment
// at rate r is attain(r), and returns the runs and the answer.
func searchAgainst(t *testing.T, m *MaxRateSearch, attain func(rate float64) float64) ([]result.Run, *result.MaxRate) {
	t.Helper()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	*m = m.WithDefaults() // as Execute completes its search
	var runs []result.Run
	for range 200 { // bounded: the search must stop long before
		spec, ok := m.Next(runs)
		if !ok {
			return runs, m.Result(runs)
		}
		if spec.Workload.Mode != workload.ModeRate || !strings.HasPrefix(spec.Name, "rate="+fmtRate(roundRate(m.Clock.RateToModelled(spec.Workload.Rate)))) || spec.SLO != m.Base.SLO {
			t.Fatalf("step spec = %s %+v", spec.Name, spec.Workload)
		}
		a := attain(spec.Workload.Rate)
		runs = append(runs, result.Run{Name: spec.Name, Workload: result.Workload{Mode: workload.ModeRate, Rate: spec.Workload.Rate},
			Goodput: &result.Goodput{Requests: 100, Attained: int(a), Attainment: a}})
	}
	t.Fatal("search did not stop")
	return nil, nil
}

// TestMaxRateSearchModelled: at --speedup 4 under the modelled clock the
// search starts, names its runs and answers in modelled req/s, while the
// runs send at the wall-clock rate (4x) and max_rate keeps it.
func TestMaxRateSearchModelled(t *testing.T) {
	slo, _ := result.ParseSLO("e2e=250ms") // 1 s modelled
	clock, _ := result.NewClock("", 4)
	var log bytes.Buffer
	m := MaxRateSearch{Target: 90, Start: 1, Clock: clock, Log: &log, Base: RunSpec{Request: RequestSpec{MaxTokens: 16}, SLO: slo}}
	runs, mr := searchAgainst(t, &m, func(wall float64) float64 {
		if wall <= 4*6.3 { // the knee at 6.3 req/s modelled
			return 95
		}
		return 50
	})
	if runs[0].Name != "rate=1" || runs[0].Workload.Rate != 4 {
		t.Errorf("first run %s at %g req/s wall, want rate=1 at 4", runs[0].Name, runs[0].Workload.Rate)
	}
	shown := clock.ViewMaxRate(mr)
	if !(mr.RatePerS >= 24 && mr.RatePerS <= 25.2) || !(shown.RatePerS >= 6 && shown.RatePerS <= 6.3) || shown.SLO != "e2e=1s" {
		t.Errorf("answer %g req/s wall, shown %+v: want 24-25.2 wall, 6-6.3 modelled under e2e=1s", mr.RatePerS, shown)
	}
	if !strings.Contains(log.String(), "step 1/10: rate 1 req/s") || !strings.Contains(log.String(), "SLO e2e=1s") {
		t.Errorf("log not in modelled time:\n%s", log.String())
	}
}

func TestMaxRateSearch(t *testing.T) {
	slo, _ := result.ParseSLO("e2e=1s")
	base := RunSpec{Request: RequestSpec{MaxTokens: 16}, SLO: slo}
	// A server that holds 95% up to 6.3 req/s and 50% above.
	knee := func(r float64) float64 {
		if r <= 6.3 {
			return 95
		}
		return 50
	}
	for _, tc := range []struct {
		name           string
		m              MaxRateSearch
		attain         func(float64) float64
		lo, hi         float64 // the answer must lie in [lo, hi]
		maxSteps       int
		noteHas        string
		wantMissedOver float64
	}{
		// grows 1,2,4,8 then bisects to within 5%
		{"grows then bisects", MaxRateSearch{Target: 90}, knee, 6.0, 6.3, DefaultMaxRateSteps, "", 6.3},
		// a first rate above the knee halves down first
		{"starts above the knee", MaxRateSearch{Target: 90, Start: 40}, knee, 6.0, 6.3, DefaultMaxRateSteps, "", 6.3},
		// too few steps: the answer is a bound, and says so
		{"step bound", MaxRateSearch{Target: 90, MaxSteps: 3}, knee, 4, 4, 3, "every rate tried held", 0},
		// the target above what the server ever attains: no rate holds
		{"never holds", MaxRateSearch{Target: 99, MaxSteps: 4}, knee, 0, 0, 4, "no rate tried", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			m := tc.m
			m.Base, m.Log = base, &log
			runs, mr := searchAgainst(t, &m, tc.attain)
			if len(runs) > tc.maxSteps || mr.Steps != len(runs) {
				t.Errorf("%d runs, answer counts %d; want at most %d", len(runs), mr.Steps, tc.maxSteps)
			}
			if mr.RatePerS < tc.lo || mr.RatePerS > tc.hi {
				t.Errorf("answer %v req/s, want within [%v, %v]; runs %v", mr.RatePerS, tc.lo, tc.hi, rates(runs))
			}
			if tc.wantMissedOver > 0 && !(mr.MissedAtPerS > tc.wantMissedOver && mr.MissedAtPerS/mr.RatePerS-1 <= DefaultMaxRatePrecision) {
				t.Errorf("bracket %v-%v: want the miss above %v and within 5%%; runs %v", mr.RatePerS, mr.MissedAtPerS, tc.wantMissedOver, rates(runs))
			}
			if !strings.Contains(mr.Note, tc.noteHas) {
				t.Errorf("note %q, want %q", mr.Note, tc.noteHas)
			}
			// printed as it goes: one line per step, then the answer
			if n := strings.Count(log.String(), "find-max-rate: step "); n != len(runs) {
				t.Errorf("log has %d step lines for %d runs:\n%s", n, len(runs), log.String())
			}
			if !strings.Contains(log.String(), "highest rate with SLO e2e=1s attainment >= ") {
				t.Errorf("log lacks the answer:\n%s", log.String())
			}
		})
	}
}

func rates(runs []result.Run) []float64 {
	var out []float64
	for _, r := range runs {
		out = append(out, r.Workload.Rate)
	}
	return out
}

func TestMaxRateSearchValidate(t *testing.T) {
	slo, _ := result.ParseSLO("ttft=1s")
	for _, tc := range []struct {
		m    MaxRateSearch
		want string
	}{
		{MaxRateSearch{Target: 0, Base: RunSpec{SLO: slo}}, "Target 0"},
		{MaxRateSearch{Target: 101, Base: RunSpec{SLO: slo}}, "Target 101"},
		{MaxRateSearch{Target: 90}, "Target needs SLO"},
		{MaxRateSearch{Target: 90, MaxSteps: -1, Base: RunSpec{SLO: slo}}, "MaxSteps -1"},
		{MaxRateSearch{Target: 90, Start: -2, Base: RunSpec{SLO: slo}}, "Start -2"},
	} {
		if err := tc.m.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.m, err, tc.want)
		}
	}
	for in, want := range map[string]float64{"90%": 90, "99.5": 99.5, " 100% ": 100} {
		if got, err := ParseTarget(in); err != nil || got != want {
			t.Errorf("ParseTarget(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0%", "ninety", "150%", "-5"} {
		if _, err := ParseTarget(in); err == nil {
			t.Errorf("ParseTarget(%q) accepted", in)
		}
	}
}

// TestLevelsGetTheirOwnPrompts: sweep levels (and search steps) send other
// generated prompts than earlier levels, so a server's prefix cache cannot
// serve a level from the one before; a file's prompts stay as they are.
func TestLevelsGetTheirOwnPrompts(t *testing.T) {
	p, _ := workload.SyntheticPrompts(64, 1)
	base := RunSpec{Request: RequestSpec{MaxTokens: 4}, Prompts: p, Workload: workload.Workload{Requests: 4}}
	runs, err := Sweep{Concurrencies: []int{1, 2}}.Runs(base)
	if err != nil {
		t.Fatal(err)
	}
	first := func(spec RunSpec) string {
		spec = spec.WithDefaults() // as Runner.Run completes it
		st := &runState{spec: &spec}
		j := st.prepare(0, false)
		return j.req.Messages[0].Content
	}
	if a, b := first(runs[0]), first(runs[1]); a == b {
		t.Errorf("levels c=1 and c=2 send the same first prompt %.40q...", a)
	}
	slo, _ := result.ParseSLO("e2e=1s")
	m := MaxRateSearch{Target: 90, Base: RunSpec{Request: RequestSpec{MaxTokens: 4}, Prompts: p, SLO: slo}}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	m = m.WithDefaults()
	s1, _ := m.Next(nil)
	done := []result.Run{{Workload: result.Workload{Mode: workload.ModeRate, Rate: s1.Workload.Rate}, Goodput: &result.Goodput{Requests: 10, Attained: 10, Attainment: 100}}}
	s2, _ := m.Next(done)
	if first(s1) == first(s2) {
		t.Errorf("search steps 1 and 2 send the same first prompt")
	}
	fixed, _ := workload.FixedPrompt("hello")
	runs, _ = Sweep{Concurrencies: []int{1, 2}}.Runs(RunSpec{Request: RequestSpec{MaxTokens: 4}, Prompts: fixed, Workload: workload.Workload{Requests: 4}})
	if first(runs[0]) != "hello" || first(runs[1]) != "hello" {
		t.Errorf("a fixed prompt changed across levels")
	}
}

// TestMaxRateRecheck: the answer is re-run with fresh seeds; a rate that
// held once by luck and misses its re-check becomes the bracket's top, and
// the answer is the rate below that held twice.
func TestMaxRateRecheck(t *testing.T) {
	slo, _ := result.ParseSLO("e2e=1s")
	m := &MaxRateSearch{Target: 90, Recheck: true, MaxSteps: 20, Base: RunSpec{Request: RequestSpec{MaxTokens: 16}, SLO: slo, Workload: workload.Workload{Seed: 5}}}
	seen := map[float64]int{}
	// Holds up to 6.3 req/s; 8 holds the first time only (a lucky schedule).
	runs, mr := searchAgainst(t, m, func(r float64) float64 {
		seen[r]++
		if r <= 6.3 || r == 8 && seen[r] == 1 {
			return 95
		}
		return 50
	})
	if seen[8] != 2 || mr.RatePerS > 6.3 || mr.RatePerS < 6 || !mr.Confirmed || mr.Rechecks < 2 || mr.MissedAtPerS > 8 {
		t.Errorf("answer %+v after %v; want 8 re-checked and dropped, the answer in [6, 6.3] confirmed", mr, seen)
	}
	last := runs[len(runs)-1]
	if !strings.Contains(last.Name, "recheck") || last.Workload.Rate != mr.RatePerS {
		t.Errorf("last run %s at %g, want the answer's re-check", last.Name, last.Workload.Rate)
	}
	spec, _ := m.recheck(runs[:1], runs[0].Workload.Rate, 1, 0)
	if spec.Workload.Seed == 5 || spec.Workload.Offset == 0 {
		t.Errorf("re-check workload %+v: want a fresh seed and fresh prompts", spec.Workload)
	}
}
