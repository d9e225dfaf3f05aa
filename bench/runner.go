package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/scrape"
)

// Endpoints a request can use.
const (
	EndpointChat        = "chat"
	EndpointCompletions = "completions"
	// EndpointOllamaChat is Ollama's /api/chat: the engine's own timings
	// per request (result.SourceOllama) instead of /metrics.
	EndpointOllamaChat = client.EndpointOllamaChat
	// EndpointMessages (Anthropic's Messages API) and EndpointResponses
	// (OpenAI's Responses API) carry the same conversation as chat, with
	// their own events; the engine counts them in the same /metrics.
	EndpointMessages  = client.EndpointMessages
	EndpointResponses = client.EndpointResponses
)

// Errors Run returns for a whole run that could not finish. The partial
// result is returned with them and every record is already written.
var (
	ErrInterrupted  = errors.New("interrupted")
	ErrServerExited = errors.New("server exited during the run")
	ErrInvalidRun   = errors.New("invalid run")
	// ErrResultsWrite: the results folder stopped taking writes (a full
	// disk, a removed folder); the run stopped at once, and the error says
	// which file, why, and what it keeps. Nothing about the server.
	ErrResultsWrite = errors.New("the results could not be written")
	// ErrUsage wraps errors in the options given (bad flags or input).
	ErrUsage         = errors.New("bad usage")
	errDurationDone  = errors.New("duration reached")
	errGraceExceeded = errors.New("in-flight request canceled after the grace period")
)

// Doer sends one request and returns its trace; *client.Client is one.
// Failures are data in the trace, never an error.
type Doer interface {
	Do(ctx context.Context, req *client.Request) client.Trace
}

// RequestSpec is what every request of a run asks for; the Source fills the
// prompt (and may set each request's output length).
type RequestSpec struct {
	Endpoint string // EndpointChat (default), EndpointCompletions, EndpointOllamaChat, EndpointMessages or EndpointResponses
	// AutoEndpoint: Endpoint is the default, not one the user chose, so
	// Execute switches it to EndpointOllamaChat when the server turns out
	// to be an Ollama (its only source of engine figures), saying so.
	AutoEndpoint bool
	Model        string
	MaxTokens    int
	ExactLength  bool // ignore_eos + min_tokens = max_tokens
	Stream       bool
	// MaxModelLen is the server's context length (Execute sets it from
	// /v1/models; 0: unknown): generated prompts and output lengths a
	// source drew are clipped so that each request fits.
	MaxModelLen int
	// Tokens is how the server counts generated prompts (Execute measures
	// it; nil: one word per token, no template overhead): first-turn
	// generated prompts are then token-exact.
	Tokens *result.TokenCalibration
	// Arrivals keeps each response's reads in its record (client.Arrival).
	Arrivals bool
	// Structured, when set, sends response_format or tools with every
	// request and times each answer's usable output (Record.UsableS).
	Structured *workload.Structured
	// LoRA picks each conversation's adapter, sent as its model (--lora);
	// nil: the base model, unless the source names one.
	LoRA *workload.LoRAMix
	// ToolRounds makes every conversation a tool-calling session of this
	// many rounds (toolrounds.go; needs Structured's tools); 0: none.
	ToolRounds int
}

// RunSpec names one run: a workload and the requests it sends.
type RunSpec struct {
	Name     string
	Workload workload.Workload
	Request  RequestSpec
	// Source yields the conversations; nil: Prompts (the single-request
	// prompt sources: fixed, synthetic, file).
	Source  workload.Source
	Prompts *workload.Prompts
	SLO     result.SLO // zero: no goodput
	// Shard is the slice of the run this process sends (zero: all of it).
	Shard Shard
}

// WithDefaults is s completed: the chat endpoint when none is named, and
// Prompts (the default fixed prompt when none) as the source when there is
// no Source. It changes nothing in s; completing twice changes nothing more.
func (s RunSpec) WithDefaults() RunSpec {
	s.Request.Endpoint = s.endpoint()
	if s.Source == nil {
		if s.Prompts == nil {
			s.Prompts, _ = workload.FixedPrompt(workload.DefaultPrompt)
		}
		s.Source = s.Prompts
	}
	return s
}

// endpoint is the endpoint the spec's requests go to: EndpointChat when
// none is named.
func (s *RunSpec) endpoint() string {
	if s.Request.Endpoint == "" {
		return EndpointChat
	}
	return s.Request.Endpoint
}

