package sim

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servebench/servebench/engine/perf"
)

// Request states, owned by the scheduler goroutine.
const (
	stateNew = iota
	stateWaiting
	stateRunning
	stateFinished
)

// request is one generation request. The handler fills the first block and
// then only reads the shared fields; the scheduler owns the middle block.
type request struct {
	// Set by the handler before submit; read-only afterwards.
	id          string
	index       int      // the choice this request answers (n > 1 fans out one request per choice)
	key         uint64   // seeds the generated text
	prompt      int      // prompt tokens
	ids         []uint32 // token ids: the prompt's, then (with prefix caching) each output token's as it is sampled
	hashes      []uint64 // block hash chain over ids' full blocks (prefix caching only)
	maxTokens   int
	target      int         // tokens to generate
	natural     string      // finish reason once target is reached: "length" or "stop"
	out         *answerText // the answer's text where not the plain word stream (sampling.go)
	usagePrompt int         // usage.prompt_tokens of the response: every prompt's tokens
	arrival     int64       // engine clock, ns: the request reached the API server
	queued      int64       // engine clock, ns: it joined the engine's waiting queue
	thinking                // which output tokens are reasoning (reasoning.go); zero: none
	lora        string      // the LoRA adapter it runs with (lora.go); "": the base model
	hashRoot    uint64      // its block hash chain's root, its adapter's (loraRoot); 0: rootHash

	// Owned by the scheduler goroutine.
	state                        int
	computed                     int     // tokens whose KV is computed
	output                       int     // tokens generated
	table                        []int32 // KV blocks held, in token order
	hashedBlocks                 int     // leading blocks of table registered in the prefix cache
	cached                       int     // prompt tokens found in the prefix cache at first admission; -1 before
	preemptions                  int
	scheduledAt, firstAt, lastAt int64
	reason                       string // final finish reason, set before done

	// Shared: the scheduler writes emitAt[i] before raising emitted past i,
	// and sets reason before done; the handler reads after loading them.
	emitted atomic.Int64
	emitAt  []int64 // modelled emission time of token i (engine clock, ns); nil without the timing probe
	chunks  []uint8 // with speculative decoding: tokens emitted in one step from token i on (see chunkLen)
	done    atomic.Bool
	notify  chan struct{} // cap 1: "emitted or done changed"
	goneAt  atomic.Int64  // tokens emitted when the client left; -1 while connected

	abortReason string // set by the handler before abort: "abort" or "error"
	remote      bool   // a consumer's request whose prompt KV came from the producer (kvrole.go); scheduler-owned after submit
}

