package sim

import "fmt"

// Tensor and pipeline parallelism in the log: vLLM V1 runs one worker
// process per GPU (--tensor-parallel-size N x --pipeline-parallel-size P),
// and each writes its own lines, prefixed "(Worker_TP<rank> pid=...)", or
// "(Worker_PP<stage>_TP<rank> pid=...)" with stages: its rank assignment,
// loading its shard of the weights ("Model loading took" gives one shard's
// GiB) and the KV cache memory it found. The engine core's summary lines ("GPU KV cache
// size", "Maximum concurrency") come once, as in vLLM. At N = 1 the engine
// core does the work itself and the lines carry its prefix.

// eachRank calls f with each rank's log prefix and number (rank = the
// pipeline stage x TP + the tensor-parallel rank, as vLLM numbers them).
func (e *Engine) eachRank(f func(prefix string, rank int)) {
	tp, pp := e.opts.TensorParallelSize, e.opts.PipelineParallelSize // at least 1: New resolved them (buildPerf)
	if tp*pp == 1 {
		f(enginePrefix, 0)
		return
	}
	for r := 0; r < tp*pp; r++ {
		if pp > 1 {
			f(fmt.Sprintf("Worker_PP%d_TP%d", r/tp, r%tp), r)
		} else {
			f(fmt.Sprintf("Worker_TP%d", r), r)
		}
	}
}

// logRank writes vLLM's rank assignment line for a parallel worker.
func (e *Engine) logRank(prefix string, rank int) {
	tp, pp := e.opts.TensorParallelSize, e.opts.PipelineParallelSize
	if tp*pp <= 1 {
		return
	}
	e.logf(prefix, "parallel_state.py", 1208, "rank %d in world size %d is assigned as DP rank 0, PP rank %d, TP rank %d, EP rank %d",
		rank, tp*pp, rank/tp, rank%tp, rank%tp)
}

// parallelArgs is the non-default-args entries for the parallel sizes.
func parallelArgs(tp, pp int) string {
	s := ""
	if tp > 1 {
		s += fmt.Sprintf(", 'tensor_parallel_size': %d", tp)
	}
	if pp > 1 {
		s += fmt.Sprintf(", 'pipeline_parallel_size': %d", pp)
	}
	return s
}