// sourceLen is how many conversations the spec's source holds (0: every
// one is new), as it will be once completed.
func (s *RunSpec) sourceLen() int {
	switch {
	case s.Source != nil:
		return s.Source.Len()
	case s.Prompts != nil:
		return s.Prompts.Len()
	}
	return 0 // the default prompt
}

// Validate checks spec, as given or completed (WithDefaults), and changes
// nothing.
func (s *RunSpec) Validate() error {
	if s.Name == "" {
		return errors.New("run has no name")
	}
	if err := s.Workload.Validate(); err != nil {
		return err
	}
	if err := s.Shard.validate(&s.Workload); err != nil {
		return err
	}
	switch s.Request.Endpoint {
	case "", EndpointChat, EndpointCompletions, EndpointOllamaChat, EndpointMessages, EndpointResponses:
	default:
		return fmt.Errorf("--endpoint %q: expected one of %s", s.Request.Endpoint, strings.Join(client.Endpoints, ", "))
	}
	if s.Request.MaxTokens < 1 {
		return fmt.Errorf("--max-tokens %d: expected at least 1", s.Request.MaxTokens)
	}
	if n := s.Request.ToolRounds; n < 0 || n > 0 && (s.Request.Structured == nil || len(s.Request.Structured.Tools) == 0 || s.endpoint() != EndpointChat) {
		return fmt.Errorf("--tool-rounds %d: expected 0, or rounds with --tools on the chat endpoint", n)
	}
	if s.Workload.Mode == workload.ModeTrace && s.sourceLen() == 0 {
		return errors.New("a trace run needs a trace source (--trace)")
	}
	return nil
}

// Runner sends the requests of one RunSpec at a time. Set the fields, then
// call Run; a Runner may run several specs one after another but not at once.
type Runner struct {
	Client  Doer
	Metrics *Metrics // nil: no /metrics (engine figures absent)
	// NoMetrics, with Metrics nil, says why, as a warning of each run that
	// has no other engine source.
	NoMetrics    string
	Records      *store.RecordWriter // requests.jsonl; nil: records only returned
	OnRecord     func(result.Record)
	ServerExited <-chan struct{} // closed when a server servebench started exits
	Retries      int             // retry 429/503 up to this many times per request
	RequestIDs   bool            // send every attempt an X-Request-Id (RequestID), kept in its record
	RetryBackoff time.Duration   // first backoff, doubled per attempt (default 250 ms, max 5 s; a longer Retry-After up to 30 s wins)
	// ReconcileWait bounds the wait, after the last response, for the
	// engine's finished-request count to reach what the client saw (default 5 s).
	ReconcileWait time.Duration
	// Grace is how long in-flight requests may finish after Ctrl-C or a
	// server exit before they are canceled (default 3 s).
	Grace time.Duration
	// Bounded keeps no record in memory: Run returns none (they are in
	// requests.jsonl) and its memory stays bounded however long it runs:
	// the per-request samples go to temporary files in SpillDir ("": the
	// system's temporary directory), removed when the run ends.
	Bounded  bool
	SpillDir string
	// commonErr is each run's commonest error text (failures.commonest),
	// by run name, for the session's verdict.
	commonErr map[string]string
	// WaitServer, when set, is called after a request could not connect:
	// it returns once the server is back (true) or sending stopped.
	WaitServer func(ctx context.Context) bool
	// Interval splits each run into windows (Run.Windows; 0: none).
	Interval time.Duration
	// OnWindow, when set, gets the run so far (Incomplete) at its start and
	// at every Interval boundary, from another goroutine (see windower).
	OnWindow func(partial *result.Run)
	// Direct, when set, gets every request a second time, straight to the
	// engine (--direct-url; DirectURL, redacted, is recorded): each run
	// gets a direct side (TakeDirect) to set what the path adds against.
	Direct         Doer
	DirectURL      string
	lastDirect     *result.Run
	lastDirectRecs []result.Record
	// SaveSnapshot, when set, keeps the /metrics snapshots a run's engine
	// figures come from ("RUN.before", "RUN.after"): merge takes a sharded
	// run's engine delta from them.
	SaveSnapshot func(name string, s *scrape.Snapshot)
}

