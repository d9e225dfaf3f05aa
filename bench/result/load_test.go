package result_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/reporttest"
)

// saved writes the seed result set into a temporary directory.
func saved(t *testing.T) (dir string, res *result.Results, recs []result.Record) {
	t.Helper()
	res, recs = reporttest.Seed()
	dir = t.TempDir()
	if err := reporttest.Save(dir, res, recs); err != nil {
		t.Fatal(err)
	}
	return dir, res, recs
}

// TestLoadRoundTrip: what a run saves, Load reads back unchanged, from the
// directory or from the path of its results.json.
func TestLoadRoundTrip(t *testing.T) {
	dir, res, recs := saved(t)
	for _, p := range []string{dir, filepath.Join(dir, result.ResultsFile)} {
		lres, lrecs, warns, err := result.Load(p)
		if err != nil {
			t.Fatalf("Load(%s): %v", p, err)
		}
		if len(warns) != 0 {
			t.Errorf("Load(%s): warnings %v", p, warns)
		}
		if len(lrecs) != len(recs) || !reflect.DeepEqual(lrecs[5].Events, recs[5].Events) {
			t.Errorf("records: got %d, want %d (events equal: %v)", len(lrecs), len(recs), reflect.DeepEqual(lrecs[5].Events, recs[5].Events))
		}
		if !reflect.DeepEqual(lres.Runs[0].Client, res.Runs[0].Client) || !reflect.DeepEqual(lres.Server.Startup, res.Server.Startup) {
			t.Error("results changed in the round trip")
		}
	}
}

// TestLoadErrors: unusable input is an *InputError wrapping ErrInput that
// names the file and, for a bad line, its number.
func TestLoadErrors(t *testing.T) {
	good, _, _ := saved(t)
	goodRes, _ := os.ReadFile(filepath.Join(good, result.ResultsFile))
	goodReq, _ := os.ReadFile(filepath.Join(good, result.RequestsFile))
	for _, tc := range []struct {
		name     string
		res, req string // file contents; "-" = file absent
		want     string // a phrase of the error
		file     string // the file the error must name
	}{
		{"no results.json", "-", string(goodReq), "results.json: missing", result.ResultsFile},
		{"no requests.jsonl", string(goodRes), "-", "requests.jsonl: missing", result.RequestsFile},
		// A syntax error on line 3 of results.json.
		{"results.json syntax", "{\n\"schema\": \"servebench/v1\",\n\"runs\": [,]\n}", string(goodReq), ".json:3: bad JSON", result.ResultsFile},
		// A type error: runs must be a list.
		{"results.json type", "{\n\"schema\": \"servebench/v1\",\n\"runs\": 5\n}", string(goodReq), ".json:3: bad JSON", result.ResultsFile},
		// Another tool's JSON.
		{"schema", `{"schema": "other/v9"}`, string(goodReq), `schema "other/v9": expected "servebench/v1"`, result.ResultsFile},
		{"no schema", `{"runs": []}`, string(goodReq), `schema "": expected`, result.ResultsFile},
		{"records bad middle line", string(goodRes), "{\"run\":\"a\"}\n{oops\n{\"run\":\"a\"}\n", ".jsonl:2: bad JSON", result.RequestsFile},
		// A complete bad last line is not a killed writer's: an error.
		{"records bad last line", string(goodRes), "{\"run\":\"a\"}\n{\"run\":\"stre\n", ".jsonl:2: bad JSON", result.RequestsFile},
		{"records wrong type", string(goodRes), "{\"run\":\"a\"}\n{\"run\":\"a\",\"e2e_s\":\"slow\"}\n", ".jsonl:2: bad JSON", result.RequestsFile},
		{"records events type", string(goodRes), "{\"run\":\"streaming\",\"events\":\"x\"}\n", ".jsonl:1: bad JSON", result.RequestsFile},
		// A record that says nothing of its run, line 3 (blank line 2 skipped but counted).
		{"record no run", string(goodRes), "{\"run\":\"streaming\",\"output_tokens\":1}\n\n{\"index\":4,\"output_tokens\":1}\n", `.jsonl:3: record has no "run"`, result.RequestsFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range map[string]string{result.ResultsFile: tc.res, result.RequestsFile: tc.req} {
				if data != "-" {
					os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644)
				}
			}
			res, recs, _, err := result.Load(dir)
			var ie *result.InputError
			if !errors.Is(err, result.ErrInput) || !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an *InputError wrapping ErrInput", err)
			}
			if res != nil || recs != nil {
				t.Error("results or records returned with the error")
			}
			if !strings.Contains(err.Error(), tc.want) || ie.Path != filepath.Join(dir, tc.file) {
				t.Errorf("error %q lacks %q or does not name %s", err, tc.want, tc.file)
			}
		})
	}
	if _, _, _, err := result.Load(filepath.Join(good, "absent")); !errors.Is(err, result.ErrInput) || !strings.Contains(err.Error(), "absent") {
		t.Errorf("absent path: %v", err)
	}
}

