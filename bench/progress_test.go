package bench

import (
	"testing"
)

// TestAppendRecent: the progress bar keeps between barRecent and
// 2*barRecent of the latest values, newest last.
func TestAppendRecent(t *testing.T) {
	var xs []float64
	for i := range 5 * barRecent {
		xs = appendRecent(xs, float64(i))
		if len(xs) > 2*barRecent || xs[len(xs)-1] != float64(i) || (i >= barRecent && len(xs) < barRecent) {
			t.Fatalf("after %d appends: %d kept, last %v", i+1, len(xs), xs[len(xs)-1])
		}
	}
	if xs[0] != float64(5*barRecent-len(xs)) {
		t.Errorf("kept values are not the latest: first %v of %d", xs[0], len(xs))
	}
}