// runState is the mutable state of one Run, shared by its workers.
type runState struct {
	spec    *RunSpec
	sendCtx context.Context // done: send nothing more
	stop    context.CancelCauseFunc
	reqCtx  context.Context // done: abandon in-flight requests
	cancel  context.CancelCauseFunc
	mu      sync.Mutex
	recs    []result.Record
	sent    atomic.Int64 // measured attempts sent
	retries atomic.Int64
	lags    store.Column // open loop: start - intended, seconds (spilled with acc)
	first   time.Time
	last    time.Time // latest send
	// textSalt gives each run its own generated text (same lengths): a
	// sweep's levels or --stream both's second run would otherwise resend
	// the first's prompts and be served from the prefix cache.
	textSalt uint64
	clipped  atomic.Int64 // requests whose drawn lengths were clipped to max_model_len
	cut      atomic.Int64 // sessions that stopped at a failed turn
	win      *windower
	acc      store.RunAcc   // the run's figures, fed by keep
	direct   *runState      // the direct side (Runner.Direct); nil: none
	steady   *steadyTracker // the steady state and saturation test, fed by keep
}

// exactTokens is the output length every request must reach: max_tokens
// with --exact-length, else 0.
func (s *RunSpec) exactTokens() int {
	if s.Request.ExactLength {
		return s.Request.MaxTokens
	}
	return 0
}

// Run executes spec: warm-up, a /metrics snapshot, the measured requests,
// a second snapshot once the engine's count has caught up (bounded), and the
// summaries. It returns the run and its records (warm-up included, marked).
// On Ctrl-C (ctx canceled) or a server exit it stops sending, lets in-flight
// requests finish within Grace, and returns what it gathered with
// ErrInterrupted or ErrServerExited.
func (r *Runner) Run(ctx context.Context, spec RunSpec) (*result.Run, []result.Record, error) {
	spec = spec.WithDefaults()
	if err := spec.Validate(); err != nil {
		return nil, nil, err
	}
	if err := spec.CheckToolSessions(); err != nil {
		return nil, nil, err
	}
	r.defaults()
	sendCtx, stopSending := context.WithCancelCause(ctx)
	defer stopSending(nil)
	reqCtx, cancelReqs := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelReqs(nil)
	st := &runState{spec: &spec, sendCtx: sendCtx, stop: stopSending, reqCtx: reqCtx, cancel: cancelReqs}
	st.textSalt = textSalt(spec.Name)
	if r.Direct != nil {
		st.direct = newDirectState(st)
	}
	done := make(chan struct{})
	defer close(done)
	go r.watch(ctx, sendCtx, done, stopSending, cancelReqs)

	run := &result.Run{Name: spec.Name, Stream: spec.Request.Stream, Workload: workloadResult(&spec)}
	if c, ok := r.Client.(interface{ AcceptEncoding() string }); ok {
		run.Workload.AcceptEncoding = c.AcceptEncoding()
	}
	src := r.engineSource(&spec, &st.acc.Engine)
	src.before(sendCtx, run, func() int {
		r.warmup(st)
		return st.acc.WarmOK
	})
	lateErr := spec.Shard.waitStart(sendCtx)
	run.StartedAt = time.Now().UTC()
	start := time.Now()
	run.Shard = spec.Shard.result(start)
	st.win = newWindower(run, start, windowing{interval: r.Interval, bounded: r.Bounded, spillDir: r.SpillDir, onWindow: r.OnWindow})
	st.steady = newSteadyTracker(spec.Workload.Mode, spec.Workload.Concurrency, start, scheduleRate(&spec, run), st.stop)
	stopSource := src.start(reqCtx, run, st.win)
	defer stopSource()
	st.win.begin()
	if r.Bounded {
		r.spill(st, run)
		defer st.acc.Tally.Close()
		defer st.lags.Close()
		defer st.acc.Engine.Close()
		if d := st.direct; d != nil {
			if err := d.acc.Tally.Spill(r.SpillDir); err != nil {
				run.Warnings = append(run.Warnings, "direct side: "+err.Error())
			}
			defer d.acc.Tally.Close()
		}
	}
	if sendCtx.Err() == nil && lateErr == nil {
		r.measure(st, start)
	}
	st.win.stop()
	run.DurationS = time.Since(start).Seconds()
	r.clientFigures(run, st)
	if st.direct != nil {
		r.lastDirect, r.lastDirectRecs = r.directRun(run, st), st.direct.recs
	}
	after := src.after(ctx, run, reconciliation(run, st))
	run.Windows = st.win.finish(run.DurationS, after)
	if err := st.win.spillErr; err != nil {
		run.Warnings = append(run.Warnings, err.Error())
	}
	src.windows(ctx, run, st.win)
	run.Warnings = append(run.Warnings, restartWarnings(run.Windows)...)
	werr := r.Records.Err() // returns once this run's lines are in the file
	if lateErr != nil {
		return run, st.recs, lateErr
	}
	if err := writeFailure(st, run, werr); err != nil {
		return run, st.recs, err
	}
	return run, st.recs, runErr(ctx, sendCtx)
}

