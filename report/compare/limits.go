package compare

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strings"
)

// LimitsFile is the name servebench calibrate gives its limits file.
const LimitsFile = "limits.txt"

// ReadLimits reads a limits file (servebench calibrate writes one; compare
// and --baseline take it with --limits-from): one --max-regression
// argument a line, QUANTITY.STAT=LIMIT; blank lines and text after # are
// skipped. Errors wrap ErrInput and name the file and line.
func ReadLimits(path string) ([]Threshold, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &InputError{Path: path, Err: err}
	}
	defer f.Close()
	var out []Threshold
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		if text = strings.TrimSpace(text); text == "" {
			continue
		}
		th, err := ParseThreshold(text)
		if err != nil {
			return nil, &InputError{Path: path, Line: line, Err: err}
		}
		out = append(out, th)
	}
	if err := sc.Err(); err != nil {
		return nil, &InputError{Path: path, Err: err}
	}
	return out, nil
}

// FormatLimit renders a relative limit (0.042 = 4.2%) in
// --max-regression's syntax, rounded up to 0.1% so it never falls below
// the limit measured (and at least 0.1%: a limit of 0 is no limit).
func FormatLimit(key string, rel float64) string {
	return fmt.Sprintf("%s=%g%%", key, float64(max(1, int(math.Ceil(rel*1000-1e-9))))/10)
}
