package tune

import (
	"math"
	"strings"
	"testing"
)

// TestMeanInterval: 1, 2, 3 has mean 2, SD 1: the 95% interval is
// 2 +- t(0.975, 2) / sqrt(3) = 2 +- 4.3027 / 1.7321 (Student's t table).
func TestMeanInterval(t *testing.T) {
	iv := meanInterval([]float64{1, 2, 3})
	half := 4.302653 / math.Sqrt(3)
	if math.Abs(iv.Mean-2) > 1e-12 || math.Abs(iv.Lo-(2-half)) > 1e-4 || math.Abs(iv.Hi-(2+half)) > 1e-4 || iv.N != 3 {
		t.Errorf("interval %+v, want 2 +- %.4f", iv, half)
	}
	if one := meanInterval([]float64{5}); one.Lo != 5 || one.Hi != 5 {
		t.Errorf("one run: %+v", one)
	}
	if meanInterval(nil) != nil {
		t.Error("no runs: want nil")
	}
}

// TestCompareSaysSignificantOnlyWhenTheIntervalsDo: well apart, A beats
// B; overlapping noise, no significant difference with the margin.
func TestCompareSaysSignificantOnlyWhenTheIntervalsDo(t *testing.T) {
	c := compare("A", "B", "x", []float64{10, 10.2, 9.9}, []float64{8, 8.1, 7.9}, true, "u")
	if !c.Significant || !strings.HasPrefix(c.Text, "A beats B") || c.Lo <= 0 {
		t.Errorf("apart: %+v", c)
	}
	c = compare("A", "B", "x", []float64{10, 12, 8}, []float64{9, 11, 10}, true, "u")
	if c.Significant || !strings.Contains(c.Text, "no significant difference") || !(c.Lo < 0 && c.Hi > 0) {
		t.Errorf("overlapping: %+v", c)
	}
	c = compare("A", "B", "x", []float64{10, 10.2, 9.9}, []float64{8, 8.1, 7.9}, false, "s")
	if !strings.HasPrefix(c.Text, "B beats A") {
		t.Errorf("lower is better: %s", c.Text)
	}
	if c := compare("A", "B", "x", []float64{1}, []float64{2, 3}, true, "u"); c.Significant || !strings.Contains(c.Text, "too few runs") {
		t.Errorf("one run: %+v", c)
	}
}

// TestCompareLargeDifferencesPlain: a difference of thousands reads as a
// number, not in scientific notation.
func TestCompareLargeDifferencesPlain(t *testing.T) {
	c := compare("A", "B", "tokens/s", []float64{14100, 14200, 14150}, []float64{4800, 4850, 4830}, true, "tokens/s")
	if strings.Contains(c.Text, "e+") || !strings.Contains(c.Text, "+9") {
		t.Errorf("large difference printed as %q; want plain digits with a sign", c.Text)
	}
}
