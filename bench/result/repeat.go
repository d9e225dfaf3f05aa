package result

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RepeatPrefix names the results directories of --repeats: DIR/repeat-1
// ... DIR/repeat-N, each a whole results directory (results.json,
// requests.jsonl, report), and DIR/RepeatsFile the run-level summary.
const (
	RepeatPrefix = "repeat-"
	RepeatsFile  = "repeats.json"
)

// RepeatDir is the results directory of repeat k (1-based) under dir.
func RepeatDir(dir string, k int) string {
	return filepath.Join(dir, RepeatPrefix+strconv.Itoa(k))
}

// RepeatDirs lists dir's repeat directories in repeat order, or nil when
// dir holds a results.json of its own or no repeat-K directory. A gap
// (repeat-2 missing while repeat-3 exists: a repeat that did not start) is
// skipped; what was measured counts.
func RepeatDirs(dir string) []string {
	if _, err := os.Stat(filepath.Join(dir, ResultsFile)); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // not a directory: the caller's loader says why
	}
	byK := map[int]string{}
	maxK := 0
	for _, e := range entries {
		k, err := strconv.Atoi(strings.TrimPrefix(e.Name(), RepeatPrefix))
		if !e.IsDir() || !strings.HasPrefix(e.Name(), RepeatPrefix) || err != nil || k < 1 {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), ResultsFile)); err != nil {
			continue
		}
		byK[k], maxK = filepath.Join(dir, e.Name()), max(maxK, k)
	}
	var out []string
	for k := 1; k <= maxK; k++ {
		if d, ok := byK[k]; ok {
			out = append(out, d)
		}
	}
	return out
}
