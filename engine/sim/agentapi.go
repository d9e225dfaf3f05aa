package sim

import (
	"net/http"
	"strconv"
)

// The APIs agents use, Anthropic's Messages (/v1/messages) and OpenAI's
// Responses (/v1/responses), served as vLLM serves them: each translates
// its body into a chat request (vLLM's AnthropicServingMessages converts
// to a ChatCompletionRequest; OpenAIServingResponses renders the same chat
// template), which then runs exactly as a chat request does (same checks,
// same engine requests, same /metrics), and writes the answer in its own
// events. The event framing is an apiFramer; the stream loop (apiStream)
// and the text split (appendSplit) are shared.

// apiFramer writes one API's events for one streaming request. Texts come
// JSON-escaped (the inside of a JSON string).
type apiFramer interface {
	// start appends what is sent as soon as the request is admitted
	// (Responses' created and in_progress), first what goes before the
	// first token's events (Messages' message_start, sent with it).
	start(b []byte) []byte
	first(b []byte) []byte
	// reasoning and text append the events of a piece of thinking or of
	// the answer.
	reasoning(b, text []byte) []byte
	text(b, text []byte) []byte
	// closing appends the last events, once the request has all its tokens.
	closing(b []byte, r *request) []byte
}

// sseEvent appends an event with its "event:" line, as both APIs frame
// them; data is appended by the caller, then endEvent.
func sseEvent(b []byte, typ string) []byte {
	b = append(b, "event: "...)
	b = append(b, typ...)
	return append(b, "\ndata: "...)
}

func endEvent(b []byte) []byte { return append(b, "\n\n"...) }

// appendSplit appends the texts of r's output tokens [from, to),
// JSON-escaped: the thinking part to reason, the answer part to answer
// (markers and the end-of-turn token have no text).
func (r *request) appendSplit(reason, answer []byte, from, to int) ([]byte, []byte) {
	t := &r.thinking
	if !t.reasons() {
		for i := from; i < to; i++ {
			answer = appendJSONString(answer, r.piece(i))
		}
		return reason, answer
	}
	for i := max(from, t.think0); i < min(to, t.think1); i++ {
		reason = appendJSONString(reason, tokenText(r.key, i))
	}
	end := to
	if to == r.target && r.natural == "stop" {
		end-- // the EOS token
	}
	for i := max(from, t.answer0); i < end; i++ {
		answer = appendJSONString(answer, tokenText(r.key, i))
	}
	return reason, answer
}

// apiStream serves a streaming Messages or Responses request as stream
// serves chat: this goroutine alone writes, one event per token (per
// step's tokens with speculative decoding), flushed once per wake-up.
// Stream faults are chat's only (docs/engine.md).
func (e *Engine) apiStream(w http.ResponseWriter, hr *http.Request, r *request, f apiFramer) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	buf, ok := send(w, flusher, f.start(nil))
	if !ok {
		e.clientGone(r, 0)
		return
	}
	var reason, answer []byte
	written := 0
	for {
		select {
		case <-r.notify:
		case <-hr.Context().Done():
			e.clientGone(r, written)
			return
		case <-e.stopping:
			e.sched.abort(r, "abort")
			return
		}
		n := int(r.emitted.Load())
		if n > written && written == 0 {
			buf = f.first(buf)
		}
		for written < n {
			size := r.chunkLen(written)
			reason, answer = r.appendSplit(reason[:0], answer[:0], written, written+size)
			if len(reason) > 0 {
				buf = f.reasoning(buf, reason)
			}
			if len(answer) > 0 {
				buf = f.text(buf, answer)
			}
			written += size
		}
		if written == r.target {
			buf = f.closing(buf, r)
			send(w, flusher, buf)
			e.logRequestEnd(r, false)
			e.requestFinished(hr)
			return
		}
		if buf, ok = send(w, flusher, buf); !ok {
			e.clientGone(r, written)
			return
		}
	}
}

// apiTexts are a finished request's whole texts, JSON-escaped, for a
// non-streaming answer.
func apiTexts(r *request) (reason, answer []byte) {
	return r.appendSplit(nil, nil, 0, r.target)
}

// appendQuoted appends s as a JSON string, quotes included.
func appendQuoted(b []byte, s string) []byte {
	return append(appendJSONString(append(b, '"'), s), '"')
}

// appendInt appends n in decimal.
func appendInt(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) }
