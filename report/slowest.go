package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/servebench/servebench/bench/result"
)

// SlowestN is how many of the slowest requests report.md names.
const SlowestN = 5

// maxLogLines bounds the server.log lines shown per request.
const maxLogLines = 8

// Slowest returns the n measured requests with the longest E2E (failed
// ones too: a timeout is slow) that carried a request id, slowest first.
func Slowest(recs []result.Record, n int) []*result.Record {
	var out []*result.Record
	for i := range recs {
		if r := &recs[i]; slowestCandidate(r) {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].E2ES > out[j].E2ES })
	return out[:min(n, len(out))]
}

// slowestCandidate is whether r may be named among the slowest: a measured
// request (failed ones too) that carried a request id, which its server.log
// lines are found by.
func slowestCandidate(r *result.Record) bool { return r.Outcome() && r.RequestID != "" }

// LogLinesNaming reads a server log and returns, for each id, the lines
// that contain it (at most maxLogLines each), in log order. A missing log
// is not an error: servebench writes server.log only for servers it starts.
func LogLinesNaming(path string, ids []string) (map[string][]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, id := range ids {
			if len(out[id]) < maxLogLines && strings.Contains(line, id) {
				out[id] = append(out[id], line)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("reading %s: %w", path, err)
	}
	return out, nil
}

// WriteSlowest writes report.md's "Slowest requests" section: the slowest
// requests with their ids and the server log lines that name them (logs
// nil: servebench did not start the server, so it has no log to search).
func WriteSlowest(w io.Writer, slow []*result.Record, logs map[string][]string) error {
	if len(slow) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Slowest requests\n\n")
	b.WriteString("Each request carried its id as `X-Request-Id`, which vLLM and SGLang take as their own request id.\n\n")
	b.WriteString("| run | index | E2E | outcome | request id |\n|---|--:|--:|---|---|\n")
	for _, r := range slow {
		outcome := "ok"
		if r.Error != "" {
			outcome = r.Error
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | `%s` |\n", mdEscape(r.Run), r.Index, secsText(r.E2ES), outcome, r.RequestID)
	}
	b.WriteString("\n")
	if logs == nil {
		b.WriteString("No server.log: servebench did not start the server. Look the ids up in the server's own log " +
			"(vLLM names requests there with `--enable-log-requests`).\n\n")
	} else {
		fmt.Fprintf(&b, "Lines of %s that name them:\n\n", result.ServerLog)
		for _, r := range slow {
			lines := logs[r.RequestID]
			fmt.Fprintf(&b, "- `%s`", r.RequestID)
			if len(lines) == 0 {
				b.WriteString(": no line names it (vLLM names requests with `--enable-log-requests`)\n")
				continue
			}
			b.WriteString(":\n\n  ```\n")
			for _, l := range lines {
				b.WriteString("  " + l + "\n")
			}
			b.WriteString("  ```\n")
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
