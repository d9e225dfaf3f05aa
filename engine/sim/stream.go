package sim

import (
	"net/http"
	"strconv"
)

// chunker holds one request's pre-rendered SSE fragments, so that a token
// costs a few appends and its word, with no allocation.
type chunker struct {
	head      []byte // `data: {"id":...,"model":...,"choices":[`
	role      []byte // the chat role-only first chunk, whole
	open      []byte // `{"index":0,"delta":{"content":"` or `{"index":0,"text":"`
	mid       []byte // from the end of the text to the logprobs value
	tail      []byte // the rest of a token chunk, finish_reason null
	tailFinal map[string][]byte
}

func newChunker(chat bool, id, model string, created int64) *chunker {
	object := "text_completion"
	if chat {
		object = "chat.completion.chunk"
	}
	head := []byte(`data: {"id":"`)
	head = appendJSONString(head, id)
	head = append(head, `","object":"`+object+`","created":`...)
	head = strconv.AppendInt(head, created, 10)
	head = append(head, `,"model":"`...)
	head = appendJSONString(head, model)
	head = append(head, `","choices":[`...)
	c := &chunker{head: head, tailFinal: map[string][]byte{}}
	if chat {
		c.role = append(append([]byte{}, head...), `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
		c.open = []byte(`{"index":0,"delta":{"content":"`)
		c.mid = []byte(`"},"logprobs":`)
		c.tail = []byte(`,"finish_reason":null}]}` + "\n\n")
	} else {
		c.open = []byte(`{"index":0,"text":"`)
		c.mid = []byte(`","logprobs":`)
		c.tail = []byte(`,"finish_reason":null,"stop_reason":null}]}` + "\n\n")
	}
	for _, r := range []string{"length", "stop", "tool_calls"} {
		c.tailFinal[r] = []byte(`,"finish_reason":"` + r + `","stop_reason":null}]}` + "\n\n")
	}
	return c
}

// appendTokens appends the chunk of output tokens [from, to) of r (one
// token, or what one step emitted with speculative decoding) with
// "logprobs":null.
func (c *chunker) appendTokens(b []byte, r *request, from, to int, finish string) []byte {
	b = append(c.appendOpen(b, r, from, to), "null"...)
	return c.appendTail(b, r, finish)
}

// appendOpen appends a chunk up to its logprobs value: its content is the
// text of tokens [from, to).
func (c *chunker) appendOpen(b []byte, r *request, from, to int) []byte {
	b = append(b, c.head...)
	b = append(b, c.open...)
	if from == 0 && r.out != nil {
		b = appendJSONString(b, r.out.prefix) // echo
	}
	for i := from; i < to; i++ {
		b = appendJSONString(b, r.piece(i))
	}
	return append(b, c.mid...)
}

// appendTail appends the rest of a token chunk after its logprobs value:
// the last chunk's carries finish_reason and r's stop_reason.
func (c *chunker) appendTail(b []byte, r *request, finish string) []byte {
	if finish == "" {
		return append(b, c.tail...)
	}
	if reason := r.stopReasonJSON(); reason != nil {
		b = append(b, `,"finish_reason":"`+finish+`","stop_reason":`...)
		b = append(b, reason...)
		return append(b, "}]}\n\n"...)
	}
	return append(b, c.tailFinal[finish]...)
}

// appendUsage appends the usage chunk; cached is usage.prompt_tokens_details
// (nil: left out).
func (c *chunker) appendUsage(b []byte, prompt, completion int, cached *promptDetails) []byte {
	b = append(b, c.head...)
	b = appendUsageCounts(append(b, `],"usage":`...), prompt, completion)
	if cached == nil {
		// vLLM writes stream chunks with exclude_none: no null details.
		return append(b, "}}\n\n"...)
	}
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(cached.CachedTokens), 10)
	return append(b, "}}}\n\n"...)
}

// appendUsageCounts appends a usage object's token counts, in vLLM's field
// order, without its closing brace.
func appendUsageCounts(b []byte, prompt, completion int) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	b = append(b, `,"completion_tokens":`...)
	return strconv.AppendInt(b, int64(completion), 10)
}

// appendContinuousUsage adds stream_options.continuous_usage_stats's usage
// to the chunk b ends with (every chunk ends with "}\n\n"): the tokens
// completed so far, as vLLM puts them on each chunk (the role chunk's 0).
func appendContinuousUsage(b []byte, prompt, completion int) []byte {
	b = append(b[:len(b)-len("}\n\n")], `,"usage":`...)
	return append(appendUsageCounts(b, prompt, completion), "}}\n\n"...)
}

var sseDone = []byte("data: [DONE]\n\n")

// sseStream is one streaming response in progress, owned by its handler
// goroutine.
type sseStream struct {
	e         *Engine
	w         http.ResponseWriter
	flusher   http.Flusher
	hr        *http.Request
	r         *request
	c         *chunker
	lp        *logprober // nil without logprobs
	offset    int        // completions logprobs: text_offset of the next token
	buf       []byte
	written   int // tokens appended to buf or sent
	flushedTo int // tokens sent
	// continuous: every chunk carries the usage so far
	// (stream_options.continuous_usage_stats, with include_usage).
	continuous bool
}

// stream serves a streaming request. This goroutine alone writes to the
// socket: the engine loop only raises r.emitted and wakes it, so a slow
// client never slows the loop. It writes every token emitted since its last
// wake-up, one chunk per token (per step's tokens with speculative
// decoding), and flushes once per wake-up (per step).
func (e *Engine) stream(w http.ResponseWriter, hr *http.Request, r *request, c *chunker, lp *logprober, usage, continuous bool) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	s := &sseStream{e: e, w: w, hr: hr, r: r, c: c, lp: lp, buf: make([]byte, 0, 4096), continuous: continuous}
	s.flusher, _ = w.(http.Flusher)
	if s.flusher != nil {
		s.flusher.Flush() // headers now, as Starlette's StreamingResponse does
	}
	for s.wait() {
		n := int(r.emitted.Load())
		if n > s.written && s.written == 0 && c.role != nil {
			s.appendRole()
		}
		for s.written < n {
			size := r.chunkLen(s.written)
			if !s.faultsIn(size) {
				return
			}
			if f := e.faults.stallAfter; s.written <= f && f < s.written+size {
				// The tokens made during the stall go out in this one
				// write, the burst a held stream releases.
				n = max(n, int(r.emitted.Load()))
			}
			s.appendNext(size)
		}
		if s.written == r.target {
			s.finish(usage)
			return
		}
		if b := e.faults.bufferEvery; b > 0 && s.written-s.flushedTo < b {
			continue // a buffering proxy: hold tokens until N have piled up
		}
		if !s.flush() {
			e.clientGone(r, s.written)
			return
		}
	}
}

