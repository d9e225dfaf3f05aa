package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servebench/servebench/engine/perf"
	"github.com/servebench/servebench/engine/tok"
)

// Errors Run returns for faults that end the server (errors.Is-able).
var (
	ErrCrashed    = errors.New("engine crashed (fault crash-after)")
	ErrLoadFailed = errors.New("engine core failed to start (fault exit-during-load)")
)

// Engine is one bundled-engine server. Create it with New, start it with Run
// (once); Ready and BaseURL may be called from any goroutine.
type Engine struct {
	opts       Options
	perf       perfModel
	gpu        perf.GPU
	model      perf.Model
	served     string
	tok        *tok.Tokenizer // the served model's: prompt counts, /tokenize
	maxSeqs    int
	maxBatched int
	numBlocks  int
	kvTokens   int
	maxConc    float64
	faults     *faults
	reasoner   *reasoner // nil without --reasoning-parser
	lora       *loraSet  // nil without --lora-modules

	epoch   time.Time
	power   *power // the GPUs' DCGM power and energy series
	metrics atomic.Pointer[metrics]
	sched   *scheduler
	seq     atomic.Uint64
	pid     int

	ready     chan struct{}
	isReady   atomic.Bool
	baseURL   atomic.Pointer[string]
	started   atomic.Bool
	stopping  chan struct{} // closed when Run begins shutting down
	crash     chan struct{} // closed by the crash-after fault
	crashOnce sync.Once
	served2   atomic.Int64 // responses completed, for crash-after
	// crashConn is the connection whose response reached crash-after's
	// count; the crash comes once that response is wholly on the wire.
	crashConn atomic.Pointer[net.Conn]
	logMu     sync.Mutex

	truth truth // per-request records, with DebugRequests
}

// timing, when set, is told every engine's lateness in ns: token, each
// streamed token's write time minus its modelled emission time; step, each
// step's completion time minus its modelled end. Only the package's pacing
// benchmarks set it (observeTiming, export_test.go), around one engine's
// life; nil otherwise, which costs the hot path a nil check.
var timing *timingProbe

type timingProbe struct{ token, step func(lateNs int64) }

// New validates opts, builds the performance model and sizes the KV cache.
// It fails when a profile is unknown or the model does not fit the GPU.
func New(opts Options) (*Engine, error) {
	pl, err := opts.plan()
	if err != nil {
		return nil, err
	}
	opts, p, g, m := pl.opts, pl.perf, pl.gpu, pl.model
	e := &Engine{opts: opts, perf: p, gpu: g, model: m, faults: pl.faults, reasoner: pl.reasoner, lora: pl.lora, pid: os.Getpid(),
		ready: make(chan struct{}), stopping: make(chan struct{}), crash: make(chan struct{})}
	e.served = opts.ServedModelName
	if e.served == "" {
		e.served = m.ServedName
	}
	if e.served == "" {
		e.served = m.Name
	}
	if e.tok, err = tok.For(m.Name); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.maxSeqs, e.maxBatched = e.opts.MaxNumSeqs, e.opts.MaxNumBatchedTokens
	e.numBlocks, e.kvTokens, e.maxConc = pl.numBlocks, pl.kvTokens, pl.maxConc
	e.epoch = time.Now()
	e.power = newPower(g, max(1, opts.TensorParallelSize)*max(1, opts.PipelineParallelSize), opts.Speedup, e.now)
	e.metrics.Store(e.newMetrics())
	e.sched = &scheduler{e: e, perf: p, speedup: opts.Speedup, maxSeqs: e.maxSeqs, maxTokens: e.maxBatched,
		pool: newBlockPool(e.numBlocks, blockSize, !opts.NoPrefixCaching), bs: blockSize, wakeCh: make(chan struct{}, 1),
		spec: opts.SpeculativeTokens, accept: opts.AcceptanceRate, reserve: opts.KVAllocation == KVContiguous, specLog: specCounts{perPos: make([]atomic.Int64, opts.SpeculativeTokens)}}
	if pl.lora != nil {
		e.sched.lora = &loraSlots{set: pl.lora}
	}
	if e.sched.vocabIDs, err = vocabIDs(e.tok); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return e, nil
}

