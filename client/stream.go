package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// MaxBody bounds a non-streaming response body.
const MaxBody = 64 << 20

// Sources of Trace.OutputTokens (Trace.TokensFrom).
const (
	TokensFromUsage  = "usage"  // the server's usage.completion_tokens
	TokensFromEvents = "events" // counted from token-carrying events
	TokensUnknown    = ""       // non-streaming body without usage
)

// readers holds the per-stream parser state between requests, so the hot
// path reuses buffers instead of allocating them per request.
type readers struct {
	sse    SSEReader // also NDJSON's lines (ollama-chat)
	dec    ChunkDecoder
	ollama OllamaDecoder
	api    APIEventDecoder // messages, responses
}

var readerPool = sync.Pool{New: func() any { return new(readers) }}

// release returns rd to readerPool, holding no body and no oversized buffer.
func (rd *readers) release() {
	rd.sse.Reset(nil)
	rd.dec.trim()
	rd.ollama.trim()
	rd.api.trim()
	readerPool.Put(rd)
}

// readStream reads SSE events until [DONE] or a failure, filling the trace.
// It reports whether the stream ended cleanly with [DONE].
//
// Tokens per event: where the chunk carries cumulative usage (vLLM's
// stream_options.continuous_usage_stats), the growth of
// usage.completion_tokens since the last usage seen; otherwise an estimate
// from the chunk's text (textPieces), which, once the final usage chunk
// gives the true total, is scaled to it (apportion), so a chunk that
// carried several tokens (speculative decoding, a coalescing proxy) counts
// as several. The final OutputTokens prefers the server's usage over the
// events' sum.
func (x *exchange) readStream(body io.Reader, maxTokens int) bool {
	tr := &x.tr
	rd := readerPool.Get().(*readers)
	defer rd.release()
	rd.sse.Reset(body)
	tr.Events.reserve(maxTokens)
	var st streamTally
	done := x.readEvents(rd, &st)
	if x.usable != nil {
		x.usableEnd(done)
	}
	if x.keepText {
		tr.Text = string(st.text)
	}
	if st.usageSeen {
		tr.TokensFrom = TokensFromUsage
		if !st.perChunkUsage && tr.EventsDropped == 0 {
			apportion(tr.Events.pairs, tr.OutputTokens)
		}
	} else {
		tr.OutputTokens, tr.TokensFrom = st.counted, TokensFromEvents
	}
	return done
}

// usableEnd sets Trace.Usable at the end of an answer that ended cleanly
// (ok) or not: a failed one keeps only a moment already seen.
func (x *exchange) usableEnd(ok bool) {
	if x.keepText {
		x.tr.ToolCalls = x.usable.calls()
	}
	if !ok {
		x.tr.Usable = x.usable.at
		return
	}
	x.tr.Usable, x.tr.UsableError = x.usable.finish(x.tr.Done)
	if x.tr.UsableError != "" {
		x.tr.UsableError = x.c.short(x.tr.UsableError)
	}
}

// streamTally is readStream's count of a stream's tokens so far.
type streamTally struct {
	counted   int // tokens of the token-carrying events
	lastUsage int // the last usage.completion_tokens seen
	usageSeen bool
	// perChunkUsage: usage arrived on a token-carrying chunk, so its
	// deltas are exact.
	perChunkUsage bool
	text          []byte // the content, with keepText
}

// readEvents reads events into the trace until [DONE] (true) or a failure,
// which it records.
func (x *exchange) readEvents(rd *readers, st *streamTally) bool {
	for {
		data, now, done, ok := x.nextData(rd, st.counted)
		if done || !ok {
			return ok
		}
		ch, err := rd.dec.Decode(data)
		if x.badEvent(data, err, ch != nil && ch.HasError, func() []byte { return ch.ErrorMessage }) {
			return false
		}
		x.chunkEvent(st, ch, now)
	}
}

