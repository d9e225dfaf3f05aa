package sim

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servebench/servebench/engine/option"
)

// Disaggregated prefill and decode (--kv-role), as vLLM's KV-transfer
// config names the roles (kv_producer, kv_consumer). A producer is a
// prefill instance: it serves requests as any engine does, and a P/D
// router (engine/pd) sends it each request with max_tokens 1, so it only
// prefills. A consumer is a decode instance: a request's prompt KV is
// taken to arrive from the producer, pulled over the KV link at
// --kv-link-gbps before the request joins the waiting queue (its transfer
// time is in TTFT and E2E, not in queue time), and then it computes only the
// prompt's last token before decoding. The model's assumptions: the whole
// prompt's KV (all layers, all KV heads) crosses one link of that rate
// with no protocol overhead, the producer's blocks are free once it has
// answered, and the consumer's blocks are taken at admission, not during
// the transfer.
const (
	KVRoleProducer = "producer"
	KVRoleConsumer = "consumer"
)

// KVRoles are the --kv-role values.
var KVRoles = []string{KVRoleProducer, KVRoleConsumer}

// DefaultKVLinkGbps is --kv-link-gbps's default: one 100 Gb/s NIC per
// node, a common RDMA link between prefill and decode pools.
const DefaultKVLinkGbps = 100

// validateKVRole checks --kv-role and --kv-link-gbps.
func validateKVRole(o *Options) error {
	switch o.KVRole {
	case "", KVRoleProducer, KVRoleConsumer:
	default:
		return option.Errorf("KVRole", o.KVRole, "want one of %s", strings.Join(KVRoles, ", "))
	}
	if !(o.KVLinkGbps >= 0) {
		return option.Errorf("KVLinkGbps", o.KVLinkGbps, "want a positive link rate in Gb/s (or 0 for the default, %d)", DefaultKVLinkGbps)
	}
	return nil
}

// kvTransferTime is how long a consumer waits for r's prompt KV to arrive
// (0 for any other role).
func (e *Engine) kvTransferTime(r *request) time.Duration {
	if e.opts.KVRole != KVRoleConsumer {
		return 0
	}
	gbps := e.opts.KVLinkGbps
	if gbps == 0 {
		gbps = DefaultKVLinkGbps
	}
	bytes := float64(r.prompt) * float64(e.model.KVBytesPerToken())
	d := time.Duration(bytes * 8 / (gbps * 1e9) * float64(time.Second))
	if x := e.m().xfer; x != nil {
		x.time.Observe(e.scale(d).Seconds())
		x.bytes.Observe(bytes)
	}
	return d
}

// xferMetrics are vLLM's NIXL connector histograms, on a consumer.
type xferMetrics struct {
	time, bytes prometheus.Observer
}

func newXferMetrics(reg *prometheus.Registry, labels prometheus.Labels) *xferMetrics {
	h := func(name, help string, b []float64) prometheus.Observer {
		x := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: b, ConstLabels: labels})
		reg.MustRegister(x)
		return x
	}
	return &xferMetrics{
		// vLLM's buckets for nixl_xfer_time_seconds.
		time: h("vllm:nixl_xfer_time_seconds", "Histogram of transfer duration for NIXL KV Cache transfers.",
			[]float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0}),
		bytes: h("vllm:nixl_bytes_transferred", "Histogram of bytes transferred per NIXL KV Cache transfers.",
			prometheus.ExponentialBuckets(1<<20, 4, 10)),
	}
}

// admitRemote is admit for a consumer's request whose prompt KV arrived
// from the producer: it takes the blocks for the prompt and computes only
// its last token this step. A preempted request recomputes as usual.
func (s *scheduler) admitRemote(r *request, budget int) (int, bool) {
	if budget < 1 || !s.alloc(r, r.prompt) {
		return 0, false
	}
	r.computed = r.prompt - 1
	r.remote = false
	if r.cached < 0 {
		r.cached = 0
	}
	return 1, true
}