// Validate checks opts as New does (every option's range, the faults, the
// reasoning and LoRA settings, the GPU and model profiles, and that one
// full-length request fits the KV cache) without building an engine: callers
// that only check settings before starting one (bench, for the bundled
// engine's flags) need no engine. opts is not changed.
func (opts Options) Validate() error {
	_, err := opts.plan()
	return err
}

// enginePlan is what New derives from its options before building the
// engine: the options completed, and the parts that may refuse them.
type enginePlan struct {
	opts      Options
	faults    *faults
	reasoner  *reasoner
	lora      *loraSet
	perf      *perf.Perf
	gpu       perf.GPU
	model     perf.Model
	numBlocks int
	kvTokens  int
	maxConc   float64
}

// plan validates opts and derives the engine's parts (see enginePlan).
func (opts Options) plan() (enginePlan, error) {
	if err := opts.validate(); err != nil {
		return enginePlan{}, err
	}
	if opts.KVAllocation == KVContiguous {
		opts.NoPrefixCaching = true // reserved regions are private: nothing to share
	}
	pl := enginePlan{}
	var err error
	if pl.faults, err = parseFaults(opts.Faults, opts.Seed); err != nil {
		return pl, err
	}
	if pl.reasoner, err = newReasoner(&opts); err != nil {
		return pl, err
	}
	p, g, m, err := buildPerf(&opts)
	if err != nil {
		return pl, fmt.Errorf("engine: %w", err)
	}
	if pl.lora, err = newLoRASet(&opts, m.Layers, m.Hidden); err != nil {
		return pl, err
	}
	pl.perf, pl.gpu, pl.model = p, g, m
	pl.numBlocks, pl.kvTokens, pl.maxConc = p.NumGPUBlocks(), p.KVCacheTokens(), p.MaxConcurrency(opts.MaxModelLen)
	if opts.NumGPUBlocksOverride > 0 {
		pl.numBlocks = opts.NumGPUBlocksOverride
		pl.kvTokens = pl.numBlocks * blockSize
		pl.maxConc = float64(pl.kvTokens) / float64(opts.MaxModelLen)
	}
	if pl.kvTokens < opts.MaxModelLen {
		// vLLM refuses to start when one full-length request cannot fit.
		return pl, fmt.Errorf("the model's max seq len (%d) is larger than the maximum number of tokens that can be stored in KV cache (%d) on %s: increase --gpu-memory-utilization or decrease --max-model-len",
			opts.MaxModelLen, pl.kvTokens, g.Name)
	}
	pl.opts = opts
	return pl, nil
}

func (e *Engine) newMetrics() *metrics {
	m := newMetrics(e.served, e.opts.MaxModelLen, cacheInfo{numGPUBlocks: e.numBlocks, blockSize: blockSize,
		kvTokens: e.kvTokens, maxConcurrency: e.maxConc, gpuMemUtil: e.opts.GPUMemoryUtilization,
		prefixCaching: !e.opts.NoPrefixCaching})
	if k := e.opts.SpeculativeTokens; k > 0 {
		m.spec = newSpecMetrics(m.reg, engineLabels(e.served), k)
	}
	if e.opts.KVRole == KVRoleConsumer {
		m.xfer = newXferMetrics(m.reg, engineLabels(e.served))
	}
	if e.lora != nil {
		m.lora = newLoRAGauge(m.reg, e.lora.maxLoRAs)
	}
	e.power.register(m.reg, e.gpu.Name)
	return m
}

// Ready is closed once /health answers 200.
func (e *Engine) Ready() <-chan struct{} { return e.ready }

// BaseURL is "http://HOST:PORT" once the engine listens, "" before.
func (e *Engine) BaseURL() string {
	if p := e.baseURL.Load(); p != nil {
		return *p
	}
	return ""
}