// stopOnWriteFailure stops the run at once, sending and in flight, when
// the results folder stopped taking writes: whatever is measured after it
// could not be kept.
func (st *runState) stopOnWriteFailure() {
	cause := fmt.Errorf("%w: the run stopped", ErrResultsWrite)
	st.stop(cause)
	st.cancel(cause)
}

// writeFailure is the error of a run whose results could not be written
// (nil when they were): the file and the cause (requests.jsonl's error
// says how many records it keeps), also kept as the run's warning. The
// samples that could not be spilled are in memory: the figures count
// every request that completed.
func writeFailure(st *runState, run *result.Run, recErr error) error {
	err := recErr
	if err == nil {
		st.mu.Lock()
		err = cmp.Or(st.acc.WriteErr(), st.lags.WriteErr)
		st.mu.Unlock()
	}
	if err == nil {
		return nil
	}
	msg := fmt.Sprintf("%v; the run stopped there, %d measured requests completed", err, run.Requests)
	run.Warnings = append(run.Warnings, msg)
	return fmt.Errorf("%w: %s", ErrResultsWrite, msg)
}

// spill sends a bounded run's samples, send lags and, where the answers
// carry them (ollama-chat), the engine's timings to temporary files.
func (r *Runner) spill(st *runState, run *result.Run) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := st.acc.Tally.Spill(r.SpillDir); err != nil {
		run.Warnings = append(run.Warnings, err.Error())
		return
	}
	if err := st.lags.Spill(r.SpillDir); err != nil {
		run.Warnings = append(run.Warnings, fmt.Sprintf("send lags: %v (kept in memory)", err))
		return
	}
	if st.spec.Request.Endpoint == EndpointOllamaChat {
		if err := st.acc.Engine.Spill(r.SpillDir); err != nil {
			run.Warnings = append(run.Warnings, err.Error())
		}
	}
}

// clientFigures fills the run's client side once in-flight requests are
// done (no record is kept any more): counts, summaries, throughput,
// goodput, the schedule kept (open loop), and the warnings about them.
func (r *Runner) clientFigures(run *result.Run, st *runState) {
	spec, acc := st.spec, &st.acc
	if r.commonErr == nil {
		r.commonErr = map[string]string{}
	}
	r.commonErr[spec.Name] = acc.Fails.Commonest()
	run.Retries = int(st.retries.Load())
	acc.Fill(run, spec.SLO)
	run.Steady, run.Saturation = st.steady.finish()
	if s := run.Saturation; s != nil && s.StoppedAtS > 0 {
		run.Warnings = append(run.Warnings, fmt.Sprintf("saturated: the wait for a first token grew without bound (slope test, t = %.1f, the last quarter's wait %.1fx the first's): sending stopped early (runs[].saturation)",
			s.T, s.WaitLastS/max(s.WaitFirstS, 1e-9)))
	}
	if m := spec.Workload.Mode; m == workload.ModeRate || m == workload.ModeTrace {
		run.Rate = rateStats(st, scheduleRate(spec, run))
		if w := store.LateWarning(run.Rate, &run.Workload); w != "" {
			run.Warnings = append(run.Warnings, w)
		}
	}
	if err := errors.Join(acc.Tally.SpillErr(), st.lags.Err); err != nil {
		run.Warnings = append(run.Warnings, fmt.Sprintf("figures missing: %v", err))
	}
	run.Warnings = append(run.Warnings, sourceWarnings(st)...)
	if spec.Request.ExactLength {
		if w := acc.Exact.Warning(spec.Request.MaxTokens); w != "" {
			run.Warnings = append(run.Warnings, w)
		}
	}
}

// scheduleRate is the send rate an open-loop run (this shard's part of it)
// was asked to keep: --rate, or a trace's over its span.
func scheduleRate(spec *RunSpec, run *result.Run) float64 {
	target := spec.Workload.Rate
	if spec.Workload.Mode == workload.ModeTrace && run.Workload.Trace != nil && run.Workload.Trace.SpanS > 0 {
		target = float64(run.Workload.Trace.Entries-1) / run.Workload.Trace.SpanS
	}
	if spec.Shard.sharded() { // this shard's part of the schedule
		target /= float64(spec.Shard.Count)
	}
	return target
}

