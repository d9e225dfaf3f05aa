package perf

import "math"

// Mixture-of-experts models. Every layer's MLP is Experts experts, each
// a gated MLP (gate, up, down: 3 x hidden x MoEIntermediate), and a router
// (hidden x Experts) that sends each token to ExpertsPerToken of them. A
// token's FLOPs are those of the experts it is routed to (the active
// parameters); a forward pass reads the weights of every expert at least
// one of its tokens is routed to.
//
// Which experts a batch touches is the model's assumption: routing is
// taken as uniform and independent per token, so for B tokens each picking
// k of E experts, one expert is missed by all of them with probability
// (1 - k/E)^B and the expected number of distinct experts per layer is
//
//	E x (1 - (1 - k/E)^B)
//
// (B = 1 reads k experts; B = 8 with Mixtral's 2 of 8 reads 7.2; a
// prefill of hundreds of tokens reads them all). Real routers are skewed
// toward popular experts, so this is an upper bound on the bytes a small
// batch reads; the fidelity test holds it against Mixtral-8x7B's decode
// at TP=4 and 8 (data/figures/lambdalabs-vllm-benchmark.csv).

// IsMoE reports whether the model has routed experts.
func (m Model) IsMoE() bool { return m.Experts > 0 }

// expertParams is one expert's parameters in one layer.
func (m Model) expertParams() float64 {
	return 3 * float64(m.Hidden) * float64(m.MoEIntermediate)
}

// mlpParams is one layer's MLP parameters: a dense gated MLP, or all the
// experts plus the router.
func (m Model) mlpParams() float64 {
	if !m.IsMoE() {
		return 3 * float64(m.Hidden) * float64(m.Intermediate)
	}
	return float64(m.Experts)*m.expertParams() + float64(m.Hidden)*float64(m.Experts) + m.moeBiasParams()
}

// mlpWidth is the MLP's intermediate width one token passes through (its
// activations in the profiling run): Intermediate, or the routed experts'.
func (m Model) mlpWidth() int {
	if !m.IsMoE() {
		return m.Intermediate
	}
	return m.ExpertsPerToken * m.MoEIntermediate
}

// idleExpertParams is the parameters of the experts one token is not
// routed to, over all layers (0 for a dense model).
func (m Model) idleExpertParams() float64 {
	if !m.IsMoE() {
		return 0
	}
	return float64(m.Layers*(m.Experts-m.ExpertsPerToken)) * m.expertParams()
}

// ActiveParams is the parameters one token's forward pass uses: all of a
// dense model; a MoE model's total less the experts it is not routed to.
func (m Model) ActiveParams() float64 { return m.ParamsB*1e9 - m.idleExpertParams() }

// ActiveLinearParams is LinearParams less the idle experts: what one
// token's GEMMs multiply by (2 FLOPs each).
func (m Model) ActiveLinearParams() float64 { return m.LinearParams() - m.idleExpertParams() }

// ExpectedExperts is the expected number of distinct experts per layer that
// tokens routed uniformly touch (see the file comment); 0 for a dense model.
func (m Model) ExpectedExperts(tokens int) float64 {
	if !m.IsMoE() || tokens <= 0 {
		return 0
	}
	e := float64(m.Experts)
	return e * (1 - math.Pow(1-float64(m.ExpertsPerToken)/e, float64(tokens)))
}

// readBytes is the weight bytes a forward pass over tokens streams from
// memory (all GPUs together): DecodeReadBytes for a dense model; for a MoE
// model the experts not expected to be touched are not read.
func (m Model) readBytes(tokens int) float64 {
	if !m.IsMoE() {
		return m.DecodeReadBytes()
	}
	untouched := (float64(m.Experts) - m.ExpectedExperts(tokens)) * float64(m.Layers) * m.expertParams()
	return m.DecodeReadBytes() - untouched*m.expertBytesPerWeight()
}
