package stats

import (
	"math"
	"testing"
)

// TestMeanInterval: 1, 2, 3 has mean 2 and SD 1: the 95% interval is
// 2 +- t(0.975, 2) / sqrt(3) = 2 +- 4.3027 / 1.7321 (Student's t table).
func TestMeanInterval(t *testing.T) {
	m, lo, hi, err := MeanInterval([]float64{1, 2, 3}, 0)
	half := 4.302653 / math.Sqrt(3)
	if err != nil || m != 2 || math.Abs(lo-(2-half)) > 1e-4 || math.Abs(hi-(2+half)) > 1e-4 {
		t.Errorf("MeanInterval = %v [%v, %v], %v; want 2 +- %.4f", m, lo, hi, err, half)
	}
	if m, lo, hi, _ := MeanInterval([]float64{5}, 0); m != 5 || lo != 5 || hi != 5 {
		t.Errorf("one run: %v [%v, %v]", m, lo, hi)
	}
	if _, _, _, err := MeanInterval([]float64{1, 2}, 1.5); err == nil {
		t.Error("level 1.5: want an error")
	}
}
