package dist

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseDist(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want: String() of the parsed Dist, or the error's text
		ok       bool
	}{
		{"512", "512", true},                                 // a constant
		{" uniform:100-300 ", "uniform:100-300", true},       // spaces trimmed
		{"normal:512,64", "normal:512,64", true},             // mean, std
		{"lognormal:512,256", "lognormal:512,256", true},     // of the values
		{"zipf:1.5,1000", "zipf:1.5,1000", true},             // S > 1, MAX
		{"0.5", "0.5", true},                                 // seconds (think time)
		{"", "expected N, uniform", false},                   // nothing
		{"-3", "expected N, uniform", false},                 // negative
		{"gauss:1,2", `unknown distribution "gauss"`, false}, // unknown kind
		{"uniform:300-100", "0 <= MIN <= MAX", false},        // reversed
		{"uniform:100,300", "uniform:MIN-MAX with numbers", false},
		{"normal:512", "normal:MEAN,STD with numbers", false}, // STD missing
		{"lognormal:0,5", "MEAN > 0", false},
		{"lognormal:5,-1", "STD >= 0", false},
		{"zipf:1,100", "S > 1", false},
		{"normal:0,1", "normal:MEAN,STD with MEAN > 0", false},
		{"zipf:2,2e9", "zipf:S,MAX with S > 1 and 1 <= MAX <= 1e9", false},
		{"normal:NaN,1", "with numbers", false},
		{"Inf", "expected N", false},
	} {
		d, err := Parse(tc.in)
		switch {
		case tc.ok && (err != nil || d.String() != tc.want):
			t.Errorf("Parse(%q) = %v, %v; want %s", tc.in, d, err, tc.want)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Parse(%q) error %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestMoments: samples have the mean and spread asked for, lognormal
// in the values themselves (not their log), and Int clips.
func TestMoments(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		spec           string
		mean, std, tol float64
	}{
		{"uniform:100-300", 200, 200 / math.Sqrt(12), 0.03},
		{"normal:512,64", 512, 64, 0.03},
		{"lognormal:512,256", 512, 256, 0.05},
		{"lognormal:100,300", 100, 300, 0.15}, // heavy tail: slower to converge
	} {
		d, err := Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		const n = 200_000
		var sum, sq float64
		for range n {
			v := d.Sample(rng)
			sum += v
			sq += v * v
		}
		mean := sum / n
		std := math.Sqrt(sq/n - mean*mean)
		if math.Abs(mean-tc.mean) > tc.tol*tc.mean || math.Abs(std-tc.std) > 2*tc.tol*tc.std {
			t.Errorf("%s: mean %.1f std %.1f, want %.1f %.1f", tc.spec, mean, std, tc.mean, tc.std)
		}
	}
	z, _ := Parse("zipf:2,50")
	ones := 0
	for range 10000 {
		v := z.Int(rng, 1, 50)
		if v < 1 || v > 50 {
			t.Fatalf("zipf value %d outside 1..50", v)
		}
		if v == 1 {
			ones++
		}
	}
	// P(1) = 1/H(50,2) = 1/1.625 = 0.615.
	if ones < 5800 || ones > 6500 {
		t.Errorf("zipf:2,50 drew 1 %d times in 10000, want about 6150", ones)
	}
	wide, _ := Parse("normal:10,100")
	for range 1000 {
		if v := wide.Int(rng, 1, 20); v < 1 || v > 20 {
			t.Fatalf("Int clipped to [1,20] gave %d", v)
		}
	}
}
