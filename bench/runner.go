package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/client"
)

// Endpoints a request can use.
const (
	EndpointChat        = "chat"
	EndpointCompletions = "completions"
)

// Errors Run returns for a whole run that could not finish. The partial
// result is returned with them and every record is already written.
var (
	ErrInterrupted  = errors.New("interrupted")
	ErrServerExited = errors.New("server exited during the run")
	ErrInvalidRun   = errors.New("invalid run")
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

// RequestSpec is what every request of a run asks for; Prompts fill the prompt.
type RequestSpec struct {
	Endpoint    string // EndpointChat or EndpointCompletions
	Model       string
	MaxTokens   int
	ExactLength bool // ignore_eos + min_tokens = max_tokens
	Stream      bool
}

// RunSpec names one run: a workload and the requests it sends.
type RunSpec struct {
	Name     string
	Workload Workload
	Request  RequestSpec
	Prompts  *Prompts
}

// Validate checks spec and fills defaults.
func (s *RunSpec) Validate() error {
	if s.Name == "" {
		return errors.New("run has no name")
	}
	if err := s.Workload.Validate(); err != nil {
		return err
	}
	switch s.Request.Endpoint {
	case "":
		s.Request.Endpoint = EndpointChat
	case EndpointChat, EndpointCompletions:
	default:
		return fmt.Errorf("--endpoint %q: expected chat or completions", s.Request.Endpoint)
	}
	if s.Request.MaxTokens < 1 {
		return fmt.Errorf("--max-tokens %d: expected at least 1", s.Request.MaxTokens)
	}
	if s.Prompts == nil {
		p, _ := FixedPrompt(DefaultPrompt)
		s.Prompts = p
	}
	return nil
}

// Runner sends the requests of one RunSpec at a time. Set the fields, then
// call Run; a Runner may run several specs one after another but not at once.
type Runner struct {
	Client       Doer
	Metrics      *Metrics      // nil: no /metrics (engine figures absent)
	Records      *RecordWriter // requests.jsonl; nil: records only returned
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
}

// runState is the mutable state of one Run, shared by its workers.
type runState struct {
	spec    *RunSpec
	sendCtx context.Context // done: send nothing more
	stop    context.CancelCauseFunc
	reqCtx  context.Context // done: abandon in-flight requests
	mu      sync.Mutex
	recs    []result.Record
	sent    atomic.Int64 // measured attempts sent
	retries atomic.Int64
	lags    []float64 // open loop: start - intended, seconds
	first   time.Time
	last    time.Time // latest send
}

// Run executes spec: warm-up, a /metrics snapshot, the measured requests,
// a second snapshot once the engine's count has caught up (bounded), and the
// summaries. It returns the run and its records (warm-up included, marked).
// On Ctrl-C (ctx canceled) or a server exit it stops sending, lets in-flight
// requests finish within Grace, and returns what it gathered with
// ErrInterrupted or ErrServerExited.
func (r *Runner) Run(ctx context.Context, spec RunSpec) (*result.Run, []result.Record, error) {
	if err := spec.Validate(); err != nil {
		return nil, nil, err
	}
	r.defaults()
	sendCtx, stopSending := context.WithCancelCause(ctx)
	defer stopSending(nil)
	reqCtx, cancelReqs := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelReqs(nil)
	st := &runState{spec: &spec, sendCtx: sendCtx, stop: stopSending, reqCtx: reqCtx}
	done := make(chan struct{})
	defer close(done)
	go r.watch(ctx, sendCtx, done, stopSending, cancelReqs)

	run := &result.Run{Name: spec.Name, Stream: spec.Request.Stream, Workload: workloadResult(&spec)}
	var pre, before snapshotResult
	scraped := r.Metrics != nil && r.Metrics.Prom == nil
	if scraped && spec.Workload.Warmup > 0 {
		pre = r.Metrics.snapshot(sendCtx)
	}
	r.warmup(st)
	if r.Metrics != nil && r.Metrics.Prom != nil && spec.Workload.Warmup > 0 {
		r.promAfterWarmup(sendCtx, run)
	}
	if scraped && sendCtx.Err() == nil {
		if pre.err == nil && pre.snap != nil {
			// The baseline must include the warm-up in the engine's counts, or
			// a late-counted warm-up request would pass for foreign traffic.
			before = r.settle(sendCtx, pre.snap, countOK(st.recs))
		} else {
			before = r.Metrics.snapshot(sendCtx)
		}
	}
	run.StartedAt = time.Now().UTC()
	start := time.Now()
	if sendCtx.Err() == nil {
		r.measure(st, start)
	}
	run.DurationS = time.Since(start).Seconds()

	measured := measuredOnly(st.recs)
	countOutcomes(run, measured)
	run.Retries = int(st.retries.Load())
	run.Client = ClientSummary(measured)
	fillThroughput(run, measured)
	if spec.Workload.Mode == ModeRate {
		run.Rate = rateStats(st, spec.Workload.Rate)
		if w := lateWarning(run.Rate); w != "" {
			run.Warnings = append(run.Warnings, w)
		}
	}
	if spec.Request.ExactLength {
		if w := exactLengthWarning(measured, spec.Request.MaxTokens); w != "" {
			run.Warnings = append(run.Warnings, w)
		}
	}
	if r.Metrics != nil {
		r.engineFigures(ctx, run, before, int(st.sent.Load()), measured)
	}
	_ = r.Records.Err() // returns once this run's lines are in the file; the session reports the error
	return run, st.recs, runErr(ctx, sendCtx)
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
		r.do(st, i, true, time.Time{})
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
	if w.Mode == ModeRate {
		r.openLoop(st, start)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for k := 0; k < w.Concurrency; k++ {
		wg.Go(func() {
			for st.sendCtx.Err() == nil {
				i := int(next.Add(1) - 1)
				if w.Requests > 0 && i >= w.Requests {
					return
				}
				r.do(st, i, false, time.Time{})
			}
		})
	}
	wg.Wait()
}

type job struct {
	index    int
	intended time.Time
}

// openLoop paces sends by the arrival process, never waiting on responses:
// when every worker is busy it starts another (up to MaxWorkers), the way
// vegeta's attacker does, so slow responses cannot delay the schedule
// (no coordinated omission). Sends still late are counted in RateStats.
func (r *Runner) openLoop(st *runState, start time.Time) {
	w := st.spec.Workload
	pacer := NewPacer(w)
	jobs := make(chan job)
	var wg sync.WaitGroup
	worker := func(first job) {
		r.do(st, first.index, false, first.intended)
		for j := range jobs {
			r.do(st, j.index, false, j.intended)
		}
	}
	workers := 0
	next := start
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
loop:
	for i := 0; w.Requests == 0 || i < w.Requests; i++ {
		if i > 0 {
			next = next.Add(pacer.Next())
		}
		if w.Duration > 0 && next.Sub(start) >= w.Duration {
			break
		}
		if d := time.Until(next); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-st.sendCtx.Done():
				break loop
			}
		}
		if st.sendCtx.Err() != nil {
			break
		}
		j := job{index: i, intended: next}
		select {
		case jobs <- j:
			continue
		default:
		}
		if workers < w.MaxWorkers {
			workers++
			wg.Go(func() { worker(j) })
			continue
		}
		select { // at the bound: this send waits, and will be counted late
		case jobs <- j:
		case <-st.sendCtx.Done():
			break loop
		}
	}
	close(jobs)
	wg.Wait()
}

