package bench

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/client"
)

// sender is what sends one run: the load loop. It sends the spec's
// conversations in the workload's mode (sequential, closed or open loop),
// turn by turn, retrying 429/503 and waiting for a server that went away
// when asked, also to the direct side (direct.go), and hands every
// attempt's record to the run's collector. Its fields are the Runner's
// sending settings; the run's state is the runState each method is given.
type sender struct {
	client     Doer
	direct     Doer // Runner.Direct; nil: no direct side
	retries    int
	backoff    time.Duration
	requestIDs bool
	waitServer func(ctx context.Context) bool // nil: a failed connect is a failure
}

// warmup sends the warm-up requests one at a time; they are recorded (marked)
// but left out of every statistic and of the /metrics delta.
func (s *sender) warmup(st *runState) {
	for i := 0; i < st.spec.Workload.Warmup && st.sendCtx.Err() == nil; i++ {
		s.converse(st, st.prepare(i, true))
	}
}

// measure sends the measured requests in the workload's mode.
func (s *sender) measure(st *runState, start time.Time) {
	w := st.spec.Workload
	if w.Duration > 0 {
		t := time.AfterFunc(w.Duration, func() { st.stop(errDurationDone) })
		defer t.Stop()
	}
	st.coll.first = start // no worker runs yet
	if w.Mode == workload.ModeRate || w.Mode == workload.ModeTrace {
		s.openLoop(st, start)
		return
	}
	s.closedLoop(st)
}

// closedLoop keeps Concurrency conversations (this shard's workers) in
// flight: each worker sends its next as soon as its last one ends.
func (s *sender) closedLoop(st *runState) {
	w := st.spec.Workload
	var next atomic.Int64
	var wg sync.WaitGroup
	sh := st.spec.Shard
	for k := 0; k < sh.workers(w.Concurrency); k++ {
		wg.Go(func() {
			for st.sendCtx.Err() == nil {
				i := sh.index(int(next.Add(1) - 1))
				if w.Requests > 0 && i >= w.Requests {
					return
				}
				s.converse(st, st.prepare(i, false))
			}
		})
	}
	wg.Wait()
}

// job is one conversation to send: its index among the measured ones (or
// the warm-up's), its intended start (open loop) and its first request,
// built before that time so the send only reads.
type job struct {
	index    int
	warmup   bool
	intended time.Time
	conv     workload.Conversation
	req      client.Request
}

// openLoop paces sends by the arrival process (a trace: by its send
// times), never waiting on responses: when every worker is busy it starts
// another (up to MaxWorkers), the way vegeta's attacker does, so slow
// responses cannot delay the schedule (no coordinated omission). Sends
// still late are counted in RateStats.
func (s *sender) openLoop(st *runState, start time.Time) {
	w := st.spec.Workload
	pacer := workload.NewPacer(w)
	pool := &sendPool{s: s, st: st, jobs: make(chan job), max: w.MaxWorkers}
	defer pool.close()
	next := start
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	limit, base := openLoopSpan(st)
	sh := st.spec.Shard
	for i := 0; (limit == 0 && w.Mode != workload.ModeTrace) || i < limit; i++ {
		if w.Mode != workload.ModeTrace && i > 0 {
			next = next.Add(pacer.Next()) // every shard draws the whole schedule
		}
		if !sh.mine(i) {
			if w.Duration > 0 && w.Mode != workload.ModeTrace && next.Sub(start) >= w.Duration {
				return
			}
			continue
		}
		j := st.prepare(i, false)
		if w.Mode == workload.ModeTrace {
			next = start.Add(j.conv.At - base)
		}
		if w.Duration > 0 && next.Sub(start) >= w.Duration {
			return
		}
		if !waitUntil(st.sendCtx, timer, next) || st.sendCtx.Err() != nil {
			return
		}
		j.intended = next
		if !pool.send(j) {
			return
		}
	}
}

// openLoopSpan is how many conversations an open-loop run sends (0: until
// --duration) and, for a trace, the time its first measured entry is sent
// at, which the schedule counts from.
func openLoopSpan(st *runState) (limit int, base time.Duration) {
	w := st.spec.Workload
	limit = w.Requests
	if w.Mode != workload.ModeTrace {
		return limit, 0
	}
	// A trace is sent once: the warm-up took its first entries.
	if rest := st.spec.Source.Len() - w.Warmup; limit == 0 || limit > rest {
		limit = max(rest, 0)
	}
	if limit > 0 {
		base = st.spec.Source.Conversation(w.Warmup).At
	}
	return limit, base
}

