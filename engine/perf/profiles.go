package perf

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Default profile names: the seed lesson's real-hardware setup, which the
// model is calibrated against.
const (
	DefaultGPU   = "rtx3060-12gb"
	DefaultModel = "qwen2.5-7b-instruct-awq"
)

// awqBytesPerWeight is what one quantized linear weight costs in an AWQ
// int4 checkpoint with group size 128, as vLLM holds it (Marlin repacks
// without changing the size): 4 bits of weight (0.5 byte), plus per group of
// 128 weights one fp16 scale (2 bytes) and one packed 4-bit zero point
// (0.5 byte): 0.5 + 2.5/128 = 0.51953125. Embeddings and lm_head are not
// quantized by AWQ and stay at 2 bytes (see Model.WeightBytes).
const awqBytesPerWeight = 0.5 + 2.5/128

// GPUs returns the GPU profiles, in table order (smallest first). The
// slice is a copy.
func GPUs() []GPU { return append([]GPU(nil), mustFacts().gpus...) }

// Models returns the model profiles, in table order. The slice is a copy.
func Models() []Model { return append([]Model(nil), mustFacts().models...) }

// LookupGPU finds a GPU profile by name (case-insensitive).
func LookupGPU(name string) (GPU, error) {
	f, err := loadFacts()
	if err != nil {
		return GPU{}, err
	}
	for _, g := range f.gpus {
		if strings.EqualFold(g.Name, name) {
			return g, nil
		}
	}
	return GPU{}, fmt.Errorf("perf: unknown GPU profile %q (expected one of %s)", name, gpuNames())
}

// LookupModel finds a model profile by profile name or served name
// (case-insensitive), so "Qwen/Qwen2.5-7B-Instruct-AWQ" works too.
func LookupModel(name string) (Model, error) { return lookupModel(name, false) }

// lookupModel finds a model profile by profile or served name, and with
// cited an architecture that only the cited figures use too.
func lookupModel(name string, cited bool) (Model, error) {
	f, err := loadFacts()
	if err != nil {
		return Model{}, err
	}
	for _, set := range [][]Model{f.models, f.cited} {
		for _, m := range set {
			if strings.EqualFold(m.Name, name) || strings.EqualFold(m.ServedName, name) {
				return m, nil
			}
		}
		if !cited {
			break
		}
	}
	return Model{}, fmt.Errorf("perf: unknown model profile %q (expected one of %s)", name, modelNames())
}

// citedModels are the architectures that only the cited figures use.
func citedModels() []Model { return mustFacts().cited }

// Lookup finds a GPU and a model profile by name; the error names the bad
// value and lists the valid ones.
func Lookup(gpu, model string) (GPU, Model, error) {
	g, err := LookupGPU(gpu)
	if err != nil {
		return GPU{}, Model{}, err
	}
	m, err := LookupModel(model)
	if err != nil {
		return GPU{}, Model{}, err
	}
	return g, m, nil
}

func gpuNames() string {
	gpus := mustFacts().gpus
	names := make([]string, len(gpus))
	for i, g := range gpus {
		names[i] = g.Name
	}
	return strings.Join(names, ", ")
}