// ServedModelName is the model name /v1/models lists.
func (e *Engine) ServedModelName() string { return e.served }

// KVCacheTokens is the KV cache capacity in tokens (the start-up log's figure).
func (e *Engine) KVCacheTokens() int { return e.kvTokens }

// now is the engine clock: monotonic nanoseconds since New.
func (e *Engine) now() int64 { return int64(time.Since(e.epoch)) }

// m is the current metric set (replaced by the metrics-reset fault).
func (e *Engine) m() *metrics { return e.metrics.Load() }

// scale turns a modelled duration into wall time under Speedup.
func (e *Engine) scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) / e.opts.Speedup)
}

// Run goes through the start-up phases, serves until ctx is done, then shuts
// down: in-flight requests are aborted, connections closed. It returns nil
// after a clean stop, ErrCrashed or ErrLoadFailed for those faults, or the
// listen error.
func (e *Engine) Run(ctx context.Context) error {
	if !e.started.CompareAndSwap(false, true) {
		return errors.New("engine: Run called twice")
	}
	hs := &httpServer{srv: &http.Server{Handler: e.handler(), ReadHeaderTimeout: 10 * time.Second}, serveErr: make(chan error, 1)}
	if e.faults.crashAfter > 0 {
		// Only crash-after needs to know connections; off, they cost nothing.
		hs.srv.ConnContext, hs.srv.ConnState = withConn, e.connState
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if e.opts.HealthDuringLoad == Health503 {
		if err := e.listen(hs); err != nil {
			return err
		}
	}
	err := e.startup(runCtx)
	if err == nil && hs.ln == nil {
		err = e.listen(hs)
	}
	if err == nil {
		err = e.serve(ctx, runCtx, hs)
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		err = nil // stopped during start-up: a clean stop
	}
	e.shutdown(hs, errors.Is(err, ErrCrashed))
	cancel()
	return err
}

// httpServer is the engine's HTTP side; ln is nil until listen.
type httpServer struct {
	srv      *http.Server
	ln       net.Listener
	serveErr chan error // Serve's return
}

// listen opens the engine's port, names its URL and starts serving.
func (e *Engine) listen(hs *httpServer) error {
	l, err := net.Listen("tcp", net.JoinHostPort(e.opts.Host, strconv.Itoa(e.opts.Port)))
	if err != nil {
		return fmt.Errorf("listening on %s port %d: %w", e.opts.Host, e.opts.Port, err)
	}
	hs.ln = l
	port := l.Addr().(*net.TCPAddr).Port
	urlHost := e.opts.Host
	if ip := net.ParseIP(urlHost); ip != nil && ip.IsUnspecified() {
		urlHost = "127.0.0.1"
	}
	u := "http://" + net.JoinHostPort(urlHost, strconv.Itoa(port))
	e.baseURL.Store(&u)
	e.logf(apiPrefix, "api_server.py", 1895, "Starting vLLM API server 0 on http://%s", net.JoinHostPort(e.opts.Host, strconv.Itoa(port)))
	go func() { hs.serveErr <- hs.srv.Serve(l) }()
	return nil
}

// serve declares the engine ready, starts its loops and serves until ctx
// is done (nil), the crash fault fires (ErrCrashed) or serving fails.
func (e *Engine) serve(ctx, runCtx context.Context, hs *httpServer) error {
	e.logRoutes()
	go e.sched.run(runCtx)
	go e.logStats(runCtx)
	e.isReady.Store(true)
	close(e.ready)
	e.uvicorn("Application startup complete.")
	select {
	case <-ctx.Done():
		return nil
	case <-e.crash:
		return ErrCrashed
	case err := <-hs.serveErr:
		return err
	}
}

// shutdown stops serving: in-flight requests are aborted, connections
// closed; after a crash, at once and without uvicorn's goodbye.
func (e *Engine) shutdown(hs *httpServer, crashed bool) {
	if hs.ln != nil && crashed {
		hs.srv.Close() // a crash drops every connection at once, mid-stream too
	}
	close(e.stopping)
	if hs.ln == nil || crashed {
		return
	}
	e.uvicorn("Shutting down")
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	if hs.srv.Shutdown(sctx) != nil {
		hs.srv.Close()
	}
	scancel()
	e.uvicorn("Finished server process [%d]", e.pid)
}

// sleep waits d of wall time, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// requestFinished counts completed responses for the crash-after fault. The
// handler has not returned yet, so net/http may still hold the response's
// end in its buffer: the crash itself waits for connState to see hr's
// connection finish (idle or closed); meanwhile handleGenerate refuses new
// requests.
func (e *Engine) requestFinished(hr *http.Request) {
	n := e.served2.Add(1)
	if e.faults.crashAfter > 0 && n == int64(e.faults.crashAfter) {
		e.logf(enginePrefix, "core.py", 720, "EngineCore encountered a fatal error (fault crash-after=%d).", e.faults.crashAfter)
		c := hr.Context().Value(connKey{}).(net.Conn) // Run sets ConnContext when crash-after is on
		e.crashConn.Store(&c)
	}
	if e.faults.metricsResetAfter > 0 && n == int64(e.faults.metricsResetAfter) {
		e.logLevel(apiPrefix, "WARNING", "loggers.py", 160, "metrics restart from zero (fault metrics-reset=%d)", n)
		e.metrics.Store(e.newMetrics())
	}
}

// crashDue reports whether crash-after's count has been reached.
func (e *Engine) crashDue() bool {
	return e.faults.crashAfter > 0 && e.served2.Load() >= int64(e.faults.crashAfter)
}

func (e *Engine) crashNow() { e.crashOnce.Do(func() { close(e.crash) }) }

// connState crashes the engine once the connection that served the last
// response before the crash has written all of it.
func (e *Engine) connState(c net.Conn, s http.ConnState) {
	if s != http.StateIdle && s != http.StateClosed && s != http.StateHijacked {
		return
	}
	if p := e.crashConn.Load(); p != nil && *p == c {
		e.crashNow()
	}
}

type connKey struct{}

// withConn puts each request's connection in its context, for connState.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// perfModel is what the engine asks engine/perf: capacity, step times and
// start-up phases. *perf.Perf implements it.
type perfModel interface {
	KVCacheTokens() int
	NumGPUBlocks() int
	BlockSize() int
	MaxConcurrency(tokensPerRequest int) float64
	KVBytesPerTokenPerGPU() int
	StepTime(perf.Step) time.Duration
	RequestOverhead() time.Duration
	Startup() perf.Startup
}

// blockSize is vLLM's default KV block size in tokens.
const blockSize = 16

// buildPerf looks the profiles up and builds the performance model, filling
// in o's zero fields with what the model resolved (vLLM's defaults).
func buildPerf(o *Options) (*perf.Perf, perf.GPU, perf.Model, error) {
	g, m, err := perf.Lookup(o.GPU, o.Model)
	if err != nil {
		return nil, g, m, err
	}
	p, err := perf.New(g, m, perf.Config{MaxModelLen: o.MaxModelLen, GPUMemoryUtilization: o.GPUMemoryUtilization,
		BlockSize: blockSize, MaxNumSeqs: o.MaxNumSeqs, MaxNumBatchedTokens: o.MaxNumBatchedTokens,
		TensorParallelSize: o.TensorParallelSize, PipelineParallelSize: o.PipelineParallelSize, VLLMVersion: o.VLLMVersion})
	if err != nil {
		return nil, g, m, err
	}
	cfg := p.Config()
	o.MaxModelLen, o.MaxNumSeqs, o.MaxNumBatchedTokens = cfg.MaxModelLen, cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens
	o.TensorParallelSize, o.PipelineParallelSize = cfg.TensorParallelSize, cfg.PipelineParallelSize
	return p, g, m, nil
}