// do sends request index (retrying 429/503 when asked), records every
// attempt and returns when the request is finished.
func (r *Runner) do(st *runState, index int, warmup bool, intended time.Time) {
	spec := st.spec
	req := client.Request{
		Endpoint:    spec.Request.Endpoint,
		Model:       spec.Request.Model,
		MaxTokens:   spec.Request.MaxTokens,
		ExactLength: spec.Request.ExactLength,
		Stream:      spec.Request.Stream,
	}
	promptIndex := index
	if !warmup {
		promptIndex += spec.Workload.Warmup
	}
	spec.Prompts.Fill(&req, promptIndex)
	for attempt := 1; ; attempt++ {
		if !warmup {
			st.sent.Add(1)
		}
		if r.RequestIDs {
			req.ID = RequestID(spec.Name, index)
		}
		tr := r.Client.Do(st.reqCtx, &req)
		var lag time.Duration
		if !intended.IsZero() {
			lag = tr.Start.Sub(intended)
		}
		retry := attempt <= r.Retries && (tr.Status == 429 || tr.Status == 503) && st.sendCtx.Err() == nil
		rec := NewRecord(spec.Name, index, warmup, &tr, lag)
		rec.RequestID = req.ID
		if attempt > 1 {
			rec.Attempt = attempt
		}
		rec.Retried = retry
		r.keep(st, rec, attempt == 1 && !warmup && !intended.IsZero(), lag)
		if !retry {
			return
		}
		if !warmup {
			st.retries.Add(1)
		}
		wait := backoff(r.RetryBackoff, attempt)
		if tr.RetryAfter > wait && tr.RetryAfter <= maxRetryAfter {
			wait = tr.RetryAfter // the server said when to come back
		}
		if !sleepCtx(st.sendCtx, wait) {
			return
		}
	}
}

// keep writes rec to requests.jsonl and the run's memory. Both follow
// completion order, but records completing together may be in different
// orders in the two: the write is not under st.mu.
func (r *Runner) keep(st *runState, rec result.Record, firstOpenLoop bool, lag time.Duration) {
	_ = r.Records.Write(&rec) // a write error is reported once by the session (RecordWriter.Err)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.recs = append(st.recs, rec)
	if firstOpenLoop {
		st.lags = append(st.lags, lag.Seconds())
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

func measuredOnly(recs []result.Record) []result.Record {
	out := make([]result.Record, 0, len(recs))
	for _, r := range recs {
		if !r.Warmup {
			out = append(out, r)
		}
	}
	return out
}

func workloadResult(s *RunSpec) result.Workload {
	w := s.Workload
	return result.Workload{
		Mode: w.Mode, Concurrency: w.Concurrency, Rate: w.Rate, Arrival: w.Arrival,
		Burstiness: w.Burstiness, Requests: w.Requests, DurationS: w.Duration.Seconds(),
		Warmup: w.Warmup, Stream: s.Request.Stream, Endpoint: s.Request.Endpoint,
		Model: s.Request.Model, MaxTokens: s.Request.MaxTokens, ExactLength: s.Request.ExactLength,
		PromptKind: s.Prompts.Kind, PromptTokens: s.Prompts.Tokens, PromptFile: s.Prompts.File,
	}
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
