package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine/option"
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

// WithDefaults is s completed: its workload's defaults, the chat endpoint
// when none is named, and Prompts (the default fixed prompt when none) as
// the source when there is no Source. It changes nothing in s; completing
// twice changes nothing more.
func (s RunSpec) WithDefaults() RunSpec {
	s.Workload = s.Workload.WithDefaults()
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
	return 1 // the default prompt: one fixed conversation, as WithDefaults gives
}

// Validate checks spec, as given or completed (WithDefaults), and changes
// nothing.
func (s *RunSpec) Validate() error {
	if s.Name == "" {
		return errors.New("run has no name")
	}
	w := s.Workload.WithDefaults() // the shard is checked against the workload it will slice
	if err := w.Validate(); err != nil {
		return err
	}
	if err := s.Shard.validate(&w); err != nil {
		return err
	}
	switch s.Request.Endpoint {
	case "", EndpointChat, EndpointCompletions, EndpointOllamaChat, EndpointMessages, EndpointResponses:
	default:
		return option.Errorf("Endpoint", s.Request.Endpoint, "expected one of %s", strings.Join(client.Endpoints, ", "))
	}
	if s.Request.MaxTokens < 1 {
		return option.Errorf("MaxTokens", s.Request.MaxTokens, "expected at least 1")
	}
	if n := s.Request.ToolRounds; n < 0 || n > 0 && (s.Request.Structured == nil || len(s.Request.Structured.Tools) == 0 || s.endpoint() != EndpointChat) {
		return option.Errorf("ToolRounds", n, "expected 0, or rounds with {ToolsFile} on the chat endpoint")
	}
	if w.Mode == workload.ModeTrace && s.sourceLen() == 0 {
		return option.Errorf("Trace", nil, "a trace run needs a trace source ({Trace})")
	}
	return nil
}

// Runner runs one RunSpec at a time. Its fields are settings that every
// run shares, set once: nothing carries from one run to the next. What a
// run tells as it goes goes to the Reporter it is given, and what it
// measured comes back as its Outcome. A run is a sender (the load loop,
// send.go) handing each record to a collector (what accumulates,
// collect.go), an engine source (enginesource.go) and the windows
// (window.go). A Runner may run several specs one after another but not at
// once.
type Runner struct {
	Client  Doer
	Metrics *Metrics // nil: no /metrics (engine figures absent)
	// NoMetrics, with Metrics nil, says why, as a warning of each run that
	// has no other engine source.
	NoMetrics    string
	Records      *store.RecordWriter // requests.jsonl; nil: records only returned
	ServerExited <-chan struct{}     // closed when a server servebench started exits
	Retries      int                 // retry 429/503 up to this many times per request
	RequestIDs   bool                // send every attempt an X-Request-Id (RequestID), kept in its record
	RetryBackoff time.Duration       // first backoff, doubled per attempt (default 250 ms, max 5 s; a longer Retry-After up to 30 s wins)
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
	// WaitServer, when set, is called after a request could not connect:
	// it returns once the server is back (true) or sending stopped.
	WaitServer func(ctx context.Context) bool
	// Interval splits each run into windows (Run.Windows; 0: none).
	Interval time.Duration
	// Direct, when set, gets every request a second time, straight to the
	// engine (--direct-url; DirectURL, redacted, is recorded): each run
	// gets a direct side (Outcome.Direct) to set what the path adds against.
	Direct    Doer
	DirectURL string
	// SaveSnapshot, when set, keeps the /metrics snapshots a run's engine
	// figures come from ("RUN.before", "RUN.after"): merge takes a sharded
	// run's engine delta from them.
	SaveSnapshot func(name string, s *scrape.Snapshot)
}

// Reporter is told about one run as it goes; a nil func is not called.
type Reporter struct {
	// Record gets every record as it is kept, one at a time.
	Record func(result.Record)
	// Window gets the run so far (Incomplete) at its start and at every
	// Runner.Interval boundary, from another goroutine (see windower).
	Window func(partial *result.Run)
}

// Outcome is what one run measured.
type Outcome struct {
	Run     *result.Run     // nil: the spec was refused
	Records []result.Record // warm-up included (marked); none when Bounded
	// Direct is the run's direct side (Runner.Direct) and DirectRecords
	// its records; nil without one.
	Direct        *result.Run
	DirectRecords []result.Record
	// Commonest is the commonest error text (store.Failures.Commonest) of
	// the run and of its direct side, by run name: why every request
	// failed, for the session's verdict.
	Commonest map[string]string
}

// runState is one run's sending state, shared by its workers: the spec,
// when to stop sending and when to abandon requests in flight, the counts
// the sender keeps, and the collector every record goes to.
type runState struct {
	spec    *RunSpec
	sendCtx context.Context // done: send nothing more
	stop    context.CancelCauseFunc
	reqCtx  context.Context // done: abandon in-flight requests
	cancel  context.CancelCauseFunc
	sent    atomic.Int64 // measured attempts sent
	retries atomic.Int64
	// textSalt gives each run its own generated text (same lengths): a
	// sweep's levels or --stream both's second run would otherwise resend
	// the first's prompts and be served from the prefix cache.
	textSalt uint64
	clipped  atomic.Int64 // requests whose drawn lengths were clipped to max_model_len
	cut      atomic.Int64 // sessions that stopped at a failed turn
	coll     *collector   // the run's records and figures
	direct   *runState    // the direct side (Runner.Direct); nil: none
}

// exactTokens is the output length every request must reach: max_tokens
// with --exact-length, else 0.
func (s *RunSpec) exactTokens() int {
	if s.Request.ExactLength {
		return s.Request.MaxTokens
	}
	return 0
}