func (r *Runner) defaults() {
	if r.RetryBackoff <= 0 {
		r.RetryBackoff = 250 * time.Millisecond
	}
	if r.ReconcileWait <= 0 {
		r.ReconcileWait = 5 * time.Second
	}
	if r.Grace <= 0 {
		r.Grace = 3 * time.Second
	}
}

// watch stops sending on Ctrl-C or a server exit and cancels in-flight
// requests Grace later. It returns when the run is over (done closed).
func (r *Runner) watch(ctx, sendCtx context.Context, done <-chan struct{}, stop, cancelReqs context.CancelCauseFunc) {
	var cause error
	for cause == nil {
		select {
		case <-done:
			return
		case <-ctx.Done():
			cause = ErrInterrupted
		case <-r.ServerExited: // nil channel: never
			cause = ErrServerExited
		case <-r.Records.Failed(): // nil channel without a file: never
			cause = fmt.Errorf("%w: the run stopped", ErrResultsWrite)
			stop(cause)
			cancelReqs(cause) // at once: their records could not be kept
			return
		case <-sendCtx.Done():
			// Duration reached: in-flight requests finish normally, but Ctrl-C
			// or a server exit while draining still applies.
			sendCtx = context.Background()
		}
	}
	stop(cause)
	t := time.NewTimer(r.Grace)
	defer t.Stop()
	select {
	case <-t.C:
		cancelReqs(fmt.Errorf("%w: %w", cause, errGraceExceeded))
	case <-done:
	}
}

// runErr reports why a run ended early, or nil.
func runErr(ctx, sendCtx context.Context) error {
	cause := context.Cause(sendCtx)
	switch {
	case errors.Is(cause, ErrServerExited):
		return ErrServerExited
	case ctx.Err() != nil || errors.Is(cause, ErrInterrupted):
		return ErrInterrupted
	}
	return nil
}

// warmup sends the warm-up requests one at a time; they are recorded (marked)
// but left out of every statistic and of the /metrics delta.
func (r *Runner) warmup(st *runState) {
	for i := 0; i < st.spec.Workload.Warmup && st.sendCtx.Err() == nil; i++ {
		r.converse(st, r.prepare(st, i, true))
	}
}

// measure sends the measured requests in the workload's mode.
func (r *Runner) measure(st *runState, start time.Time) {
	w := st.spec.Workload
	if w.Duration > 0 {
		t := time.AfterFunc(w.Duration, func() { st.stop(errDurationDone) })
		defer t.Stop()
	}
	st.first = start
	if w.Mode == workload.ModeRate || w.Mode == workload.ModeTrace {
		r.openLoop(st, start)
		return
	}
	r.closedLoop(st)
}

