package report

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/reporttest"
)

// TestLoadDirRoundTrip: what Save wrote, LoadDir reads back unchanged.
func TestLoadDirRoundTrip(t *testing.T) {
	res, recs := reporttest.Seed()
	dir := t.TempDir()
	if err := reporttest.Save(dir, res, recs); err != nil {
		t.Fatal(err)
	}
	lres, lrecs, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(lrecs) != len(recs) || !reflect.DeepEqual(lrecs[5].Events, recs[5].Events) {
		t.Errorf("records: got %d, want %d (events equal: %v)", len(lrecs), len(recs), reflect.DeepEqual(lrecs[5].Events, recs[5].Events))
	}
	if !reflect.DeepEqual(lres.Runs[0].Client, res.Runs[0].Client) || !reflect.DeepEqual(lres.Server.Startup, res.Server.Startup) {
		t.Error("results changed in the round trip")
	}
}

// TestLoadDirErrors: malformed input is an error naming file and line.
func TestLoadDirErrors(t *testing.T) {
	res, recs := reporttest.Seed()
	cases := []struct {
		name    string
		results string // replaces results.json when set
		records string // replaces requests.jsonl when set
		remove  string // file to delete
		want    string
	}{
		// A syntax error on line 3 of results.json.
		{"results syntax", "{\n  \"schema\": \"servebench/v1\",\n  \"runs\": [,]\n}\n", "", "", "results.json:3:"},
		// A type error: runs must be a list.
		{"results type", "{\n\"schema\": \"servebench/v1\",\n\"runs\": 7}\n", "", "", "results.json:3:"},
		// Another tool's JSON.
		{"schema", `{"schema": "other/v9"}`, "", "", `schema "other/v9": expected "servebench/v1"`},
		// Truncated record on line 2.
		{"record syntax", "", "{\"run\":\"streaming\",\"index\":0,\"output_tokens\":1}\n{\"run\":\"stre", "", "requests.jsonl:2:"},
		// A record with the wrong type in a field, line 1.
		{"record type", "", "{\"run\":\"streaming\",\"events\":\"x\"}\n", "", "requests.jsonl:1:"},
		// A record that says nothing of its run, line 3 (blank line 2 skipped but counted).
		{"record no run", "", "{\"run\":\"streaming\",\"output_tokens\":1}\n\n{\"index\":4,\"output_tokens\":1}\n", "", "requests.jsonl:3: record has no \"run\""},
		{"no results", "", "", result.ResultsFile, "results.json"},
		{"no records", "", "", result.RequestsFile, "requests.jsonl"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := reporttest.Save(dir, res, recs); err != nil {
				t.Fatal(err)
			}
			if c.results != "" {
				os.WriteFile(filepath.Join(dir, result.ResultsFile), []byte(c.results), 0o644)
			}
			if c.records != "" {
				os.WriteFile(filepath.Join(dir, result.RequestsFile), []byte(c.records), 0o644)
			}
			if c.remove != "" {
				os.Remove(filepath.Join(dir, c.remove))
			}
			_, _, err := LoadDir(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
	if _, _, err := LoadDir(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing dir: err = %v", err)
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, _, err := LoadDir(f); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file as dir: err = %v", err)
	}
}

// TestParseRecordsLongLine: a record longer than bufio.Scanner's default
// 64 KiB limit (a long answer's events) still loads.
func TestParseRecordsLongLine(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"run":"streaming","output_tokens":8000,"events":[`)
	for i := range 8000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("[0.012345678901234,1]")
	}
	b.WriteString("]}\n")
	recs, err := ParseRecords(strings.NewReader(b.String()))
	if err != nil || len(recs) != 1 || len(recs[0].Events) != 8000 {
		t.Fatalf("err %v, %d records", err, len(recs))
	}
}

// FuzzParseRecords: any input either parses or fails with a LoadError that
// names a line; never a panic.
func FuzzParseRecords(f *testing.F) {
	f.Add("{\"run\":\"streaming\",\"index\":0,\"events\":[[0.1,1]]}\n")
	f.Add("\n\n{\"run\":\"x\"}")
	f.Add("{\"run\":")
	f.Fuzz(func(t *testing.T, in string) {
		recs, err := ParseRecords(strings.NewReader(in))
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		for _, r := range recs {
			if r.Run == "" {
				t.Fatal("record without run accepted")
			}
		}
	})
}
