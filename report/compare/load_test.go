package compare

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
)

// TestLoadRoundTrip: what bench writes, Load reads back, from a directory
// or from the path of results.json.
func TestLoadRoundTrip(t *testing.T) {
	orig := synthSide(t, "x", 1, 100, twoRuns(1)...)
	dir := saveSide(t, orig)
	for _, p := range []string{dir, filepath.Join(dir, result.ResultsFile)} {
		s, err := Load(p)
		if err != nil {
			t.Fatalf("Load(%s): %v", p, err)
		}
		if s.Path != p || len(s.Results.Runs) != 2 || len(s.Records) != len(orig.Records) || len(s.Warnings) != 0 {
			t.Errorf("Load(%s): path %s, %d runs, %d records, warnings %v", p, s.Path, len(s.Results.Runs), len(s.Records), s.Warnings)
		}
		if got, want := s.Records[5].Events[3], orig.Records[5].Events[3]; got != want {
			t.Errorf("event %v, want %v", got, want)
		}
	}
}

// TestLoadErrors: a loading error (the cases are in bench/result's
// tests) is compare's ErrInput, so the command exits 2, and names the path.
func TestLoadErrors(t *testing.T) {
	good := saveSide(t, synthSide(t, "x", 1, 100, twoRuns(1)...))
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, result.ResultsFile), []byte(`{"schema": "other/v9"}`), 0o644)
	for _, p := range []string{filepath.Join(good, "absent"), bad} {
		_, err := Load(p)
		var ie *InputError
		if !errors.Is(err, ErrInput) || !errors.As(err, &ie) || !strings.Contains(err.Error(), p) {
			t.Errorf("Load(%s): err = %v, want an InputError wrapping ErrInput naming the path", p, err)
		}
		if errors.Is(err, ErrInvalidRun) || errors.Is(err, ErrMismatch) {
			t.Errorf("Load(%s): err = %v also matches another exit code's sentinel", p, err)
		}
	}
}

// TestLoadTruncatedLastLine: a writer killed mid-line loses only that
// line, and the warning reaches the side (and so the report).
func TestLoadTruncatedLastLine(t *testing.T) {
	dir := saveSide(t, synthSide(t, "x", 1, 100, twoRuns(1)...))
	req := filepath.Join(dir, result.RequestsFile)
	f, _ := os.OpenFile(req, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"run":"streaming","index":99,"e2e`)
	f.Close()
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Records) != 42 || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], ":43: truncated last line") {
		t.Errorf("%d records, warnings %v; want 42 and one warning naming line 43", len(s.Records), s.Warnings)
	}
	if info := sideInfo(s); len(info.Warnings) == 0 || info.Warnings[len(info.Warnings)-1] != s.Warnings[0] {
		t.Errorf("report side warnings %v lack the load warning", info.Warnings)
	}
}

// TestMissingRecordsForRun: results.json counts requests that
// requests.jsonl does not hold: unusable input, not an invalid run.
func TestMissingRecordsForRun(t *testing.T) {
	base := synthSide(t, "base", 1, 100, twoRuns(1)...)
	nw := synthSide(t, "new", 2, 100, twoRuns(1)...)
	nw.Records = nw.Records[:21] // only the streaming run's lines
	_, err := Compare(base, nw, Options{})
	if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), `no measured requests for run "non-streaming"`) {
		t.Errorf("err = %v, want ErrInput naming the run", err)
	}
}

func FuzzParseThreshold(f *testing.F) {
	for _, s := range []string{"client.e2e.median=10%", "engine.ttft.mean=+5ms", "errors.rate=+0.01", "x=off", "a.b.c=1e400%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		th, err := ParseThreshold(s)
		if err != nil {
			return
		}
		// Whatever parses renders back to something that parses the same.
		back, err := ParseThreshold(th.Key() + "=" + th.String())
		if err != nil || back.Off != th.Off || !close(back.Rel, th.Rel) || !close(back.Abs, th.Abs) {
			t.Errorf("%q -> %+v -> %q -> %+v, %v", s, th, th.String(), back, err)
		}
	})
}

func close(a, b float64) bool { return a == b || (a-b)/b < 1e-9 && (b-a)/b < 1e-9 }
