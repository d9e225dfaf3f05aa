package stats

import "math"

// MeanInterval is the mean of run-level values xs (one per run: the run is
// the unit of evidence) with its confidence interval at level (0:
// DefaultLevel), Student's t with len(xs)-1 degrees of freedom. With one
// value lo and hi equal the mean (one run says nothing about the spread);
// with none all three are NaN.
func MeanInterval(xs []float64, level float64) (mean, lo, hi float64, err error) {
	if level, err = checkLevel(level); err != nil {
		return 0, 0, 0, err
	}
	if len(xs) == 0 {
		return math.NaN(), math.NaN(), math.NaN(), nil
	}
	mean, sd := meanSD(xs)
	if len(xs) < 2 {
		return mean, mean, mean, nil
	}
	h := tQuantile(0.5+level/2, float64(len(xs)-1)) * sd / math.Sqrt(float64(len(xs)))
	return mean, mean - h, mean + h, nil
}