// wait waits for the engine loop's next wake-up; false when the handler is
// to return: the client left or the engine is stopping.
func (s *sseStream) wait() bool {
	select {
	case <-s.r.notify:
		return true
	case <-s.hr.Context().Done():
		s.e.clientGone(s.r, s.written)
	case <-s.e.stopping:
		s.e.sched.abort(s.r, "abort")
	}
	return false
}

// appendRole appends the chat role chunk: vLLM sends it with the first token.
func (s *sseStream) appendRole() {
	s.buf = append(s.buf, s.c.role...)
	if s.continuous {
		s.buf = appendContinuousUsage(s.buf, s.r.prompt, 0)
	}
}

// faultsIn fires the faults due inside the next chunk of size tokens,
// before it; false when one ended the stream.
func (s *sseStream) faultsIn(size int) bool {
	for i := s.written; i < s.written+size; i++ {
		if !s.faultAt(i) {
			return false
		}
	}
	return true
}

// appendNext appends the chunk of the next size tokens (with the usage so
// far when continuous).
func (s *sseStream) appendNext(size int) {
	wrote := s.appendChunk(s.written, size)
	s.written += size
	if s.continuous && wrote {
		s.buf = appendContinuousUsage(s.buf, s.r.prompt, s.written)
	}
}

// finish sends the last chunks: the usage (with include_usage) and [DONE].
func (s *sseStream) finish(usage bool) {
	e, r := s.e, s.r
	if usage {
		s.buf = s.c.appendUsage(s.buf, r.usagePrompt, r.target, e.promptDetails(r))
		s.buf = appendCompletionDetails(s.buf, e.completionDetails([]*request{r}))
	}
	s.buf = append(s.buf, sseDone...)
	s.flush()
	e.logRequestEnd(r, false)
	e.requestFinished(s.hr)
}