// waitUntil waits on timer for t; false when sending stopped first.
func waitUntil(ctx context.Context, timer *time.Timer, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer.Reset(d)
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// sendPool is an open loop's workers: a job goes to an idle one, or to a
// new one while every one is busy (up to max), so that slow responses
// never hold a send back; only at max does a send wait.
type sendPool struct {
	s       *sender
	st      *runState
	jobs    chan job
	wg      sync.WaitGroup
	workers int
	max     int
}

// send hands j to a worker; false when sending stopped while it waited.
func (p *sendPool) send(j job) bool {
	select {
	case p.jobs <- j:
		return true
	default:
	}
	if p.workers < p.max {
		p.workers++
		p.wg.Go(func() {
			p.s.converse(p.st, j)
			for j := range p.jobs {
				p.s.converse(p.st, j)
			}
		})
		return true
	}
	select { // at the bound: this send waits, and will be counted late
	case p.jobs <- j:
		return true
	case <-p.st.sendCtx.Done():
		return false
	}
}

// close lets the workers finish the conversations they hold and waits.
func (p *sendPool) close() {
	close(p.jobs)
	p.wg.Wait()
}

// prepare gets conversation index (warm-up ones come first in the source)
// and builds its first request.
func (st *runState) prepare(index int, warmup bool) job {
	si := index
	if !warmup {
		si += st.spec.Workload.Warmup
	}
	if st.spec.Source.Len() == 0 {
		si += st.spec.Workload.Offset
	}
	j := job{index: index, warmup: warmup, conv: st.spec.Source.Conversation(si)}
	if m := st.spec.Request.LoRA; m != nil && j.conv.LoRA == "" {
		j.conv.LoRA = m.Pick(st.spec.Workload.Seed, si)
	}
	toolSession(&j.conv, st.spec.Request.ToolRounds, si)
	j.req = st.request(&j.conv, 0, nil)
	return j
}

// converse sends j's turns in order, each with the whole history: earlier
// turns and the answers as received. A failed turn ends the session (there
// is no answer to continue from); Ctrl-C, a server exit or the end of
// --duration stop it between turns.
func (s *sender) converse(st *runState, j job) {
	req := j.req
	for k := range j.conv.Turns {
		if k > 0 {
			if !think(st, &j, k) {
				return
			}
			req = st.request(&j.conv, k, req.Messages)
		}
		tr := s.do(st, &j, k, &req)
		if k == len(j.conv.Turns)-1 {
			return
		}
		if !tr.OK() {
			st.cut.Add(1)
			return
		}
		if result, tools := answersTool(&j.conv, k+1, st.spec.Request.ToolRounds); tools {
			// The next turn answers this one's tool calls.
			var ok bool
			if req.Messages, ok = toolHistory(req.Messages, &tr, j.conv.Session, k, result); !ok {
				st.cut.Add(1) // no call to answer: the session cannot go on
				return
			}
			continue
		}
		// The next turn's history: this request's messages and the answer.
		req.Messages = append(req.Messages[:len(req.Messages):len(req.Messages)],
			client.Message{Role: "assistant", Content: tr.Text})
	}
}

// think waits the think time before turn k (0 without --think-time); false
// when sending stopped meanwhile.
func think(st *runState, j *job, k int) bool {
	if t := &j.conv.Turns[k]; t.ThinkSet { // a recorded session's pause
		return sleepCtx(st.sendCtx, t.Think) && st.sendCtx.Err() == nil
	}
	d := st.spec.Workload.ThinkTime
	if d.IsZero() {
		return st.sendCtx.Err() == nil
	}
	var pcg rand.PCG
	pcg.Seed(uint64(st.spec.Workload.Seed)^0x7417c, uint64(j.index)<<8|uint64(k&0xff))
	s := max(d.Sample(rand.New(&pcg)), 0) //nolint:gosec // load pattern
	return sleepCtx(st.sendCtx, time.Duration(s*float64(time.Second))) && st.sendCtx.Err() == nil
}

// request builds turn k of conv. history is the previous turn's messages
// with its answer (nil for the first turn). Generated text and output
// lengths are clipped to the server's max_model_len (counted).
func (st *runState) request(conv *workload.Conversation, k int, history []client.Message) client.Request {
	spec := st.spec
	req := client.Request{
		Endpoint:    spec.Request.Endpoint,
		Model:       spec.Request.Model,
		MaxTokens:   spec.Request.MaxTokens,
		ExactLength: spec.Request.ExactLength,
		Stream:      spec.Request.Stream,
		KeepText:    k < len(conv.Turns)-1,
		Arrivals:    spec.Request.Arrivals,
	}
	spec.Request.Structured.Apply(&req)
	if req.Endpoint == EndpointOllamaChat {
		req.Seed, req.SeedSet = spec.Workload.Seed, true
	}
	if conv.LoRA != "" {
		req.Model = conv.LoRA // vLLM serves an adapter as a model of its own
	}
	t := &conv.Turns[k]
	maxLen := spec.Request.MaxModelLen
	inputCap := 0
	if maxLen > 1 {
		inputCap = maxLen - 1
	}
	overhead := 0
	if k == 0 && t.Messages == nil {
		overhead = workload.PromptOverhead(spec.Request.Tokens, conv)
	}
	text, clipped := t.UserText(conv.TextSeed^st.textSalt, inputCap, spec.Request.Tokens, overhead)
	if t.OutputTokens > 0 {
		req.MaxTokens = t.OutputTokens
	}
	// A dataset's text has no count here: its output alone must fit.
	if used := max(1, min(t.Tokens, inputCap)); maxLen > 0 && req.MaxTokens > maxLen-used {
		req.MaxTokens, clipped = max(1, maxLen-used), true
	}
	if clipped {
		st.clipped.Add(1)
	}
	switch {
	case t.Messages != nil:
		req.Messages = t.Messages
	case t.ToolResult != "":
		req.Messages = history // with the recorded tool messages (converse)
	case history != nil:
		req.Messages = append(history[:len(history):len(history)], client.Message{Role: "user", Content: text})
	case conv.System != "":
		req.Messages = []client.Message{{Role: "system", Content: conv.System}, {Role: "user", Content: text}}
	default:
		req.Messages = []client.Message{{Role: "user", Content: text}}
	}
	if spec.Request.ToolRounds > 0 {
		toolTurn(&req, history, k, len(conv.Turns))
	} else if _, call := answersTool(conv, k+1, 0); !call && conv.ToolSession() {
		req.ToolChoice = []byte(`"none"`) // a recorded text answer
	}
	if req.Endpoint == EndpointCompletions {
		// Messages stay for the next turn's history; completions sends only
		// the prompt.
		req.Prompt = joinContents(req.Messages)
	}
	return req
}

// textSalt is run's salt for generated text: FNV-1a of its name.
func textSalt(run string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(run))
	return h.Sum64()
}