func (r *request) wake() {
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// batchItem is one request's share of a step: n tokens computed, plus
// draft tokens verified (speculative decoding).
type batchItem struct {
	r     *request
	n     int
	draft int
}

// scheduler is the engine loop, vLLM V1's EngineCore step loop in one
// goroutine. Each step it picks a batch (continuous batching: requests join
// and leave between steps), asks the performance model how long the step
// takes, sleeps until the step's end on a real timer, and then emits one
// token to every sequence that finished its (pre)fill or decoded, all at
// once, as a GPU step does.
//
// Why TTFT and queue wait grow under load, in this model as in vLLM:
//   - Slots: at most MaxNumSeqs requests run; the rest wait in a FIFO queue,
//     and their TTFT includes that wait (vLLM measures TTFT from arrival).
//   - Blocks: a request is admitted only when the KV blocks for its first
//     chunk are free; when a running decode needs a block and none is free,
//     the youngest running request is preempted (its blocks freed, its
//     progress recomputed later from the front of the queue).
//   - Prefix caching (prefix.go): a request's leading full blocks found in
//     the cache are neither allocated nor prefilled again, so a shared
//     system prompt or a resent conversation costs only its new tokens.
//   - Chunked prefill: each step has a token budget (MaxNumBatchedTokens)
//     shared by decodes (one token each, scheduled first) and prefill chunks,
//     so a long prompt takes several steps and a new prompt shares its steps
//     with everyone's decodes.
//   - Slower steps: a step reads the weights once plus the KV cache of every
//     sequence in the batch, so the more and longer the running sequences,
//     the longer each step, and every token of every request waits for it.
type scheduler struct {
	e         *Engine
	perf      perfModel
	speedup   float64
	maxSeqs   int
	maxTokens int // per-step token budget
	pool      *blockPool
	bs        int
	cacheWin  hitWindow // the stats log line's prefix cache hit rate
	stats     loopStats
	vocabIDs  [len(vocab)]uint32 // generated words' token ids
	spec      int                // draft tokens per decode step (--speculative-tokens); 0 is off
	accept    float64            // --acceptance-rate
	reserve   bool               // --kv-allocation contiguous: admission reserves prompt + max_tokens (kvalloc.go)
	specLog   specCounts         // drafts for the stats log
	lora      *loraSlots         // nil without --lora-modules
	inUse     []string           // scratch: the adapters of the batch being scheduled

	mu     sync.Mutex // guards inbox, aborts
	inbox  []*request
	aborts []*request
	wakeCh chan struct{}

	// Loop-owned.
	waiting []*request
	running []*request
	batch   []batchItem
	spareIn []*request
	spareAb []*request
	prevEnd int64 // end of the previous step; 0 after an idle spell
	lastEnd int64 // end of the last step ever run
}

// submit hands rs to the engine loop together (the choices of one
// request join the queue in the same step); r.queued must be set.
func (s *scheduler) submit(rs ...*request) {
	s.mu.Lock()
	s.inbox = append(s.inbox, rs...)
	s.mu.Unlock()
	s.kick()
}

// abort ends r early with reason "abort" (client gone, shutdown) or
// "error" (an injected mid-stream error).
func (s *scheduler) abort(r *request, reason string) {
	s.e.logRequestEnd(r, true)
	r.abortReason = reason
	s.mu.Lock()
	s.aborts = append(s.aborts, r)
	s.mu.Unlock()
	s.kick()
}

func (s *scheduler) kick() {
	select {
	case s.wakeCh <- struct{}{}:
	default:
	}
}

// catchUp is how far behind its modelled schedule the loop may fall and
// still catch up (by skipping sleeps) instead of starting afresh: longer
// than a GC pause or a CPU-starved wake-up on a busy, shared 2-core machine
// (a load average of 30 starves a thread for a few hundred ms at times).
const catchUp = time.Second

// run is the step loop; it returns when ctx is done.
//
// Token times in the metrics are the modelled step ends, not the moments
// the loop happened to wake: the engine reports when its GPU would have
// produced each token, so a busy host (timer slack, CPU contention, GC)
// shows up only as the difference between the client's clock and the
// engine's, as with a real server's two clocks. Arrival is real time.
func (s *scheduler) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		s.drain()
		st, start := s.schedule(s.stepStart())
		s.gauges()
		if len(s.batch) == 0 {
			s.prevEnd = 0 // idle: the next step starts when work arrives
			select {
			case <-s.wakeCh:
				continue
			case <-ctx.Done():
				return
			}
		}
		d := s.perf.StepTime(st) + s.guidedCost() + s.loraOwed()
		end := start + int64(float64(d)/s.speedup)
		s.e.power.step(d.Seconds(), end)
		if !s.e.sleepUntil(ctx, timer, end) {
			return
		}
		s.prevEnd, s.lastEnd = end, end
		s.complete(end)
	}
}

// stepStart is when the next step starts on the modelled GPU. Steps run
// back to back: the next starts where the previous one ended, so wake-up
// latency (Go's timers overshoot short sleeps by up to 1 ms; a loaded host
// delays any wake-up) does not add up over a stream, and a late step is
// followed by a shorter sleep, or none, until the loop is back on schedule.
// After an idle spell, the step starts when the first waiting request
// joined the queue (vLLM's busy loop picks it up at once), not when this
// goroutine got around to waking up.
func (s *scheduler) stepStart() int64 {
	now := s.e.now()
	switch {
	case s.prevEnd > 0 && now-s.prevEnd <= int64(catchUp):
		return s.prevEnd
	case s.prevEnd > 0:
		return now // too far behind to catch up: resume from now
	case len(s.waiting) > 0:
		return min(max(s.waiting[0].queued, s.lastEnd), now)
	}
	return now
}