func modelNames() string {
	models := mustFacts().models
	names := make([]string, len(models))
	for i, m := range models {
		names[i] = m.Name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// EmbeddingParams is the number of parameters in the input embedding and,
// unless tied, the lm_head (vocab x hidden each).
func (m Model) EmbeddingParams() float64 {
	n := float64(m.Vocab) * float64(m.Hidden)
	if m.TiedEmbeddings {
		return n
	}
	return 2 * n
}

// LinearParams is the number of parameters outside the embeddings and
// lm_head: the transformer layers (what AWQ quantizes; the few norm and
// bias parameters are counted here too, a negligible error).
func (m Model) LinearParams() float64 { return m.ParamsB*1e9 - m.EmbeddingParams() }

// ArchParams counts parameters from the architecture alone (attention,
// MLP, norms, biases, embeddings), to check ParamsB against.
func (m Model) ArchParams() float64 {
	h, kv := float64(m.Hidden), float64(m.KVHeads*m.HeadDim)
	q := float64(m.Heads * m.HeadDim)
	attn := h*q + 2*h*kv + q*h
	if m.QKVBias {
		attn += q + 2*kv
	}
	if m.QKNorm {
		attn += 2 * float64(m.HeadDim)
	}
	attn += m.extraAttnParams()
	mlp := m.mlpParams()
	perLayer := attn + mlp + 2*h // two RMSNorms
	return float64(m.Layers)*perLayer + h + m.EmbeddingParams()
}

// WeightBytes is the size of the weights in GPU memory: the linear layers
// at BytesPerWeight, embeddings and lm_head at 2 bytes (AWQ leaves them in
// fp16, which is why a 7B AWQ model holds ~5.2 GiB, not 7.6e9*0.5).
func (m Model) WeightBytes() float64 {
	return m.linearBytes() + m.EmbeddingParams()*2
}

// DecodeReadBytes is the weight bytes a forward pass streams from memory:
// every linear layer and the lm_head, but only the gathered rows of the
// input embedding, so an untied embedding table is not read.
func (m Model) DecodeReadBytes() float64 {
	read := m.linearBytes()
	lmHead := float64(m.Vocab) * float64(m.Hidden)
	return read + lmHead*2
}

// KVBytesPerToken is the KV cache size of one token in all layers:
// K and V, each KVHeads x HeadDim, at 2 bytes (the fp16/bf16 KV cache
// vLLM uses by default). Sliding-window layers hold at most SlidingWindow
// tokens a sequence and are left out (gptoss.go).
func (m Model) KVBytesPerToken() int {
	return 2 * m.fullAttentionLayers(m.Layers) * m.KVHeads * m.HeadDim * kvBytes
}

// kvBytes is the KV cache element size (auto = model dtype, 2 bytes).
const kvBytes = 2

// WriteProfiles writes the GPU and model profiles and a fits matrix (KV
// cache tokens at DefaultConfig, or why it does not fit) as aligned text,
// for `servebench engine --list-profiles`.
func WriteProfiles(w io.Writer) error {
	fid, err := FidelityByGPU()
	if err != nil {
		return err
	}
	f, err := loadFacts()
	if err != nil {
		return err
	}
	gpus, models := f.gpus, f.models
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tMEMORY GiB\tBANDWIDTH GB/s\tBF16 TFLOP/s\tLOAD GB/s\tMFU\tBW EFF\tCITED POINTS\tWORST ERR")
	for i, g := range gpus {
		e := EfficiencyFor(g)
		fmt.Fprintf(tw, "%s\t%.2f\t%.0f\t%.1f\t%.2f\t%.2f\t%.2f\t%s\n", g.Name, g.MemoryGiB, g.BandwidthGBs, g.TFLOPs,
			g.LoadGBs, e.MFU, e.Bandwidth, fidelityCell(fid[i]))
	}
	fmt.Fprintln(tw, "(MFU, BW EFF: the GPU architecture's share of the datasheet peaks, fitted to the cited figures; "+
		"CITED POINTS: public figures held against the model (vLLM's, but for a Llama-2-70B length sweep whose engine is not named), "+
		"WORST ERR the largest judged miss, known gaps included: go test ./engine/perf -run Fidelity -v)")
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "MODEL\tSERVED NAME\tPARAMS B\tWEIGHTS GiB\tLAYERS\tKV HEADS\tHEAD DIM\tKV KiB/TOKEN\tMAX CONTEXT")
	for _, m := range models {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%d\t%d\t%d\t%d\t%d\n", m.Name, m.ServedName, m.ParamsB,
			m.WeightBytes()/gib, m.Layers, m.KVHeads, m.HeadDim, m.KVBytesPerToken()/1024, m.MaxContext)
	}
	fmt.Fprintln(tw)
	cfg := DefaultConfig()
	fmt.Fprintf(tw, "FITS? GPU KV cache tokens at --max-model-len %d --gpu-memory-utilization %.2f "+
		"(decode ms/token, one request); vLLM batching defaults: 1024 seqs / 8192 tokens on H100-class, else 256 / 2048\n",
		cfg.MaxModelLen, cfg.GPUMemoryUtilization)
	fmt.Fprint(tw, "GPU")
	for _, m := range models {
		fmt.Fprintf(tw, "\t%s", m.Name)
	}
	fmt.Fprintln(tw)
	for _, g := range gpus {
		fmt.Fprint(tw, g.Name)
		for _, m := range models {
			fmt.Fprintf(tw, "\t%s", fitCell(g, m, cfg))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// fidelityCell is the CITED POINTS and WORST ERR cells of a GPU row.
func fidelityCell(f ProfileFidelity) string {
	if f.Points == 0 {
		return "0\t-"
	}
	return fmt.Sprintf("%d (%d held out)\t%.1f%%", f.Points, f.HeldOut, 100*f.WorstErr)
}

// fitCell is one fits-matrix cell: "77,744 (15.0 ms)" or why not.
func fitCell(g GPU, m Model, cfg Config) string {
	p, err := New(g, m, cfg)
	if err != nil {
		if !errors.Is(err, ErrDoesNotFit) {
			return "invalid"
		}
		q := &Perf{gpu: g, model: m, cfg: withDefaults(cfg, m, g), arch: archOfGPU(g)}
		return fmt.Sprintf("no (needs %.1f of %.1f GiB)", q.need()/gib, q.budget()/gib)
	}
	ms := p.StepTime(Step{DecodeSeqs: 1, ContextTokens: 256}).Seconds() * 1000
	return fmt.Sprintf("%s (%.1f ms)", Commas(p.KVCacheTokens()), ms)
}

// Commas formats n with thousands separators, as vLLM logs token counts
// (Python's "{:,}": 77,744).
func Commas(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + Commas(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