// nextData reads the next event's data, trimmed, and when it came: done
// when it was [DONE] (Done recorded), not ok when the stream failed
// (recorded; counted is the token events so far, for the message).
func (x *exchange) nextData(rd *readers, counted int) (data []byte, now time.Duration, done, ok bool) {
	data, err := rd.sse.Next()
	now = x.since()
	if err != nil {
		x.streamReadError(err, counted)
		return nil, now, false, false
	}
	if x.stall != nil {
		x.stall.event(now)
	}
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		x.tr.Done = now
		return data, now, true, true
	}
	return data, now, false, true
}

// badEvent records an event that did not decode (err) or that is an error
// event (hasError, with msg's message), and reports whether it did.
func (x *exchange) badEvent(data []byte, err error, hasError bool, msg func() []byte) bool {
	switch {
	case err != nil:
		x.fail(ErrMalformed, fmt.Sprintf("malformed event %s: %v", x.clip(data), err))
	case hasError:
		x.fail(ErrStreamError, "stream error event: "+string(msg()))
	default:
		return false
	}
	return true
}

// chunkEvent takes one decoded chunk that arrived at now: its usage,
// finish reason, and tokens.
func (x *exchange) chunkEvent(st *streamTally, ch *Chunk, now time.Duration) {
	tr := &x.tr
	// A tool call's arguments are the answer a program reads: visible.
	visible := len(ch.Content) > 0 || len(ch.ToolArgs) > 0
	carries := visible || len(ch.Reasoning) > 0
	tokens := 1
	if carries && !ch.HasUsage {
		tokens = max(textPieces(ch.Content)+textPieces(ch.ToolArgs)+textPieces(ch.Reasoning), 1)
	}
	if x.usable != nil {
		x.usable.chunk(ch, now)
	}
	if ch.HasUsage {
		tokens = st.usage(ch, carries, tokens)
		tr.PromptTokens, tr.OutputTokens, tr.CachedTokens = ch.PromptTokens, ch.CompletionTokens, ch.CachedTokens
	}
	if len(ch.FinishReason) > 0 && string(ch.FinishReason) != tr.FinishReason {
		tr.FinishReason = string(ch.FinishReason)
	}
	if len(ch.OtherReasoning) > 0 && tr.OtherReasoning == "" {
		tr.OtherReasoning = string(ch.OtherReasoning)
	}
	if !carries {
		return // role-only, finish or usage chunk: no generated token
	}
	x.tokenEvent(now, tokens, visible)
	if len(ch.Reasoning) > 0 {
		x.reasoningEvent(now, tokens, ch.Reasoning, ch.Content)
	}
	st.counted += tokens
	if x.keepText {
		st.text = append(st.text, ch.Content...)
	}
}

// usage takes a chunk's cumulative usage: the tokens it carried are the
// growth of completion_tokens since the last usage seen (else tokens).
func (st *streamTally) usage(ch *Chunk, carries bool, tokens int) int {
	if ch.CompletionTokens > st.lastUsage {
		tokens = ch.CompletionTokens - st.lastUsage
	}
	st.lastUsage = ch.CompletionTokens
	st.usageSeen = true
	st.perChunkUsage = st.perChunkUsage || carries
	return tokens
}

// tokenEvent records one event that carried generated tokens.
func (x *exchange) tokenEvent(now time.Duration, tokens int, visible bool) {
	tr := &x.tr
	if tr.FirstToken == 0 {
		tr.FirstToken = now
	}
	if visible && tr.FirstVisible == 0 {
		tr.FirstVisible = now
	}
	if tr.Events.Len() < MaxEvents {
		tr.Events.Append(Event{At: now, Tokens: tokens, Reasoning: !visible})
	} else {
		tr.EventsDropped++
	}
}

// reasoningEvent records the reasoning part of an event that carried
// tokens: all of them, or, beside content, its reasoning text's pieces.
func (x *exchange) reasoningEvent(now time.Duration, tokens int, reasoning, content []byte) {
	tr := &x.tr
	if tr.FirstReasoning == 0 {
		tr.FirstReasoning = now
	}
	tr.LastReasoning = now
	if len(content) > 0 {
		tokens = min(textPieces(reasoning), tokens-1)
	}
	tr.ReasoningTokens += tokens
}

