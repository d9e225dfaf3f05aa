package client

import (
	"iter"
	"math"
	"time"
)

// Events are a trace's token-carrying events, in order of arrival. They
// are held in the form requests.jsonl writes them, [seconds from
// Trace.Start, tokens] each (bench/result.Events), so that a record takes
// Pairs as they are instead of copying every event again; which events
// were reasoning is kept beside them, one bit an event. The zero value is
// empty and ready to use. Events are not safe for concurrent use.
type Events struct {
	pairs [][2]float64
	// reasoning: bit i%64 of word i/64 is event i's Event.Reasoning; words
	// past the end are 0, so an answer without reasoning allocates none.
	reasoning []uint64
	// room is how many events the request allows (its max_tokens, up to
	// MaxEvents; 0: unknown): growth doubles up to it, not past it.
	room int
}

// eventsStart is the room a streamed trace reserves for its events first:
// the request's max_tokens up to this many, the whole of an answer of
// servebench's default --max-tokens (256 events, 4 KB). A longer answer
// grows, so a short answer to a long max_tokens costs no more than its own.
const eventsStart = 256

// MakeEvents returns evs as Events.
func MakeEvents(evs ...Event) Events {
	e := Events{pairs: make([][2]float64, 0, len(evs))}
	for _, ev := range evs {
		e.Append(ev)
	}
	return e
}

// reserve makes room for the first events of an answer of at most
// maxTokens events (0: unknown, no room made).
func (e *Events) reserve(maxTokens int) {
	e.room = min(max(maxTokens, 0), MaxEvents)
	if e.room > 0 {
		e.pairs = make([][2]float64, 0, min(e.room, eventsStart))
	}
}

// Append adds ev after the last event.
func (e *Events) Append(ev Event) {
	if ev.Reasoning {
		i := len(e.pairs)
		for len(e.reasoning) <= i/64 {
			e.reasoning = append(e.reasoning, 0)
		}
		e.reasoning[i/64] |= 1 << (i % 64)
	}
	if n := len(e.pairs); n == cap(e.pairs) && n < e.room {
		// Doubling, but never past what the request allows: an answer
		// of exactly max_tokens ends with no spare room.
		grown := make([][2]float64, n, min(max(2*n, 16), e.room))
		copy(grown, e.pairs)
		e.pairs = grown
	}
	e.pairs = append(e.pairs, [2]float64{ev.At.Seconds(), float64(ev.Tokens)})
}

// Len is the number of events.
func (e Events) Len() int { return len(e.pairs) }

// Event returns event i (0 <= i < Len). At is the duration the event was
// appended with: seconds keep nanoseconds exactly for any request shorter
// than days.
func (e Events) Event(i int) Event {
	p := e.pairs[i]
	return Event{At: time.Duration(math.Round(p[0] * 1e9)), Tokens: int(p[1]), Reasoning: e.reasoningAt(i)}
}

func (e Events) reasoningAt(i int) bool {
	return i/64 < len(e.reasoning) && e.reasoning[i/64]&(1<<(i%64)) != 0
}

// All yields each event with its index, in order.
func (e Events) All() iter.Seq2[int, Event] {
	return func(yield func(int, Event) bool) {
		for i := range e.pairs {
			if !yield(i, e.Event(i)) {
				return
			}
		}
	}
}

// List returns the events as a new slice (nil when there are none).
func (e Events) List() []Event {
	if len(e.pairs) == 0 {
		return nil
	}
	out := make([]Event, len(e.pairs))
	for i := range e.pairs {
		out[i] = e.Event(i)
	}
	return out
}

// Pairs returns the events as [seconds from Trace.Start, tokens], the
// trace's own slice, not a copy (nil when there are none): a record takes
// it as it is, and whoever changes it changes the trace's events too.
func (e Events) Pairs() [][2]float64 { return e.pairs }
