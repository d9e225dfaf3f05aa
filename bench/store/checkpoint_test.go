package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// TestWriteJSONStreamsWindows: results.json and checkpoint.json, whose
// windows are encoded one at a time, are byte for byte what
// json.MarshalIndent of the whole would be: runs with and without
// windows, a window with errors, engine figures and a counter reset
// warning, strings that JSON escapes.
func TestWriteJSONStreamsWindows(t *testing.T) {
	kv := 0.25
	window := func(i int) result.Window {
		w := result.Window{Index: i, StartS: float64(i-1) * 60, EndS: float64(i) * 60, Requests: 100 + i, OK: 99 + i,
			Errors:     map[string]int{"timeout": 1},
			Throughput: result.Throughput{RequestsPerS: 1.5 * float64(i), OutputTokensPerS: 192},
			Client:     result.ClientStats{E2ES: &stats.Summary{Mean: 0.1, Median: 0.09, P90: 0.2, P99: 0.3, Min: 0.01, Max: 0.5, N: 99 + i}},
		}
		if i%2 == 0 {
			w.Engine = &result.WindowEngine{KVUsage: &kv, CounterReset: true, Warnings: []string{`counters went back: "<restart>" & more`}}
		}
		return w
	}
	res := &result.Results{Schema: "servebench/v1", Warnings: []string{"a <warning>"},
		Manifest: result.Manifest{Version: "test", StartedAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}}
	for r, n := range []int{3, 0, 12, 1} { // windows per run
		run := result.Run{Name: fmt.Sprintf("run %d", r), Requests: 10 * n, Errors: map[string]int{}}
		for i := 1; i <= n; i++ {
			run.Windows = append(run.Windows, window(i))
		}
		res.Runs = append(res.Runs, run)
	}
	for _, rs := range []*result.Results{res, {Schema: "servebench/v1"}} {
		dir := t.TempDir()
		if err := WriteJSON(dir, result.CheckpointFile, rs); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, result.CheckpointFile))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.MarshalIndent(rs, "", "  ")
		if want = append(want, '\n'); string(got) != string(want) {
			t.Errorf("streamed windows:\n%s\nwant json.MarshalIndent's:\n%s", got, want)
		}
		if files, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(files) != 0 {
			t.Errorf("temporary files left: %v", files)
		}
		if whole, err := encodeResults(bufio.NewWriter(io.Discard), rs); whole || err != nil {
			t.Errorf("windows encoded with the whole (a marker not found): %v", err)
		}
	}
}
