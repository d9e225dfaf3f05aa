package sim

import (
	"net/http"
	"strconv"
	"time"
)

// chunker holds one request's pre-rendered SSE fragments, so that a token
// costs two appends and its word, with no allocation.
type chunker struct {
	head       []byte // `data: {"id":...,"model":...,"choices":[`
	role       []byte // the chat role-only first chunk, whole
	open       []byte // `{"index":0,"delta":{"content":"` or `{"index":0,"text":"`
	close      []byte // the rest of a token chunk, finish_reason null
	closeFinal map[string][]byte
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
	c := &chunker{head: head, closeFinal: map[string][]byte{}}
	final := func(reason string) []byte {
		if chat {
			return []byte(`"},"logprobs":null,"finish_reason":"` + reason + `","stop_reason":null}]}` + "\n\n")
		}
		return []byte(`","logprobs":null,"finish_reason":"` + reason + `","stop_reason":null}]}` + "\n\n")
	}
	if chat {
		c.role = append(append([]byte{}, head...), `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
		c.open = []byte(`{"index":0,"delta":{"content":"`)
		c.close = []byte(`"},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	} else {
		c.open = []byte(`{"index":0,"text":"`)
		c.close = []byte(`","logprobs":null,"finish_reason":null,"stop_reason":null}]}` + "\n\n")
	}
	for _, r := range []string{"length", "stop"} {
		c.closeFinal[r] = final(r)
	}
	return c
}

func (c *chunker) appendToken(b []byte, text string, finish string) []byte {
	b = append(b, c.head...)
	b = append(b, c.open...)
	b = appendJSONString(b, text)
	if finish == "" {
		return append(b, c.close...)
	}
	return append(b, c.closeFinal[finish]...)
}

func (c *chunker) appendUsage(b []byte, prompt, completion int) []byte {
	b = append(b, c.head...)
	b = append(b, `],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	return append(b, "}}\n\n"...)
}

var sseDone = []byte("data: [DONE]\n\n")

// stream serves a streaming request. This goroutine alone writes to the
// socket: the engine loop only raises r.emitted and wakes it, so a slow
// client never slows the loop. It writes every token emitted since its last
// wake-up, one chunk per token, and flushes once per wake-up (per step).
func (e *Engine) stream(w http.ResponseWriter, hr *http.Request, r *request, c *chunker, usage bool) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush() // headers now, as Starlette's StreamingResponse does
	}
	f := e.faults
	buf := make([]byte, 0, 4096)
	written, flushedTo := 0, 0
	flush := func() bool {
		if len(buf) > 0 {
			if _, err := w.Write(buf); err != nil {
				return false
			}
			buf = buf[:0]
		}
		if flusher != nil {
			flusher.Flush()
		}
		if e.paceHook != nil {
			now := e.now()
			for i := flushedTo; i < written; i++ {
				e.paceHook(now - r.emitAt[i])
			}
		}
		flushedTo = written
		return true
	}
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
		if n > written && written == 0 && c.role != nil {
			buf = append(buf, c.role...)
		}
		for ; written < n; written++ {
			if written == f.midStreamErrorAfter {
				e.sched.abort(r, "error")
				buf = append(buf, `data: {"error":{"message":"injected error after `...)
				buf = strconv.AppendInt(buf, int64(written), 10)
				buf = append(buf, ` tokens (fault mid-stream-error-after)","type":"InternalServerError","param":null,"code":500}}`+"\n\n"...)
				buf = append(buf, sseDone...)
				flush()
				e.requestFinished()
				return
			}
			if written == f.dropAfter {
				e.sched.abort(r, "abort")
				flush()
				e.requestFinished()
				panic(http.ErrAbortHandler) // closes the connection mid-stream
			}
			if written == f.malformedAfter {
				buf = append(buf, c.head...)
				buf = append(buf, `{"index":0,"delta":{"content":"trunc`+"\n\n"...)
			}
			if written == f.stallAfter {
				if !flush() || !e.stall(hr, f.stallFor) {
					e.clientGone(r, written)
					return
				}
			}
			finish := ""
			if written == r.target-1 {
				finish = r.natural
			}
			text := ""
			if finish != "stop" {
				text = tokenText(r.key, written) // EOS (the last token of a "stop") has no text
			}
			buf = c.appendToken(buf, text, finish)
		}
		if written == r.target {
			if usage {
				buf = c.appendUsage(buf, r.prompt, r.target)
			}
			buf = append(buf, sseDone...)
			flush()
			e.requestFinished()
			return
		}
		if f.bufferEvery > 0 && written-flushedTo < f.bufferEvery {
			continue // a buffering proxy: hold tokens until N have piled up
		}
		if !flush() {
			e.clientGone(r, written)
			return
		}
	}
}

// stall holds the stream for d (wall time, not sped up); false if the client left.
func (e *Engine) stall(hr *http.Request, d time.Duration) bool { return e.wait(hr, d) }
