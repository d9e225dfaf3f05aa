package sim

import (
	"strings"

	"github.com/servebench/servebench/engine/option"
)

// KV allocation policies (--kv-allocation).
//
// Paged is vLLM's PagedAttention: a request holds blocks of 16 tokens for
// the tokens it has, taking one more as it grows, so the cache holds as many
// sequences as their actual lengths allow (and a decode that finds no free
// block preempts the youngest).
//
// Contiguous is how servers allocated before paging (FasterTransformer,
// early TGI and HF pipelines): at admission a request reserves one region
// for its prompt plus max_tokens, whatever it will really generate, and
// keeps it to the end. A request whose region does not fit waits in the
// queue. The model counts the reservation only; the external fragmentation
// of real contiguous allocators (free space in holes too small for a
// region) would lower capacity further. Regions are private, so prefix
// caching is off. With max_tokens far above what requests really generate,
// most of the cache is reserved and never written: the KV cache reads full
// while few sequences run and the GPU's steps stay small (the seed's "out
// of KV at ~20 concurrent while compute sits at 30%").
const (
	KVPaged      = "paged"
	KVContiguous = "contiguous"
)

// KVAllocations are the --kv-allocation values, default first.
var KVAllocations = []string{KVPaged, KVContiguous}

// validateKVAllocation checks o.KVAllocation ("" is paged).
func validateKVAllocation(o *Options) error {
	switch o.KVAllocation {
	case "":
		o.KVAllocation = KVPaged
	case KVPaged, KVContiguous:
	default:
		return option.Errorf("KVAllocation", o.KVAllocation, "want one of %s", strings.Join(KVAllocations, ", "))
	}
	return nil
}

// admitReserved is admit under contiguous allocation: r starts only when
// its whole region (prompt + max_tokens) is free, and takes it all at once;
// nothing is looked up in a prefix cache.
func (s *scheduler) admitReserved(r *request, budget int) (int, bool) {
	if !s.alloc(r, r.prompt+r.maxTokens) {
		return 0, false
	}
	r.computed = 0
	if r.cached < 0 {
		r.cached = 0
	}
	return min(r.prompt+r.output, budget), true
}

// logKVAllocation says, under contiguous allocation, that the engine
// departs from vLLM there (vLLM has only paged allocation).
func (e *Engine) logKVAllocation() {
	if e.opts.KVAllocation != KVContiguous {
		return
	}
	e.logLevel(enginePrefix, "WARNING", "kv_cache_utils.py", 1093,
		"--kv-allocation contiguous (servebench emulation, not a vLLM mode): each request reserves prompt + max_tokens of KV at admission; prefix caching off")
}
