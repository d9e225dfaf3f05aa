package sim

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servebench/servebench/engine/option"
)

// LoRA adapters as vLLM serves them (--enable-lora --lora-modules
// name=path ... --max-loras N):
//
//   - each adapter is a model of its own in /v1/models (root: its path,
//     parent: the base model) and a request names it in "model";
//   - the scheduler runs requests of at most --max-loras distinct adapters
//     at once: a waiting request whose adapter would be one too many is
//     skipped this step and later requests may go first (vLLM V1's
//     scheduler.py: "Scheduling would exceed max_loras, skip");
//   - --max-loras GPU slots hold adapters, least recently used first out:
//     an adapter that is not in a slot is copied in from host memory, as
//     S-LoRA and vLLM keep adapters in host memory and fetch the active ones
//     (Sheng et al., "S-LoRA: Serving Thousands of Concurrent LoRA
//     Adapters", arXiv:2311.03285). The copy lengthens the step that needs
//     it by the adapter's bytes over the host-to-GPU link (loraSwapTime);
//   - vllm:lora_requests_info, a gauge set to the current time whose labels
//     name the running and waiting adapters and max_lora (vLLM V1's
//     loggers.py), one series per label set ever seen, as prometheus_client
//     keeps them.
//
// An adapter's requests chain their prefix-cache block hashes from its own
// root (loraRoot), so adapters never share blocks. Not modelled: the
// adapters' compute in each step (Punica's SGMV kernels), the memory vLLM
// reserves for the slots, loading from disk on first use (docs/engine.md).

// DefaultMaxLoRAs and DefaultMaxLoRARank are vLLM's --max-loras and
// --max-lora-rank defaults (vllm/config/lora.py).
const (
	DefaultMaxLoRAs    = 1
	DefaultMaxLoRARank = 16
)

// hostToGPUBytesPerS is the host-to-GPU copy rate an adapter swap runs at:
// an assumption, PCIe 4.0 x16's 32 GB/s peak less protocol overhead, as
// pinned-memory copies reach in practice (no cited measurement).
const hostToGPUBytesPerS = 25e9

// loraTargets is how many of each layer's linear maps an adapter adapts:
// an assumption, q, k, v and o (PEFT's usual attention targets).
const loraTargets = 4

// loraSet is the engine's adapters; nil without --lora-modules.
type loraSet struct {
	names    []string
	paths    map[string]string
	maxLoRAs int
	swap     time.Duration // one adapter's copy into a slot, modelled
}

// newLoRASet reads --lora-modules (name=path, or a bare name whose path is
// itself) and checks --max-loras and --max-lora-rank.
func newLoRASet(o *Options, layers, hidden int) (*loraSet, error) {
	if len(o.LoRAModules) == 0 {
		if o.MaxLoRAs > 0 {
			return nil, option.Errorf("MaxLoRAs", nil, "{MaxLoRAs} %d needs {LoRAModules}", o.MaxLoRAs)
		}
		return nil, nil
	}
	ls := &loraSet{paths: map[string]string{}, maxLoRAs: o.MaxLoRAs}
	if ls.maxLoRAs == 0 {
		ls.maxLoRAs = DefaultMaxLoRAs
	}
	rank := o.MaxLoRARank
	if rank == 0 {
		rank = DefaultMaxLoRARank
	}
	if ls.maxLoRAs < 0 || rank < 0 {
		return nil, option.Errorf("MaxLoRAs", nil, "{MaxLoRAs} %d, {MaxLoRARank} %d: want positive counts", o.MaxLoRAs, o.MaxLoRARank)
	}
	for _, m := range o.LoRAModules {
		name, path, _ := strings.Cut(m, "=")
		if name == "" {
			return nil, option.Errorf("LoRAModules", m, "want name=path")
		}
		if path == "" {
			path = name
		}
		if _, dup := ls.paths[name]; dup {
			return nil, option.Errorf("LoRAModules", nil, "adapter %q given twice", name)
		}
		ls.names = append(ls.names, name)
		ls.paths[name] = path
	}
	ls.swap = loraSwapTime(layers, hidden, rank)
	return ls, nil
}

