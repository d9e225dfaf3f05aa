package workload

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/engine/option"
)

func TestWorkloadValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    Workload
		want string // substring of the error; "" = valid
	}{
		{"sequential default mode", Workload{Requests: 3}, ""},
		{"unknown mode names it", Workload{Mode: "burst", Requests: 1}, `"burst"`},
		{"no count and no duration", Workload{Mode: ModeSequential}, "Requests 0"},
		{"negative requests", Workload{Requests: -1}, "Requests -1"},
		{"concurrency zero", Workload{Mode: ModeConcurrent, Requests: 1}, "Concurrency 0"},
		{"rate zero", Workload{Mode: ModeRate, Requests: 1}, "Rate 0"},
		{"rate infinite", Workload{Mode: ModeRate, Rate: math.Inf(1), Requests: 1}, "Rate +Inf"},
		{"gamma needs burstiness", Workload{Mode: ModeRate, Rate: 5, Arrival: ArrivalGamma, Requests: 1}, "Burstiness 0"},
		{"unknown arrival", Workload{Mode: ModeRate, Rate: 5, Arrival: "uniform", Requests: 1}, `Arrival "uniform"`},
		{"duration only", Workload{Mode: ModeConcurrent, Concurrency: 2, Duration: time.Second}, ""},
		{"negative warmup", Workload{Requests: 1, Warmup: -2}, "Warmup -2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.w.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate error = %v, want it to contain %q", err, tc.want)
			}
			if fe := (*option.FieldError)(nil); tc.w.Mode != "burst" && err != nil && (!errors.As(err, &fe) || !strings.HasPrefix(tc.want, fe.Field)) {
				t.Errorf("Validate error %v: want an option.FieldError of the field it names first", err)
			}
		})
	}
}

// TestPacerMeanAndSpread checks each arrival process keeps the mean gap at
// 1/rate and has the spread its shape implies (coefficient of variation
// 0 for constant, 1 for Poisson, 1/sqrt(k) for gamma with shape k).
func TestPacerMeanAndSpread(t *testing.T) {
	for _, tc := range []struct {
		arrival string
		shape   float64
		wantCV  float64
	}{
		{ArrivalConstant, 0, 0},
		{ArrivalPoisson, 0, 1},
		{ArrivalGamma, 0.25, 2}, // bursty
		{ArrivalGamma, 4, 0.5},  // smoother than Poisson
	} {
		w := Workload{Mode: ModeRate, Rate: 200, Arrival: tc.arrival, Burstiness: tc.shape, Requests: 1, Seed: 7}
		if err := w.Validate(); err != nil {
			t.Fatal(err)
		}
		p := NewPacer(w)
		const n = 20000
		gaps := make([]float64, n)
		for i := range gaps {
			gaps[i] = p.Next().Seconds()
		}
		s := stats.Summarize(gaps)
		if math.Abs(s.Mean-1.0/200)/(1.0/200) > 0.05 {
			t.Errorf("%s k=%v: mean gap %.5f s, want %.5f s ±5%%", tc.arrival, tc.shape, s.Mean, 1.0/200)
		}
		var ss float64
		for _, g := range gaps {
			ss += (g - s.Mean) * (g - s.Mean)
		}
		cv := math.Sqrt(ss/n) / s.Mean
		if math.Abs(cv-tc.wantCV) > 0.1*math.Max(tc.wantCV, 0.1) {
			t.Errorf("%s k=%v: coefficient of variation %.3f, want %.3f", tc.arrival, tc.shape, cv, tc.wantCV)
		}
	}
}

// TestPacerSeeded: the seed sets the gaps: the same seed gives the same
// sequence, another seed another one (a pacer that ignored --seed would
// pass the first half alone).
func TestPacerSeeded(t *testing.T) {
	w := Workload{Mode: ModeRate, Rate: 10, Arrival: ArrivalPoisson, Requests: 1, Seed: 3}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	other := w
	other.Seed = 4
	a, b, c := NewPacer(w), NewPacer(w), NewPacer(other)
	differ := 0
	for i := 0; i < 100; i++ {
		x, y, z := a.Next(), b.Next(), c.Next()
		if x != y {
			t.Fatalf("gap %d differs for the same seed: %v vs %v", i, x, y)
		}
		if x != z {
			differ++
		}
	}
	if differ < 90 {
		t.Errorf("seeds 3 and 4 gave %d different gaps of 100, want nearly all", differ)
	}
}