// appendChunk appends the chunk of output tokens [i, i+n); the last one
// carries finish_reason. false: the tokens stream nothing (a thinking
// request's markers) and no chunk was appended.
func (s *sseStream) appendChunk(i, n int) bool {
	finish, end := "", i+n
	if end == s.r.target {
		finish = s.r.finishReason()
	}
	switch {
	case s.r.out != nil && s.r.out.tool != nil:
		var ok bool
		s.buf, ok = s.c.appendToolChunk(s.buf, s.r, i, end, finish)
		return ok
	case s.r.thinking.reasons():
		text := end // tokens with text: all but an EOS (the last token of a "stop")
		if finish == "stop" {
			text--
		}
		var ok bool
		if s.buf, ok = s.e.reasoner.appendSplitOpen(s.buf, s.c, s.r, i, text, finish != ""); !ok {
			return false
		}
	case s.lp == nil:
		s.buf = s.c.appendTokens(s.buf, s.r, i, end, finish)
		return true
	default:
		s.buf = s.c.appendOpen(s.buf, s.r, i, end)
	}
	if s.lp == nil {
		s.buf = append(s.buf, "null"...)
	} else {
		s.buf, s.offset = s.lp.appendLP(s.buf, s.r, i, end, s.offset)
	}
	s.buf = s.c.appendTail(s.buf, s.r, finish)
	return true
}

// flush sends what is buffered; false if the client is gone.
func (s *sseStream) flush() bool {
	var ok bool
	if s.buf, ok = send(s.w, s.flusher, s.buf); !ok {
		return false
	}
	if t := timing; t != nil {
		now := s.e.now()
		for i := s.flushedTo; i < s.written; i++ {
			t.token(now - s.r.emitAt[i])
		}
	}
	s.flushedTo = s.written
	return true
}

// send writes buf, unless empty, and flushes: one streaming response's
// wake-up. It returns buf emptied for reuse; false if the client is gone.
func send(w http.ResponseWriter, flusher http.Flusher, buf []byte) ([]byte, bool) {
	if len(buf) > 0 {
		if _, err := w.Write(buf); err != nil {
			return buf, false
		}
		buf = buf[:0]
	}
	if flusher != nil {
		flusher.Flush()
	}
	return buf, true
}

// faultAt applies the stream faults due before token i (i tokens sent);
// false when the stream is over.
func (s *sseStream) faultAt(i int) bool {
	f, e, r := s.e.faults, s.e, s.r
	switch i {
	case f.midStreamErrorAfter:
		e.sched.abort(r, "error")
		s.buf = append(s.buf, `data: {"error":{"message":"injected error after `...)
		s.buf = strconv.AppendInt(s.buf, int64(i), 10)
		s.buf = append(s.buf, ` tokens (fault mid-stream-error-after)","type":"InternalServerError","param":null,"code":500}}`+"\n\n"...)
		s.buf = append(s.buf, sseDone...)
		s.flush()
		e.requestFinished(s.hr)
		return false
	case f.dropAfter:
		e.sched.abort(r, "abort")
		s.flush()
		e.requestFinished(s.hr)
		panic(http.ErrAbortHandler) // net/http closes the connection mid-stream
	}
	if i == f.malformedAfter {
		s.buf = append(s.buf, s.c.head...)
		s.buf = append(s.buf, `{"index":0,"delta":{"content":"trunc`+"\n\n"...)
	}
	if i == f.stallAfter {
		if !s.flush() || !e.wait(s.hr, f.stallFor) { // wall time, not sped up
			e.clientGone(r, i)
			return false
		}
	}
	return true
}