// loraSwapTime is the modelled copy of one adapter into a GPU slot: its
// A (rank x hidden) and B (hidden x rank) matrices in 16-bit, for
// loraTargets maps of every layer, over the host-to-GPU link.
func loraSwapTime(layers, hidden, rank int) time.Duration {
	bytes := float64(layers*loraTargets*2*rank*hidden) * 2
	return time.Duration(bytes / hostToGPUBytesPerS * float64(time.Second))
}

// root is r's block hash chain's root (request.hashRoot).
func (r *request) root() uint64 {
	if r.hashRoot == 0 {
		return rootHash
	}
	return r.hashRoot
}

// loraRoot is the block hash chain's root of an adapter's requests.
func loraRoot(name string) uint64 { return hashString(rootHash, "lora:"+name) }

// has reports whether name is one of the adapters.
func (ls *loraSet) has(name string) bool {
	if ls == nil {
		return false
	}
	_, ok := ls.paths[name]
	return ok
}

// loraModels are /v1/models' entries of the adapters, as vLLM lists them.
func (e *Engine) loraModels(created int64) []map[string]any {
	var out []map[string]any
	if e.lora == nil {
		return out
	}
	for _, n := range e.lora.names {
		out = append(out, map[string]any{"id": n, "object": "model", "created": created, "owned_by": "vllm",
			"root": e.lora.paths[n], "parent": e.served, "max_model_len": nil, "permission": []any{}})
	}
	return out
}

// loraSlots is the scheduler's view of adapters: which hold a GPU slot,
// least recently used first, and the swap time owed by the step being
// scheduled.
type loraSlots struct {
	set      *loraSet
	resident []string // least recently used first
	owed     time.Duration
	swaps    int64 // adapters copied in, ever (the stats log)
}

// fits reports whether r may join a batch whose running requests use the
// adapters in use: always without an adapter, or when its adapter is
// already running, or a slot is left.
func (l *loraSlots) fits(r *request, inUse []string) bool {
	return r.lora == "" || slices.Contains(inUse, r.lora) || len(inUse) < l.set.maxLoRAs
}

// use makes r's adapter resident, swapping out the least recently used one
// not in use when the slots are full; the copy is owed by this step.
func (l *loraSlots) use(r *request, inUse []string) {
	if r.lora == "" {
		return
	}
	if i := slices.Index(l.resident, r.lora); i >= 0 {
		l.resident = append(slices.Delete(l.resident, i, i+1), r.lora)
		return
	}
	if len(l.resident) >= l.set.maxLoRAs {
		for i, a := range l.resident {
			if !slices.Contains(inUse, a) {
				l.resident = slices.Delete(l.resident, i, i+1)
				break
			}
		}
	}
	l.resident = append(l.resident, r.lora)
	l.owed += l.set.swap
	l.swaps++
}

// adapters appends the distinct adapters of rs to dst, sorted.
func adapters(dst []string, rs []*request) []string {
	dst = dst[:0]
	for _, r := range rs {
		if r != nil && r.lora != "" && !slices.Contains(dst, r.lora) {
			dst = append(dst, r.lora)
		}
	}
	slices.Sort(dst)
	return dst
}

// loraGauge is vllm:lora_requests_info.
type loraGauge struct {
	vec      *prometheus.GaugeVec
	maxLoRAs string
}

func newLoRAGauge(reg *prometheus.Registry, maxLoRAs int) *loraGauge {
	vec := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:lora_requests_info", Help: "Running stats on lora requests."},
		[]string{"max_lora", "waiting_lora_adapters", "running_lora_adapters"})
	reg.MustRegister(vec)
	return &loraGauge{vec: vec, maxLoRAs: strconv.Itoa(maxLoRAs)}
}

// set records the adapters running and waiting now, as vLLM does each
// step: the series of this label set is set to the current time.
func (g *loraGauge) set(running, waiting []string, now time.Time) {
	g.vec.WithLabelValues(g.maxLoRAs, strings.Join(waiting, ","), strings.Join(running, ",")).
		Set(float64(now.UnixNano()) / 1e9)
}
