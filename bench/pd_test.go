package bench

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
)

// TestReconcilePD: in a P/D deployment each request is finished twice
// (prefill and decode instance): twice the sent count is no foreign
// traffic, more than that is, and the count recorded stays the engines'.
func TestReconcilePD(t *testing.T) {
	for _, c := range []struct {
		name    string
		count   float64
		passes  int
		foreign bool
		note    string
	}{
		{"P/D, each request twice", 12, 2, false, "2 passes of 6"},
		{"P/D, plus someone else's", 14, 2, true, "foreign traffic"},
		{"one engine, twice the count", 12, 1, true, "foreign traffic"},
	} {
		run := &result.Run{OK: 6}
		rec := &result.Reconciliation{Sent: 6, OK: 6, Completed: 6, EngineCount: c.count}
		reconcileNote(run, rec, "", true, c.passes)
		if rec.Foreign != c.foreign || !strings.Contains(rec.Note, c.note) || rec.EngineCount != c.count {
			t.Errorf("%s: foreign %v, note %q, count %.0f; want foreign %v, a note with %q, count %.0f",
				c.name, rec.Foreign, rec.Note, rec.EngineCount, c.foreign, c.note, c.count)
		}
	}
}
