package sim

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/servebench/servebench/engine/perf"
)

// Log line prefixes: vLLM's API server and engine core processes.
const (
	apiPrefix    = "APIServer"
	enginePrefix = "EngineCore_DP0"
)

// vllmVersion is the vLLM version the engine's log and /version imitate.
const vllmVersion = "0.11.0"

// logf writes one vLLM-format line: "(APIServer pid=N) INFO mm-dd hh:mm:ss [file.py:line] msg".
func (e *Engine) logf(proc, file string, line int, format string, a ...any) {
	e.logLevel(proc, "INFO", file, line, format, a...)
}

func (e *Engine) logLevel(proc, level, file string, line int, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	e.logMu.Lock()
	defer e.logMu.Unlock()
	LogLine(e.opts.Log, proc, e.pid, level, file, line, msg)
}

// LogLine writes one line in vLLM's log format, stamped now: the one
// spelling of it for the engine and for engine/pd's router, whose lines
// the launcher's log parser reads alike.
func LogLine(w io.Writer, proc string, pid int, level, file string, line int, msg string) {
	fmt.Fprintf(w, "(%s pid=%d) %s %s [%s:%d] %s\n", proc, pid, level, time.Now().Format("01-02 15:04:05"), file, line, msg)
}

// uvicorn writes a uvicorn-format line, as vLLM's HTTP layer prints them.
func (e *Engine) uvicorn(format string, a ...any) {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	fmt.Fprintf(e.opts.Log, "(%s pid=%d) INFO:     %s\n", apiPrefix, e.pid, fmt.Sprintf(format, a...))
}

// phase is a start-up phase's wall duration.
func (e *Engine) phase(d time.Duration) time.Duration {
	if e.opts.StartupSpeedup > 0 {
		return time.Duration(float64(d) / e.opts.StartupSpeedup)
	}
	return e.scale(d)
}

// startup runs the modelled start-up phases in vLLM's order, each a real
// (sped-up) wait, printing vLLM's line as each phase ends. The durations
// printed are the modelled ones (after the speedup), like the token times in
// /metrics; a busy host can only make the phases end later than printed.
func (e *Engine) startup(ctx context.Context) error {
	su := e.perf.Startup()
	o := e.opts
	e.logf(apiPrefix, "api_server.py", 1822, "vLLM API server version %s (servebench bundled engine, %s on %s, speedup %g)", vllmVersion, o.Model, o.GPU, o.Speedup)
	e.logf(apiPrefix, "utils.py", 233, "non-default args: {'model': '%s', 'max_model_len': %d, 'gpu_memory_utilization': %g, 'max_num_seqs': %d%s}", e.served, o.MaxModelLen, o.GPUMemoryUtilization, e.maxSeqs, parallelArgs(o.TensorParallelSize, o.PipelineParallelSize))
	e.logf(apiPrefix, "model.py", 1564, "Using max model len %d", o.MaxModelLen)
	e.logf(apiPrefix, "scheduler.py", 205, "Chunked prefill is enabled with max_num_batched_tokens=%d.", e.maxBatched)
	e.logf(enginePrefix, "core.py", 77, "Initializing a V1 LLM engine (v%s) with config: model='%s', max_seq_len=%d, seed=%d, served_model_name=%s, chunked_prefill_enabled=True", vllmVersion, e.served, o.MaxModelLen, o.Seed, e.served)
	if err := sleep(ctx, e.phase(su.PreLoad)); err != nil {
		return err
	}
	e.eachRank(func(w string, r int) {
		e.logRank(w, r)
		e.logf(w, "gpu_model_runner.py", 2547, "Starting to load model %s...", e.served)
	})
	if err := sleep(ctx, e.phase(su.WeightsLoad)); err != nil {
		return err
	}
	e.eachRank(func(w string, _ int) {
		e.logf(w, "default_loader.py", 267, "Loading weights took %.2f seconds", e.phase(su.WeightsLoad).Seconds())
	})
	if e.faults.exitDuringLoad {
		e.logLevel(enginePrefix, "ERROR", "core.py", 708, "EngineCore failed to start (fault exit-during-load).")
		return ErrLoadFailed
	}
	if err := sleep(ctx, e.phase(su.ModelLoad-su.WeightsLoad)); err != nil {
		return err
	}
	e.eachRank(func(w string, _ int) {
		e.logf(w, "gpu_model_runner.py", 2598, "Model loading took %.4f GiB and %.6f seconds", su.ModelGiB, e.phase(su.ModelLoad).Seconds())
	})
	if err := sleep(ctx, e.phase(su.Compile)); err != nil {
		return err
	}
	e.logf(enginePrefix, "monitor.py", 34, "torch.compile takes %.2f s in total", e.phase(su.Compile).Seconds())
	if err := sleep(ctx, e.phase(su.Profile)); err != nil {
		return err
	}
	kvGiB := su.KVCacheGiB
	if e.opts.NumGPUBlocksOverride > 0 {
		kvGiB = float64(e.kvTokens) * float64(e.perf.KVBytesPerTokenPerGPU()) / (1 << 30)
	}
	e.eachRank(func(w string, _ int) { e.logf(w, "gpu_worker.py", 306, "Available KV cache memory: %.2f GiB", kvGiB) })
	e.logf(enginePrefix, "kv_cache_utils.py", 1087, "GPU KV cache size: %s tokens", perf.Commas(e.kvTokens))
	e.logf(enginePrefix, "kv_cache_utils.py", 1091, "Maximum concurrency for %s tokens per request: %.2fx", perf.Commas(o.MaxModelLen), e.maxConc)
	e.logKVAllocation()
	if err := sleep(ctx, e.phase(su.GraphCapture)); err != nil {
		return err
	}
	e.logf(enginePrefix, "gpu_model_runner.py", 3388, "Graph capturing finished in %.0f secs, took %.2f GiB", e.phase(su.GraphCapture).Seconds(), su.GraphGiB)
	e.logf(enginePrefix, "core.py", 210, "init engine (profile, create kv cache, warmup model) took %.2f seconds", e.phase(su.InitEngine()).Seconds())
	e.logf(apiPrefix, "loggers.py", 148, "Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: %d", e.numBlocks)
	if e.faults.neverReady {
		e.logLevel(apiPrefix, "WARNING", "api_server.py", 1600, "fault never-ready: the API server will not finish starting")
		<-ctx.Done()
		return ctx.Err()
	}
	return sleep(ctx, e.phase(su.APIStart))
}

// logRoutes prints the route list and uvicorn's start lines, as vLLM does
// right after "Starting vLLM API server".
func (e *Engine) logRoutes() {
	for _, r := range e.routes() {
		e.logf(apiPrefix, "launcher.py", 42, "Route: %s, Methods: %s", r.path, r.method)
	}
	e.uvicorn("Started server process [%d]", e.pid)
	e.uvicorn("Waiting for application startup.")
}