// Run measures spec (Measure) with nothing reported as it goes, and
// returns the run and its records.
func (r *Runner) Run(ctx context.Context, spec RunSpec) (*result.Run, []result.Record, error) {
	out, err := r.Measure(ctx, spec, Reporter{})
	return out.Run, out.Records, err
}

// Measure executes spec: warm-up, a /metrics snapshot, the measured
// requests, a second snapshot once the engine's count has caught up
// (bounded), and the summaries, telling rep as it goes. It returns the
// run and its records (warm-up included, marked). On Ctrl-C (ctx canceled)
// or a server exit it stops sending, lets in-flight requests finish within
// Grace, and returns what it gathered with ErrInterrupted or
// ErrServerExited.
func (r *Runner) Measure(ctx context.Context, spec RunSpec, rep Reporter) (Outcome, error) {
	spec = spec.WithDefaults()
	if err := spec.Validate(); err != nil {
		return Outcome{}, err
	}
	if err := spec.CheckToolSessions(); err != nil {
		return Outcome{}, err
	}
	rs := r.withDefaults()
	sendCtx, stopSending := context.WithCancelCause(ctx)
	defer stopSending(nil)
	reqCtx, cancelReqs := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelReqs(nil)
	st := &runState{spec: &spec, sendCtx: sendCtx, stop: stopSending, reqCtx: reqCtx, cancel: cancelReqs, textSalt: textSalt(spec.Name)}
	st.coll = &collector{spec: &spec, records: rs.Records, bounded: rs.Bounded, onRecord: rep.Record, stop: st.stopOnWriteFailure}
	if rs.Direct != nil {
		st.direct = newDirectState(st)
	}
	done := make(chan struct{})
	defer close(done)
	go rs.watch(ctx, sendCtx, done, stopSending, cancelReqs)

	run := &result.Run{Name: spec.Name, Stream: spec.Request.Stream, Workload: workloadResult(&spec)}
	if c, ok := rs.Client.(interface{ AcceptEncoding() string }); ok {
		run.Workload.AcceptEncoding = c.AcceptEncoding()
	}
	src := rs.engineSource(&spec, &st.coll.acc.Engine)
	snd := rs.sender()
	src.before(sendCtx, run, func() int {
		snd.warmup(st)
		return st.coll.acc.WarmOK
	})
	lateErr := spec.Shard.waitStart(sendCtx)
	run.StartedAt = time.Now().UTC()
	start := time.Now()
	run.Shard = spec.Shard.result(start)
	win := newWindower(run, start, windowing{interval: rs.Interval, bounded: rs.Bounded, spillDir: rs.SpillDir, onWindow: rep.Window})
	st.coll.win = win
	st.coll.steady = newSteadyTracker(spec.Workload.Mode, spec.Workload.Concurrency, start, scheduleRate(&spec, run), st.stop)
	stopSource := src.start(reqCtx, run, win)
	defer stopSource()
	win.begin()
	if rs.Bounded {
		defer rs.spill(st, run)()
	}
	if sendCtx.Err() == nil && lateErr == nil {
		snd.measure(st, start)
	}
	win.stop()
	run.DurationS = time.Since(start).Seconds()
	out := Outcome{Run: run, Commonest: map[string]string{run.Name: clientFigures(run, st)}}
	if d := st.direct; d != nil {
		out.Direct, out.DirectRecords = directRun(run, d, rs.DirectURL), d.coll.recs
		out.Commonest[out.Direct.Name] = d.coll.acc.Fails.Commonest()
	}
	after := src.after(ctx, run, reconciliation(run, st))
	run.Windows = win.finish(run.DurationS, after)
	if err := win.spillErr; err != nil {
		run.Warnings = append(run.Warnings, err.Error())
	}
	src.windows(ctx, run, win)
	run.Warnings = append(run.Warnings, restartWarnings(run.Windows)...)
	out.Records = st.coll.recs
	werr := rs.Records.Err() // returns once this run's lines are in the file
	if lateErr != nil {
		return out, lateErr
	}
	if err := writeFailure(st, run, werr); err != nil {
		return out, err
	}
	return out, runErr(ctx, sendCtx)
}

// withDefaults is r with its zero waits set to their defaults.
func (r *Runner) withDefaults() *Runner {
	c := *r
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = 250 * time.Millisecond
	}
	if c.ReconcileWait <= 0 {
		c.ReconcileWait = 5 * time.Second
	}
	if c.Grace <= 0 {
		c.Grace = 3 * time.Second
	}
	return &c
}

// sender is the load loop with r's sending settings.
func (r *Runner) sender() *sender {
	return &sender{client: r.Client, direct: r.Direct, retries: r.Retries, backoff: r.RetryBackoff,
		requestIDs: r.RequestIDs, waitServer: r.WaitServer}
}

// spill sends a bounded run's samples (and its direct side's) to
// temporary files in SpillDir; remove removes them once the run is over.
func (r *Runner) spill(st *runState, run *result.Run) (remove func()) {
	st.coll.spill(r.SpillDir, run)
	d := st.direct
	if d == nil {
		return st.coll.close
	}
	if err := d.coll.acc.Tally.Spill(r.SpillDir); err != nil {
		run.Warnings = append(run.Warnings, "direct side: "+err.Error())
	}
	return func() {
		d.coll.acc.Tally.Close()
		st.coll.close()
	}
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
		err = st.coll.writeErr()
	}
	if err == nil {
		return nil
	}
	msg := fmt.Sprintf("%v; the run stopped there, %d measured requests completed", err, run.Requests)
	run.Warnings = append(run.Warnings, msg)
	return fmt.Errorf("%w: %s", ErrResultsWrite, msg)
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