// drain moves arrivals into the waiting queue and carries out aborts.
func (s *scheduler) drain() {
	s.mu.Lock()
	in, ab := s.inbox, s.aborts
	s.inbox, s.aborts = s.spareIn[:0], s.spareAb[:0]
	s.mu.Unlock()
	for _, r := range in {
		r.state = stateWaiting
		s.waiting = append(s.waiting, r)
	}
	if len(ab) > 0 {
		now := s.e.now()
		for _, r := range ab {
			switch r.state {
			case stateWaiting:
				s.waiting = remove(s.waiting, r)
			case stateRunning:
				s.running = remove(s.running, r)
				s.freeBlocks(r)
			default:
				continue
			}
			s.finish(r, r.abortReason, now)
		}
	}
	s.spareIn, s.spareAb = in[:0], ab[:0]
}

func remove(q []*request, r *request) []*request {
	for i, x := range q {
		if x == r {
			return append(q[:i], q[i+1:]...)
		}
	}
	return q
}

// schedule picks this step's batch the way vLLM V1's scheduler does: running
// requests first (decodes and unfinished prefill chunks), preempting the
// youngest when blocks run out; then, if nothing was preempted, waiting
// requests in FIFO order while slots, budget and blocks allow.
//
// It returns the step's start: start, or later when a newly admitted
// request joined the queue after it (the loop may be running behind the
// modelled clock, catching up, and a step cannot start before its inputs
// arrive).
func (s *scheduler) schedule(start int64) (perf.Step, int64) {
	var st perf.Step
	s.batch = s.batch[:0]
	budget := s.maxTokens
	preempted := false
	for i := 0; i < len(s.running) && budget > 0; i++ {
		r := s.running[i]
		n := min(r.prompt+r.output-r.computed, budget)
		if n <= 0 {
			continue
		}
		draft := s.drafts(r, n, budget)
		self := false
		for !s.alloc(r, r.computed+n+draft) {
			v := s.running[len(s.running)-1]
			s.running = s.running[:len(s.running)-1]
			s.preempt(v)
			preempted = true
			if v == r {
				self = true
				break
			}
		}
		if self {
			break
		}
		s.add(&st, r, n, draft)
		budget -= n + draft
	}
	if !preempted {
		var adm cacheStats
		s.inUse = adapters(s.inUse, s.running)
		for i := 0; i < len(s.waiting) && len(s.running) < s.maxSeqs && budget > 0; {
			r := s.waiting[i]
			if s.lora != nil && !s.lora.fits(r, s.inUse) {
				i++ // one adapter too many: vLLM skips it this step, later requests may go
				continue
			}
			n, ok := s.admit(r, budget, &adm)
			if !ok {
				break // FIFO: the head waits for blocks, nobody overtakes it
			}
			if i == 0 {
				s.waiting = s.waiting[1:]
			} else {
				s.waiting = slices.Delete(s.waiting, i, i+1)
			}
			if s.lora != nil {
				s.lora.use(r, s.inUse)
			}
			r.state = stateRunning
			s.running = append(s.running, r)
			if s.lora != nil {
				s.inUse = adapters(s.inUse, s.running)
			}
			start = max(start, r.queued)
			s.add(&st, r, n, 0)
			budget -= n
		}
		s.recordCacheStats(adm)
	}
	for _, b := range s.batch {
		if b.r.scheduledAt == 0 {
			b.r.scheduledAt = start
		}
	}
	if len(s.batch) > 0 {
		s.e.m().iterTok.Observe(float64(s.maxTokens - budget))
	}
	return st, start
}

func (s *scheduler) add(st *perf.Step, r *request, n, draft int) {
	s.batch = append(s.batch, batchItem{r, n, draft})
	if n == 1 && decoding(r) {
		st.ContextTokens += r.computed // KV already cached, read this step
		st.DecodeSeqs++
		st.SpecTokens += draft
	} else {
		st.AddPrefill(n, r.computed)
	}
}

// alloc makes r hold the blocks for tokens KV entries, if enough are free,
// and caches the full blocks among them (vLLM's allocate_slots).
func (s *scheduler) alloc(r *request, tokens int) bool {
	need := (tokens+s.bs-1)/s.bs - len(r.table)
	if need > s.pool.free {
		return false
	}
	for range need {
		r.table = append(r.table, s.pool.take())
	}
	if s.pool.caching {
		full := min(tokens, len(r.ids)) / s.bs
		if len(r.hashes) < full {
			r.hashes = appendHashesFrom(r.hashes, r.ids[:full*s.bs], s.bs, r.root())
		}
		for ; r.hashedBlocks < full; r.hashedBlocks++ {
			s.pool.cache(r.table[r.hashedBlocks], r.hashes[r.hashedBlocks])
		}
	}
	return true
}