// closedLoop keeps Concurrency conversations (this shard's workers) in
// flight: each worker sends its next as soon as its last one ends.
func (r *Runner) closedLoop(st *runState) {
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
				r.converse(st, r.prepare(st, i, false))
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
func (r *Runner) openLoop(st *runState, start time.Time) {
	w := st.spec.Workload
	pacer := workload.NewPacer(w)
	pool := &sendPool{r: r, st: st, jobs: make(chan job), max: w.MaxWorkers}
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
		j := r.prepare(st, i, false)
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
	r       *Runner
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
			p.r.converse(p.st, j)
			for j := range p.jobs {
				p.r.converse(p.st, j)
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
func (r *Runner) prepare(st *runState, index int, warmup bool) job {
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
func (r *Runner) converse(st *runState, j job) {
	req := j.req
	for k := range j.conv.Turns {
		if k > 0 {
			if !r.think(st, &j, k) {
				return
			}
			req = st.request(&j.conv, k, req.Messages)
		}
		tr := r.do(st, &j, k, &req)
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
func (r *Runner) think(st *runState, j *job, k int) bool {
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
func (r *Runner) do(st *runState, j *job, k int, req *client.Request) client.Trace {
	intended := time.Time{}
	if k == 0 {
		intended = j.intended // later turns follow the answers, not the schedule
	}
	for attempt := 1; ; attempt++ {
		if !j.warmup {
			st.sent.Add(1)
		}
		if r.RequestIDs {
			req.ID = RequestID(st.spec.Name, j.index)
		}
		tr := r.send(st, j, k, attempt, req)
		var lag time.Duration
		if !intended.IsZero() {
			lag = tr.Start.Sub(intended)
		}
		retry := attempt <= r.Retries && (tr.Status == 429 || tr.Status == 503) && st.sendCtx.Err() == nil
		rec := attemptRecord(st, j, k, req, &tr, lag)
		if attempt > 1 {
			rec.Attempt = attempt
		}
		rec.Retried = retry
		r.keep(st, rec, attempt == 1 && !j.warmup && !intended.IsZero(), lag)
		if tr.Error == client.ErrConnect && r.WaitServer != nil {
			r.WaitServer(st.sendCtx) // the server is down: wait for it, do not flood
		}
		if !retry {
			return tr
		}
		if !j.warmup {
			st.retries.Add(1)
		}
		if !sleepCtx(st.sendCtx, r.retryWait(&tr, attempt)) {
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
func (r *Runner) retryWait(tr *client.Trace, attempt int) time.Duration {
	wait := backoff(r.RetryBackoff, attempt)
	if tr.RetryAfter > wait && tr.RetryAfter <= maxRetryAfter {
		wait = tr.RetryAfter // the server said when to come back
	}
	return wait
}

// keep writes rec to requests.jsonl and the run's memory. Both follow
// completion order, but records completing together may be in different
// orders in the two: the write is not under st.mu.
func (r *Runner) keep(st *runState, rec result.Record, firstOpenLoop bool, lag time.Duration) {
	st.win.assign(&rec)
	if r.Records.Write(&rec) != nil { // a write failed: the file keeps what came before
		st.stopOnWriteFailure()
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.acc.Add(&rec, st.spec.exactTokens(), st.spec.SLO)
	st.steady.add(&rec)
	if r.Bounded && (st.acc.WriteErr() != nil || st.lags.WriteErr != nil) {
		st.stopOnWriteFailure() // the samples are kept in memory, the folder takes no more
	}
	if !r.Bounded {
		st.recs = append(st.recs, rec)
	}
	if firstOpenLoop {
		st.lags.Add(lag.Seconds())
		if s := rec.Start; s.After(st.last) {
			st.last = s
		}
	}
	if r.OnRecord != nil {
		r.OnRecord(rec)
	}
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

func workloadResult(s *RunSpec) result.Workload {
	w := s.Workload
	res := result.Workload{
		Mode: w.Mode, Concurrency: w.Concurrency, Rate: w.Rate, Arrival: w.Arrival,
		Burstiness: w.Burstiness, Requests: w.Requests, DurationS: w.Duration.Seconds(),
		Warmup: w.Warmup, Stream: s.Request.Stream, Endpoint: s.Request.Endpoint,
		Model: s.Request.Model, MaxTokens: s.Request.MaxTokens, ExactLength: s.Request.ExactLength,
	}
	s.Source.Describe(&res)
	s.Request.Structured.Describe(&res)
	res.Arrivals = s.Request.Arrivals
	if s.Request.LoRA != nil {
		res.LoRA = s.Request.LoRA.String()
	}
	res.ToolRounds = s.Request.ToolRounds
	if !w.ThinkTime.IsZero() {
		res.ThinkTimeS = w.ThinkTime.String()
	}
	res.Seed = w.Seed
	return res
}

// sourceWarnings says what a source changed or could not send.
func sourceWarnings(st *runState) []string {
	var ws []string
	if n := st.clipped.Load(); n > 0 {
		ws = append(ws, fmt.Sprintf("%d requests' drawn prompt or output lengths were clipped to the server's max_model_len %d", n, st.spec.Request.MaxModelLen))
	}
	if n := st.cut.Load(); n > 0 {
		ws = append(ws, fmt.Sprintf("%d sessions stopped at a failed turn (no answer to continue from)", n))
	}
	return ws
}

// RequestID is a request's X-Request-Id: "sb-RUN-INDEX-RANDOM", the run's
// name with every byte outside [A-Za-z0-9._-] as '_' (so the id is one
// word in a log line; read it from the right), the request's index and 8
// random hex digits that keep ids of repeated runs, warm-up and retried
// attempts apart.
func RequestID(run string, index int) string {
	b := make([]byte, 0, 3+len(run)+1+10+1+8)
	b = append(b, "sb-"...)
	for i := 0; i < len(run); i++ {
		c := run[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			c = '_'
		}
		b = append(b, c)
	}
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, '-')
	r := rand.Uint32()
	for shift := 28; shift >= 0; shift -= 4 {
		b = append(b, "0123456789abcdef"[r>>shift&0xf])
	}
	return string(b)
}
