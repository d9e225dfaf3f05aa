package export

import (
	"slices"
	"testing"

	"github.com/servebench/servebench/bench/result"
)

// TestCSVArrivalsAndUsable: the last two columns carry a structured
// answer's usable_s and the request's arrivals as SECONDS:BYTES:TOKENS.
func TestCSVArrivalsAndUsable(t *testing.T) {
	r := result.Record{Run: "streaming", Stream: true, E2ES: 0.2, UsableS: 0.19,
		Arrivals: [][3]float64{{0.0123456789, 312, 0}, {0.05, 1200, 17}, {0.19, 90, 1}}}
	row := csvRow(&r)
	i := slices.Index(CSVHeader, "usable_s")
	if got, want := row[i:], []string{"0.190000", "0.012346:312:0 0.050000:1200:17 0.190000:90:1"}; !slices.Equal(got, want) {
		t.Errorf("cells %q, want %q", got, want)
	}
	if row := csvRow(&result.Record{Run: "x"}); row[i] != "" || row[i+1] != "" || len(row) != len(CSVHeader) {
		t.Errorf("a plain record: %q", row)
	}
}