// admit tries to start waiting request r with at most budget tokens: it
// looks r's prefix up in the cache (vLLM's get_computed_blocks: at most
// all tokens but the last), takes the cached blocks and allocates the
// rest of its first chunk. It returns the tokens to compute this step, or
// false when the blocks are not free (nothing changes then). A new
// request's lookup is counted in st once admitted, as vLLM counts it.
func (s *scheduler) admit(r *request, budget int, st *cacheStats) (int, bool) {
	if s.reserve {
		return s.admitReserved(r, budget)
	}
	if r.remote {
		return s.admitRemote(r, budget)
	}
	total := r.prompt + r.output
	hit := 0
	if s.pool.caching {
		if len(r.hashes) < len(r.ids)/s.bs {
			r.hashes = appendHashesFrom(r.hashes, r.ids, s.bs, r.root()) // a preempted request's output blocks
		}
		hit = s.pool.lookup(r.hashes, (total-1)/s.bs)
	}
	n := min(total-hit*s.bs, budget)
	need := (hit*s.bs+n+s.bs-1)/s.bs - hit
	if hit > 0 {
		need += s.pool.evictableHits(r.hashes, hit)
	}
	if need > s.pool.free {
		return 0, false
	}
	for _, h := range r.hashes[:hit] {
		r.table = append(r.table, s.pool.touch(h))
	}
	r.hashedBlocks = hit
	r.computed = hit * s.bs
	s.alloc(r, r.computed+n)
	if r.cached < 0 {
		r.cached = r.computed
	}
	if s.pool.caching && r.preemptions == 0 {
		st.requests++
		st.queries += total
		st.hits += r.computed
	}
	return n, true
}

// freeBlocks returns r's blocks to the pool; the full ones stay cached.
func (s *scheduler) freeBlocks(r *request) {
	s.pool.release(r.table)
	r.table = r.table[:0]
	r.hashedBlocks = 0
}

// preempt frees v's blocks and sends it to the front of the queue; its KV is
// recomputed (prompt and output so far) when it is scheduled again, less
// what is still in the prefix cache then.
func (s *scheduler) preempt(v *request) {
	s.freeBlocks(v)
	v.computed = 0
	v.preemptions++
	v.state = stateWaiting
	s.waiting = append(s.waiting, nil)
	copy(s.waiting[1:], s.waiting)
	s.waiting[0] = v
	s.e.m().preemptions.Inc()
}

// decoding reports whether r's next step is a decode: everything but its
// last sampled token is in the KV cache.
func decoding(r *request) bool { return r.output > 0 && r.computed == r.prompt+r.output-1 }

// complete applies a finished step at modelled time end: every request whose
// (pre)fill caught up samples one token, plus the drafts it accepted with
// speculative decoding, all stamped with that time.
func (s *scheduler) complete(end int64) {
	if t := timing; t != nil {
		t.step(s.e.now() - end)
	}
	m := s.e.m()
	finished := false
	for _, b := range s.batch {
		r := b.r
		r.computed += b.n
		if r.computed < r.prompt+r.output {
			continue // a prefill chunk; the prompt is not done yet
		}
		first := r.output
		emit := 1 + s.verify(r, b.draft)
		for ; r.output < first+emit; r.output++ {
			if r.output < len(r.emitAt) {
				r.emitAt[r.output] = end
			}
		}
		if first == 0 {
			r.firstAt = end
			m.ttft.Observe(float64(end-r.arrival) / 1e9)
			m.promptTokens.Add(float64(r.prompt))
			s.stats.promptTokens.Add(int64(r.prompt))
		} else {
			m.itl.Observe(float64(end-r.lastAt) / 1e9) // once per step, as vLLM V1 observes it
		}
		r.lastAt = end
		m.genTokens.Add(float64(emit))
		s.stats.genTokens.Add(int64(emit))
		if s.pool.caching {
			for j := first; j < r.output && j+1 < r.target; j++ {
				r.ids = append(r.ids, s.vocabIDs[tokenIndex(r.key, j)]) // the next step computes its KV
			}
		}
		if r.output >= r.target {
			s.freeBlocks(r)
			s.finish(r, r.natural, end) // publishes the last token after the metrics
			finished = true
			continue
		}
		r.emitted.Store(int64(r.output))
		r.wake()
	}
	if finished {
		kept := s.running[:0]
		for _, r := range s.running {
			if r.state == stateRunning {
				kept = append(kept, r)
			}
		}
		clear(s.running[len(kept):])
		s.running = kept
	}
}

