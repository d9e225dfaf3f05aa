package store

import (
	"testing"
	"time"

	"github.com/servebench/servebench/client"
)

// TestNewRecordKeepsTraceEvents: a record takes its trace's events as they
// are (the same memory, not a second copy of every event), unless the
// trace has room for far more than arrived; then it keeps a copy of just
// the events, so records held in memory hold no empty room.
func TestNewRecordKeepsTraceEvents(t *testing.T) {
	tr := client.Trace{Stream: true, Status: 200, OutputTokens: 3,
		Events: client.MakeEvents(client.Event{At: 10 * time.Millisecond, Tokens: 1}, client.Event{At: 20 * time.Millisecond, Tokens: 2})}
	rec := NewRecord("r", 0, false, &tr, 0)
	if len(rec.Events) != 2 || &rec.Events[0] != &tr.Events.Pairs()[0] || rec.Events[1] != [2]float64{0.02, 2} {
		t.Errorf("record events %v at %p, trace's at %p: want the trace's own", rec.Events, &rec.Events[0], &tr.Events.Pairs()[0])
	}
	roomy := make([][2]float64, 2, 256) // a short answer to a long max_tokens
	copy(roomy, tr.Events.Pairs())
	kept := keptEvents(roomy)
	if len(kept) != 2 || cap(kept) > 4 || &kept[0] == &roomy[0] || kept[1] != roomy[1] {
		t.Errorf("kept %v (cap %d) of room for 256: want a copy of the 2 events", kept, cap(kept))
	}
}