// TestLoadStartupOnly: `servebench startup --out DIR` saves no
// requests.jsonl, and a set without runs needs none.
func TestLoadStartupOnly(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, result.ResultsFile), []byte(`{"schema":"servebench/v1","runs":[]}`), 0o644)
	res, recs, warns, err := result.Load(dir)
	if err != nil || res == nil || len(recs) != 0 || len(warns) != 0 {
		t.Fatalf("res %v, %d records, warnings %v, err %v", res, len(recs), warns, err)
	}
}

// TestLoadTruncatedLastLine: a writer killed mid-line loses only that
// line, with a warning naming it.
func TestLoadTruncatedLastLine(t *testing.T) {
	dir, _, recs := saved(t)
	f, _ := os.OpenFile(filepath.Join(dir, result.RequestsFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"run":"streaming","index":99,"e2e`)
	f.Close()
	_, lrecs, warns, err := result.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, result.RequestsFile) + ":" + strconv.Itoa(len(recs)+1) + ": truncated last line skipped"
	if len(lrecs) != len(recs) || len(warns) != 1 || !strings.Contains(warns[0], want) {
		t.Errorf("%d records, warnings %v; want %d and one warning containing %q", len(lrecs), warns, len(recs), want)
	}
}

// TestReadRecordsLongLine: a record longer than bufio.Scanner's default
// 64 KiB limit (a long answer's events) still loads; one over MaxLine is
// refused with its line number.
func TestReadRecordsLongLine(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"run":"streaming","output_tokens":8000,"events":[`)
	for i := range 8000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("[0.012345678901234,1]")
	}
	b.WriteString("]}\n")
	recs, _, err := result.ReadRecords("r.jsonl", strings.NewReader(b.String()))
	if err != nil || len(recs) != 1 || len(recs[0].Events) != 8000 {
		t.Fatalf("err %v, %d records", err, len(recs))
	}
	huge := "{\"run\":\"a\"}\n" + `{"run":"a","error_text":"` + strings.Repeat("x", result.MaxLine) + "\"}\n"
	recs, _, err = result.ReadRecords("r.jsonl", strings.NewReader(huge))
	if !errors.Is(err, result.ErrInput) || !strings.Contains(err.Error(), "r.jsonl:2: line longer than") || recs != nil {
		t.Errorf("over MaxLine: %d records, err %v", len(recs), err)
	}
}

// FuzzReadRecords: any input either parses, with every record naming its
// run, or fails with an *InputError that names a line and returns no
// records; never a panic.
func FuzzReadRecords(f *testing.F) {
	f.Add([]byte("{\"run\":\"streaming\",\"index\":0,\"events\":[[0.1,1]]}\n"))
	f.Add([]byte("\n\n{\"run\":\"x\"}"))
	f.Add([]byte("{\"run\":"))
	f.Add([]byte("{\"run\":\"a\",\"e2e_s\":1}\n{\"run\":\"a\"}"))
	f.Add([]byte("\n\n{bad"))
	f.Add([]byte(`{"events":[[0.1,1],[0.2,2]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, warns, err := result.ReadRecords("fuzz.jsonl", strings.NewReader(string(data)))
		if err != nil {
			var ie *result.InputError
			if !errors.As(err, &ie) || ie.Line < 1 || !errors.Is(err, result.ErrInput) {
				t.Fatalf("error without a line or ErrInput: %v", err)
			}
			if recs != nil || warns != nil {
				t.Fatalf("records %v returned with error %v", recs, err)
			}
			return
		}
		for _, r := range recs {
			if r.Run == "" {
				t.Fatal("record without run accepted")
			}
		}
		if len(warns) > 1 {
			t.Fatalf("more than one warning: %v", warns)
		}
	})
}