// streamReadError classifies the end of a stream that had no [DONE].
func (x *exchange) streamReadError(err error, counted int) {
	class := x.classify(err, ErrTruncated)
	switch {
	case class != ErrTruncated:
		x.fail(class, x.describe(class, err))
	case errors.Is(err, io.EOF):
		x.fail(ErrTruncated, fmt.Sprintf("stream ended without [DONE] after %d token events", counted))
	case errors.Is(err, ErrEventTooLarge):
		x.fail(ErrMalformed, err.Error())
	default:
		x.fail(ErrTruncated, fmt.Sprintf("stream cut after %d token events: %v", counted, err))
	}
}

// readWholeBody reads a non-streaming body of at most MaxBody bytes; on a
// failure it records it on the trace and returns false.
func (x *exchange) readWholeBody(r io.Reader) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r, MaxBody+1))
	if err != nil {
		class := x.classify(err, ErrTruncated)
		x.fail(class, "reading body: "+x.describe(class, err))
		return nil, false
	}
	if len(body) > MaxBody {
		x.fail(ErrMalformed, fmt.Sprintf("body over %d bytes", MaxBody))
		return nil, false
	}
	return body, true
}

// readBody reads a non-streaming response. FirstToken, FirstVisible and
// Done are all the moment the whole body was read and parsed: nothing is
// visible before that.
func (x *exchange) readBody(r io.Reader) {
	tr := &x.tr
	body, ok := x.readWholeBody(r)
	if !ok {
		return
	}
	rd := readerPool.Get().(*readers)
	defer rd.release()
	ch, err := rd.dec.Decode(body)
	if err != nil {
		x.fail(ErrMalformed, fmt.Sprintf("malformed body %s: %v", x.clip(body), err))
		return
	}
	if ch.HasError {
		x.fail(ErrStreamError, "error in a 2xx body: "+string(ch.ErrorMessage))
		return
	}
	if !ch.HasChoices {
		x.fail(ErrMalformed, fmt.Sprintf("body has no choices: %s", x.clip(body)))
		return
	}
	now := x.since()
	tr.FirstToken, tr.FirstVisible, tr.Done = now, now, now
	tr.FinishReason = string(ch.FinishReason)
	if ch.HasUsage {
		tr.PromptTokens, tr.OutputTokens, tr.TokensFrom = ch.PromptTokens, ch.CompletionTokens, TokensFromUsage
		tr.CachedTokens = ch.CachedTokens
	}
	tr.OtherReasoning = string(ch.OtherReasoning)
	if len(ch.Reasoning) > 0 {
		// Not streamed: its time is hidden in the whole body's.
		tr.ReasoningTokens = max(textPieces(ch.Reasoning), 1)
	}
	if x.keepText {
		tr.Text = string(ch.Content)
	}
	if x.usable != nil {
		x.usable.chunk(ch, now)
		x.usableEnd(true)
	}
}

// httpError records a non-2xx response with the server's message.
func (x *exchange) httpError(resp *http.Response, r io.Reader) {
	body, _ := io.ReadAll(io.LimitReader(r, maxErrorBody))
	x.tr.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
	x.fail(ErrHTTPStatus, "HTTP "+strconv.Itoa(resp.StatusCode)+": "+errorText(body))
}

// unexpectedBody handles a streaming request answered without an event
// stream: an error object is a stream error, anything else is malformed.
func (x *exchange) unexpectedBody(resp *http.Response, r io.Reader) {
	body, _ := io.ReadAll(io.LimitReader(r, maxErrorBody))
	rd := readerPool.Get().(*readers)
	defer rd.release()
	if ch, err := rd.dec.Decode(body); err == nil && ch.HasError {
		x.fail(ErrStreamError, "error instead of a stream: "+string(ch.ErrorMessage))
		return
	}
	x.fail(ErrMalformed, fmt.Sprintf("expected text/event-stream, got %q: %s",
		resp.Header.Get("Content-Type"), x.clip(body)))
}

// clip quotes the start of outside data for an error message, redacted
// before it is cut so no part of the key survives.
func (x *exchange) clip(b []byte) string {
	const n = 80
	s := x.c.redact(string(b[:min(len(b), n+len(x.c.opts.APIKey))]))
	if len(s) > n {
		return strconv.Quote(s[:n]) + "..."
	}
	return strconv.Quote(s)
}
