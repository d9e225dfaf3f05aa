package sim

import "fmt"

// Tensor parallelism in the log: vLLM V1 runs one worker process per GPU
// (--tensor-parallel-size N), and each writes its own lines, prefixed
// "(Worker_TP<rank> pid=...)": its rank assignment, loading its shard of
// the weights ("Model loading took" gives one shard's GiB) and the KV
// cache memory it found. The engine core's summary lines ("GPU KV cache
// size", "Maximum concurrency") come once, as in vLLM. At N = 1 the engine
// core does the work itself and the lines carry its prefix.

// eachRank calls f with each rank's log prefix and number.
func (e *Engine) eachRank(f func(prefix string, rank int)) {
	n := e.opts.TensorParallelSize
	if n <= 1 {
		f(enginePrefix, 0)
		return
	}
	for r := 0; r < n; r++ {
		f(fmt.Sprintf("Worker_TP%d", r), r)
	}
}

// logRank writes vLLM's rank assignment line for a tensor-parallel worker.
func (e *Engine) logRank(prefix string, rank int) {
	n := e.opts.TensorParallelSize
	if n <= 1 {
		return
	}
	e.logf(prefix, "parallel_state.py", 1208, "rank %d in world size %d is assigned as DP rank 0, PP rank 0, TP rank %d, EP rank %d",
		rank, n, rank, rank)
}

// tpArg is the non-default-args entry for --tensor-parallel-size.
func tpArg(n int) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf(", 'tensor_parallel_size': %d", n)
}