// finish ends r with reason at time now (blocks already freed). The
// metrics are recorded before the handler can see the last token, so a
// client that scrapes right after its response finds its request counted.
func (s *scheduler) finish(r *request, reason string, now int64) {
	r.state = stateFinished
	r.reason = reason
	s.e.m().finished(r, now)
	if s.e.opts.DebugRequests {
		s.e.record(r, now)
	}
	// The request's blocks are already free: show it before the client can
	// see its stream end, so a scrape right after the last request is not
	// stale (the other gauges follow at the step boundary).
	s.kvGauge()
	r.emitted.Store(int64(r.output))
	if g := r.goneAt.Load(); g >= 0 && reason != "abort" {
		s.e.logf(apiPrefix, "serving_chat.py", 1217, "Request %s: client disconnected after %d tokens; %d tokens generated for nobody (--ignore-disconnect)", r.id, g, int64(r.output)-g)
	}
	r.done.Store(true)
	r.wake()
}

func (s *scheduler) gauges() {
	m := s.e.m()
	m.running.Set(float64(len(s.running)))
	m.waiting.Set(float64(len(s.waiting)))
	s.stats.running.Store(int64(len(s.running)))
	s.stats.waiting.Store(int64(len(s.waiting)))
	s.stats.usedBlocks.Store(int64(s.pool.used()))
	s.kvGauge()
	if m.lora != nil {
		running := adapters(s.inUse, s.running)
		m.lora.set(running, adapters(nil, s.waiting), time.Now())
	}
}

// loraOwed is the adapter copies this step waits for, and clears them.
func (s *scheduler) loraOwed() time.Duration {
	if s.lora == nil {
		return 0
	}
	d := s.lora.owed
	s.lora.owed = 0
	return d
}

func (s *scheduler) kvGauge() {
	s.e.m().kvUsage.Set(float64(s.pool.used()) / float64(len(s.pool.blocks)))
}

// fineSleepMax is the stretch at the end of a wait that sleepUntil hands to
// the OS's high-resolution sleep. Go's runtime timers are only good to
// about a millisecond when the process is idle (it parks in epoll_wait,
// whose timeout is in whole milliseconds, rounded up for sub-millisecond
// waits), which would make a 15 ms decode step late by 0-1 ms, and a
// sped-up 0.3 ms step take 1 ms.
const fineSleepMax = 2 * time.Millisecond

// shortestSleep is the shortest wait worth sleeping. A nanosleep(2) ends
// about 50 us late on this kind of host even with fineSleep's 1 us timer
// slack (the thread's wake-up; BenchmarkPacing logs the loop's lateness),
// so below half of that a sleep would end later than skipping it ends
// early, and would cost system calls and a thread hand-off too. Waits that
// short come from high --speedup values (a 15 ms step at --speedup 100000
// is 150 ns); the modelled times do not move, only the moment the loop
// acts on them.
const shortestSleep = 25 * time.Microsecond

// fineSleep blocks the calling thread for d with the OS's high-resolution
// sleep, or returns at once when d is under shortestSleep.
func fineSleep(d time.Duration) {
	if d >= shortestSleep {
		osSleep(d)
	}
}

// sleepUntil blocks until the engine clock reaches end (ns), or ctx is done
// (false). The bulk of a long wait is a runtime timer, so cancellation is
// prompt; the last <= 2 ms is a blocking high-resolution sleep (no
// spinning), during which cancellation waits.
func (e *Engine) sleepUntil(ctx context.Context, t *time.Timer, end int64) bool {
	for {
		wait := time.Duration(end - e.now())
		if wait <= fineSleepMax {
			fineSleep(wait) // never returns early: end has passed (or was too close to sleep for)
			return true
		}
		t.Reset(wait - fineSleepMax + 500*time.Microsecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}
