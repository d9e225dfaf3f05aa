package sim

import (
	"bytes"
	"net/http"
	"slices"
	"strconv"
)

// n > 1, as vLLM V1 serves it: the API server fans the request out into n
// child requests with the same prompt (ParentRequest), which reach the
// engine core together; the first to be scheduled allocates the prompt's
// blocks and caches them at once, so the others find them cached in the
// same step and prefill only the last partial block. Each child samples
// its own text and length. Usage counts the prompt once and the tokens of
// every choice; /metrics counts each child as a request, as vLLM's engine
// core does.

// checkN applies vLLM's SamplingParams checks on n.
func (req *genRequest) checkN() *reqError {
	if req.N == nil {
		return nil
	}
	n := *req.N
	switch {
	case n < 1:
		return badRequest("n", "n must be at least 1, got %d.", n)
	case n > 1 && req.Temperature != nil && *req.Temperature < 1e-5:
		return badRequest("n", "n must be 1 when using greedy sampling, got %d.", n)
	}
	return nil
}

// n is the number of choices asked for.
func (req *genRequest) n() int {
	if req.N == nil {
		return 1
	}
	return *req.N
}

// fanOut returns the requests that answer req's choices: r alone, or r as
// choice 0 and n-1 siblings. They share r's notify channel, so one handler
// wakes for any of them.
func (e *Engine) fanOut(r *request, req *genRequest) []*request {
	n := req.n()
	rs := make([]*request, n)
	rs[0] = r
	for i := 1; i < n; i++ {
		c := &request{id: strconv.Itoa(i) + "_" + r.id, index: i, key: splitmix64(r.key ^ uint64(i)),
			prompt: r.prompt, ids: slices.Clone(r.ids), hashes: slices.Clone(r.hashes), hashRoot: r.hashRoot, cached: -1,
			maxTokens: r.maxTokens, arrival: r.arrival, notify: r.notify}
		c.goneAt.Store(-1)
		e.setLength(c, req.MinTokens, req.IgnoreEOS)
		rs[i] = c
	}
	return rs
}

func allDone(rs []*request) bool {
	for _, r := range rs {
		if !r.done.Load() {
			return false
		}
	}
	return true
}

// withIndex is c's fragments for choice i.
func (c *chunker) withIndex(i int) *chunker {
	ci := *c
	idx := []byte(`{"index":` + strconv.Itoa(i) + `,`)
	ci.open = bytes.Replace(c.open, []byte(`{"index":0,`), idx, 1)
	if c.role != nil {
		ci.role = append(slices.Clone(c.head), bytes.Replace(c.role[len(c.head):], []byte(`{"index":0,`), idx, 1)...)
	}
	return &ci
}

// streamChoices serves a streaming request with n > 1 choices (rs): as
// vLLM does, a role chunk per choice first (chat), then each choice's
// tokens in their own chunks, "index" naming the choice, a finish chunk per
// choice, the usage chunk (the prompt once, every choice's tokens) and
// [DONE]; with continuous usage, each chunk carries its choice's tokens so
// far. The --fault stream faults apply to n = 1 streams only.
func (e *Engine) streamChoices(w http.ResponseWriter, hr *http.Request, rs []*request, c *chunker, lp *logprober, usage, continuous bool) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	cs := &choiceStreams{e: e, rs: rs, c: c, ss: make([]*sseStream, len(rs))}
	for i, r := range rs {
		cs.ss[i] = &sseStream{e: e, hr: hr, r: r, c: c.withIndex(i), lp: lp, continuous: continuous}
	}
	for {
		if !cs.wait(hr) {
			return
		}
		cs.appendRoles()
		done, completion := cs.appendTokens()
		if done && usage {
			cs.buf = c.appendUsage(cs.buf, rs[0].usagePrompt, completion, e.promptDetails(rs[0]))
			cs.buf = appendCompletionDetails(cs.buf, e.completionDetails(rs))
		}
		if done {
			cs.buf = append(cs.buf, sseDone...)
		}
		var ok bool
		if cs.buf, ok = send(w, flusher, cs.buf); !ok {
			cs.gone()
			return
		}
		if done {
			for _, r := range rs {
				e.logRequestEnd(r, false)
			}
			e.requestFinished(hr)
			return
		}
	}
}

// choiceStreams is an n > 1 streaming response in progress: one sseStream
// per choice, writing into one shared buffer, sent once per wake-up. Owned
// by its handler goroutine.
type choiceStreams struct {
	e       *Engine
	rs      []*request
	ss      []*sseStream
	c       *chunker
	buf     []byte
	started bool // the role chunks are out
}

// wait waits for the next step's tokens; false when the handler is to
// return: the client left or the engine is stopping.
func (cs *choiceStreams) wait(hr *http.Request) bool {
	select {
	case <-cs.rs[0].notify: // shared by the choices
		return true
	case <-hr.Context().Done():
		cs.gone()
	case <-cs.e.stopping:
		for _, r := range cs.rs {
			cs.e.sched.abort(r, "abort")
		}
	}
	return false
}

// gone accounts for a client that left.
func (cs *choiceStreams) gone() {
	for _, s := range cs.ss {
		cs.e.clientGone(s.r, s.written)
	}
}

// appendRoles appends every choice's role chunk (chat) once any choice has
// a token: vLLM sends them with the first token.
func (cs *choiceStreams) appendRoles() {
	if cs.started || cs.c.role == nil || !slices.ContainsFunc(cs.rs, func(r *request) bool { return r.emitted.Load() > 0 }) {
		return
	}
	for _, s := range cs.ss {
		s.buf = cs.buf
		s.appendRole()
		cs.buf = s.buf
	}
	cs.started = true
}

// appendTokens appends each choice's chunks for the tokens emitted since the
// last wake-up. done: every choice has all its tokens; completion is their
// sum.
func (cs *choiceStreams) appendTokens() (done bool, completion int) {
	done = true
	for _, s := range cs.ss {
		s.buf = cs.buf
		for n := int(s.r.emitted.Load()); s.written < n; {
			s.appendNext(s.r.chunkLen(s.written))
		}
		cs.buf = s.buf
		done = done && s.written == s.r.target
		completion += s.r.target
	}
	return done, completion
}