// joinContents is a message list as one completions prompt, one message
// per line.
func joinContents(msgs []client.Message) string {
	if len(msgs) == 1 {
		return msgs[0].Content
	}
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n")
}

// do sends turn k of j (retrying 429/503 when asked), records every
// attempt and returns the last attempt's trace.
func (s *sender) do(st *runState, j *job, k int, req *client.Request) client.Trace {
	intended := time.Time{}
	if k == 0 {
		intended = j.intended // later turns follow the answers, not the schedule
	}
	for attempt := 1; ; attempt++ {
		if !j.warmup {
			st.sent.Add(1)
		}
		if s.requestIDs {
			req.ID = RequestID(st.spec.Name, j.index)
		}
		tr := s.send(st, j, k, attempt, req)
		var lag time.Duration
		if !intended.IsZero() {
			lag = tr.Start.Sub(intended)
		}
		retry := attempt <= s.retries && (tr.Status == 429 || tr.Status == 503) && st.sendCtx.Err() == nil
		rec := attemptRecord(st, j, k, req, &tr, lag)
		if attempt > 1 {
			rec.Attempt = attempt
		}
		rec.Retried = retry
		st.coll.keep(rec, attempt == 1 && !j.warmup && !intended.IsZero(), lag)
		if tr.Error == client.ErrConnect && s.waitServer != nil {
			s.waitServer(st.sendCtx) // the server is down: wait for it, do not flood
		}
		if !retry {
			return tr
		}
		if !j.warmup {
			st.retries.Add(1)
		}
		if !sleepCtx(st.sendCtx, s.retryWait(&tr, attempt)) {
			return tr
		}
	}
}

// attemptRecord is the record of one attempt at turn k of j: its trace
// and what the workload asked of it.
func attemptRecord(st *runState, j *job, k int, req *client.Request, tr *client.Trace, lag time.Duration) result.Record {
	t := &j.conv.Turns[k]
	rec := store.NewRecord(st.spec.Name, j.index, j.warmup, tr, lag)
	rec.RequestID = req.ID
	rec.PrefixGroup = j.conv.Group
	rec.LoRA = j.conv.LoRA
	if j.conv.Session != "" {
		rec.Session, rec.Turn = j.conv.Session, k+1
	}
	if t.OutputTokens > 0 || req.MaxTokens != st.spec.Request.MaxTokens {
		rec.MaxTokens = req.MaxTokens // the source's length, or one clipped to fit
	}
	if k == 0 && t.Tokens > 0 && t.Text == "" && t.Messages == nil {
		n := t.Tokens
		if ml := st.spec.Request.MaxModelLen; ml > 1 {
			n = min(n, ml-1) // as request clipped it
		}
		rec.PromptTokensRequested = n + j.conv.SystemTokens
	}
	return rec
}

// retryWait is the wait before retrying after attempt: the backoff, or
// the server's Retry-After when longer (up to maxRetryAfter).
func (s *sender) retryWait(tr *client.Trace, attempt int) time.Duration {
	wait := backoff(s.backoff, attempt)
	if tr.RetryAfter > wait && tr.RetryAfter <= maxRetryAfter {
		wait = tr.RetryAfter // the server said when to come back
	}
	return wait
}

// maxRetryAfter bounds how long a server's Retry-After may hold a request.
const maxRetryAfter = 30 * time.Second

// backoff is the wait before retry attempt+1: first, doubled per attempt, at
// most 5 s.
func backoff(first time.Duration, attempt int) time.Duration {
	d := first << (attempt - 1)
	if d > 5*time.Second || d <= 0 {
		d = 5 * time.Second
	}
	return d
}

// sleepCtx sleeps d unless ctx ends first; it reports whether it slept fully.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
