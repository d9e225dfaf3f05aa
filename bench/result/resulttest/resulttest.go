// Package resulttest holds what tests of several packages need to read the
// results a run writes.
package resulttest

import (
	"bytes"
	"testing"

	"github.com/servebench/servebench/bench/result"
)

// Records parses a requests.jsonl's bytes, failing the test on any invalid
// line or warning.
func Records(t testing.TB, b []byte) []result.Record {
	t.Helper()
	recs, warns, err := result.ReadRecords(result.RequestsFile, bytes.NewReader(b))
	if err != nil || len(warns) > 0 {
		t.Fatalf("requests.jsonl invalid: %v %v", err, warns)
	}
	return recs
}
