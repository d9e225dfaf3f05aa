package client

import (
	"context"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestEventsRoundTrip: every event reads back as it was appended (At to
// the nanosecond, up to two days into a request; reasoning flags past the
// first word of bits), and Pairs is the record's form of them.
func TestEventsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	want := []Event{{At: 0, Tokens: 1}, {At: 1, Tokens: 3, Reasoning: true}, {At: 26 * time.Millisecond, Tokens: 1}}
	for i := range 200 {
		at := time.Duration(rng.Int64N(int64(48 * time.Hour)))
		want = append(want, Event{At: at, Tokens: 1 + rng.IntN(8), Reasoning: i == 60 || i == 61 || i == 130})
	}
	var e Events
	for _, ev := range want {
		e.Append(ev)
	}
	if e.Len() != len(want) {
		t.Fatalf("Len %d, want %d", e.Len(), len(want))
	}
	for i, ev := range e.All() {
		if ev != want[i] || e.Event(i) != want[i] {
			t.Fatalf("event %d: All %+v, Event %+v, want %+v", i, ev, e.Event(i), want[i])
		}
		if p := e.Pairs()[i]; p != [2]float64{want[i].At.Seconds(), float64(want[i].Tokens)} {
			t.Fatalf("pair %d: %v, want [%v %d]", i, p, want[i].At.Seconds(), want[i].Tokens)
		}
	}
	if !slices.Equal(e.List(), want) || !slices.Equal(MakeEvents(want...).List(), want) {
		t.Errorf("List or MakeEvents differ from what was appended")
	}
	if (Events{}).List() != nil || (Events{}).Pairs() != nil {
		t.Errorf("empty Events: List and Pairs should be nil")
	}
}

// TestStreamEventsRoom: a stream reserves room for max_tokens events up to
// eventsStart, not for max_tokens (up to MaxEvents) whatever the answer's
// length, and doubles past it up to max_tokens.
func TestStreamEventsRoom(t *testing.T) {
	for _, tt := range []struct {
		maxTokens, events, wantCap int
	}{
		{3, 3, 3},                                // what the request allows
		{8192, 3, eventsStart},                   // a long max_tokens, a short answer
		{8192, eventsStart + 1, 2 * eventsStart}, // doubled past the start
		{300, 300, 300},                          // doubled, but not past max_tokens: no spare room
		{0, 2, -1},                               // max_tokens not sent: grown by append
	} {
		items := make([]string, 0, tt.events+1)
		for range tt.events {
			items = append(items, vllmChunk("a"))
		}
		c := newTestClient(t, func(w http.ResponseWriter, r *http.Request) { writeEvents(w, r, append(items, "[DONE]")...) }, nil)
		req := chatReq(true)
		req.MaxTokens = tt.maxTokens
		tr := c.Do(context.Background(), req)
		if !tr.OK() || tr.Events.Len() != tt.events {
			t.Fatalf("max_tokens %d: %d events, want %d (%s %s)", tt.maxTokens, tr.Events.Len(), tt.events, tr.Error, tr.ErrorText)
		}
		if got := cap(tr.Events.Pairs()); tt.wantCap >= 0 && got != tt.wantCap {
			t.Errorf("max_tokens %d, %d events: room for %d, want %d", tt.maxTokens, tt.events, got, tt.wantCap)
		}
	}
}
