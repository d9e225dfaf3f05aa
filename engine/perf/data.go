package perf

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"
)

// The facts of every GPU, architecture and model live in data/, one record
// each: data/gpus.json (specs, datasheet, architecture, interconnect),
// data/archs.json (the efficiencies and kernel paths vLLM has on an
// architecture), data/models.json (config.json shapes) and data/links.json
// (the node interconnects GPUs name). They are parsed
// and checked once, on first use, so a binary that never asks pays nothing.
//
//go:embed data/*.json
var dataFS embed.FS

const (
	gpusFile   = "data/gpus.json"
	archsFile  = "data/archs.json"
	modelsFile = "data/models.json"
	linksFile  = "data/links.json"
)

// linkRecord is one node interconnect (Link), its times in microseconds.
type linkRecord struct {
	Name           string  `json:"name"`
	Description    string  `json:"description"`
	BusGBs         float64 `json:"bus_gbs"`
	LatencyUS      float64 `json:"latency_us"`
	EagerLatencyUS float64 `json:"eager_latency_us"`
	EagerBusGBs    float64 `json:"eager_bus_gbs"`
	Source         string  `json:"source"`
}

// link is the record as the model uses it.
func (r linkRecord) link() Link {
	us := func(v float64) time.Duration { return time.Duration(v * float64(time.Microsecond)) }
	return Link{Name: r.Description, BusGBs: r.BusGBs, Latency: us(r.LatencyUS),
		EagerLatency: us(r.EagerLatencyUS), EagerBusGBs: r.EagerBusGBs}
}

func checkLink(r linkRecord, known map[string]Link) error {
	if err := missing(str("name", r.Name)); err != nil {
		return err
	}
	if err := missing(str("description", r.Description), num("bus_gbs", r.BusGBs), num("latency_us", r.LatencyUS),
		num("eager_latency_us", r.EagerLatencyUS), num("eager_bus_gbs", r.EagerBusGBs), str("source", r.Source)); err != nil {
		return fmt.Errorf("link %q: %w", r.Name, err)
	}
	if _, dup := known[r.Name]; dup {
		return fmt.Errorf("link %q: duplicate name", r.Name)
	}
	return nil
}

// archRecord is one GPU architecture: how much of its datasheet peaks
// vLLM's kernels reach and which kernels vLLM picks there.
type archRecord struct {
	Name   string `json:"name"`
	Family string `json:"family"`
	// MFU and Bandwidth are the fitted shares of GPU.TFLOPs and
	// GPU.BandwidthGBs; absent (0), the shared MFU and
	// BandwidthEfficiency. TestFidelity refits them from the training
	// figures and fails when a stored value strays by more than a grid step.
	MFU       float64 `json:"mfu"`
	Bandwidth float64 `json:"bandwidth"`
	Fitted    bool    `json:"fitted"`
	// FlashAttention is the FlashAttention version vLLM V1 runs there
	// (vllm/v1/attention/backends/fa_utils.py: 3 on Hopper, else 2); the
	// split-KV decode tiles (SplitKVMMAShare) are FlashAttention 2's.
	FlashAttention int `json:"flash_attention"`
	// FP8TensorCores: fp8 GEMMs run at FP8GEMMSpeedup over bf16 (Ada,
	// Hopper); elsewhere vLLM runs fp8 checkpoints weight-only, at the
	// bf16 rate.
	FP8TensorCores bool `json:"fp8_tensor_cores"`
	// MXFP4MoE is vLLM's MXFP4 expert backend there: "triton" (compute
	// capability 9.0-10.x) or "marlin" (padded experts, gptoss.go).
	MXFP4MoE string `json:"mxfp4_moe"`
	Note     string `json:"note"` // why the values are what they are
}

// datasheet is a GPU's vendor peaks, which its record's TFLOPs and
// BandwidthGBs must equal. NVIDIA lists tensor throughput with 2:4
// sparsity; dense is half of it.
type datasheet struct {
	DenseTFLOPs  float64 `json:"dense_tflops"` // dense bf16/fp16 tensor TFLOP/s with fp32 accumulate
	BandwidthGBs float64 `json:"bandwidth_gbs"`
	Source       string  `json:"source"`
}

// gpuRecord is one entry of data/gpus.json: the GPU and the provenance of
// its figures.
type gpuRecord struct {
	GPU
	Datasheet   *datasheet `json:"datasheet"`
	PowerSource string     `json:"power_source"`
	LoadSource  string     `json:"load_source"`
}

// modelRecord is one entry of data/models.json. CitedOnly marks an
// architecture that only the cited figures use: not a served profile.
type modelRecord struct {
	Model
	CitedOnly bool   `json:"cited_only"`
	Source    string `json:"source"` // where the shapes and parameter count come from
}

// facts is data/ parsed and checked.
type facts struct {
	gpus   []GPU // table order, smallest first
	archs  map[string]archRecord
	links  map[string]Link
	models []Model // served profiles, table order
	cited  []Model // architectures only the cited figures use
}

// loadFacts parses and checks the embedded data once.
var loadFacts = sync.OnceValues(func() (*facts, error) { return parseFacts(dataFS) })

// mustFacts is the embedded data; it panics on a broken file, which
// TestData keeps from ever shipping.
func mustFacts() *facts {
	f, err := loadFacts()
	if err != nil {
		panic(err)
	}
	return f
}

// archOfGPU is g's architecture record.
func archOfGPU(g GPU) archRecord { return mustFacts().archs[g.Arch] }

// parseFacts reads and checks the four files of fsys. Errors name the
// file, the record and the field.
func parseFacts(fsys fs.FS) (*facts, error) {
	var archs []archRecord
	var gpus []gpuRecord
	var models []modelRecord
	var links []linkRecord
	for _, f := range []struct {
		name string
		into any
	}{{archsFile, &archs}, {gpusFile, &gpus}, {modelsFile, &models}, {linksFile, &links}} {
		if err := decodeFile(fsys, f.name, f.into); err != nil {
			return nil, err
		}
	}
	out := &facts{archs: map[string]archRecord{}, links: map[string]Link{}}
	for i, l := range links {
		if err := checkLink(l, out.links); err != nil {
			return nil, fmt.Errorf("perf: %s: record %d: %w", linksFile, i+1, err)
		}
		out.links[l.Name] = l.link()
	}
	for i, a := range archs {
		if err := checkArch(a, out.archs); err != nil {
			return nil, fmt.Errorf("perf: %s: record %d: %w", archsFile, i+1, err)
		}
		out.archs[a.Name] = a
	}
	seen := map[string]bool{}
	for i, g := range gpus {
		if err := checkGPU(g, out, seen); err != nil {
			return nil, fmt.Errorf("perf: %s: record %d: %w", gpusFile, i+1, err)
		}
		out.gpus = append(out.gpus, g.GPU)
	}
	seen = map[string]bool{}
	for i, m := range models {
		if err := checkModel(m, seen); err != nil {
			return nil, fmt.Errorf("perf: %s: record %d: %w", modelsFile, i+1, err)
		}
		if m.CitedOnly {
			out.cited = append(out.cited, m.Model)
		} else {
			out.models = append(out.models, m.Model)
		}
	}
	return out, nil
}

// decodeFile decodes one JSON file strictly: an unknown field is an error.
func decodeFile(fsys fs.FS, name string, into any) error {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return fmt.Errorf("perf: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("perf: %s: %w", name, err)
	}
	return nil
}

// missing is an error naming the first field of fields that is not set.
func missing(fields ...field) error {
	for _, f := range fields {
		if !f.set {
			return fmt.Errorf("missing %q", f.name)
		}
	}
	return nil
}

type field struct {
	name string
	set  bool
}

func str(name, v string) field         { return field{name, strings.TrimSpace(v) != ""} }
func num(name string, v float64) field { return field{name, v > 0} }
func count(name string, v int) field   { return field{name, v > 0} }

func checkArch(a archRecord, known map[string]archRecord) error {
	if err := missing(str("name", a.Name), str("family", a.Family), str("note", a.Note), count("flash_attention", a.FlashAttention),
		str("mxfp4_moe", a.MXFP4MoE)); err != nil {
		return err
	}
	switch {
	case known[a.Name].Name != "":
		return fmt.Errorf("arch %q: duplicate name", a.Name)
	case a.MFU < 0 || a.MFU > 1:
		return fmt.Errorf("arch %q: \"mfu\" %g: expected a share in (0, 1]", a.Name, a.MFU)
	case a.Bandwidth < 0 || a.Bandwidth > 1:
		return fmt.Errorf("arch %q: \"bandwidth\" %g: expected a share in (0, 1]", a.Name, a.Bandwidth)
	case a.Fitted && a.MFU == 0 && a.Bandwidth == 0:
		return fmt.Errorf("arch %q: \"fitted\" without a fitted \"mfu\" or \"bandwidth\"", a.Name)
	case !a.Fitted && (a.MFU != 0 || a.Bandwidth != 0):
		return fmt.Errorf("arch %q: \"mfu\"/\"bandwidth\" given but not \"fitted\" (leave them out to take the shared defaults)", a.Name)
	case a.FlashAttention != 2 && a.FlashAttention != 3:
		return fmt.Errorf("arch %q: \"flash_attention\" %d: expected 2 or 3", a.Name, a.FlashAttention)
	case a.MXFP4MoE != "triton" && a.MXFP4MoE != "marlin":
		return fmt.Errorf("arch %q: \"mxfp4_moe\" %q: expected \"triton\" or \"marlin\"", a.Name, a.MXFP4MoE)
	}
	return nil
}

func checkGPU(r gpuRecord, known *facts, seen map[string]bool) error {
	g := r.GPU
	if err := missing(str("name", g.Name)); err != nil {
		return err
	}
	if err := missing(str("arch", g.Arch), str("device_name", g.DeviceName), num("memory_gib", g.MemoryGiB),
		num("bandwidth_gbs", g.BandwidthGBs), num("tflops", g.TFLOPs), num("load_gbs", g.LoadGBs),
		num("board_power_w", g.BoardPowerW), num("idle_power_w", g.IdlePowerW), str("interconnect", g.Interconnect),
		field{"datasheet", r.Datasheet != nil}, str("power_source", r.PowerSource), str("load_source", r.LoadSource)); err != nil {
		return fmt.Errorf("GPU %q: %w", g.Name, err)
	}
	d := r.Datasheet
	if err := missing(num("datasheet.dense_tflops", d.DenseTFLOPs), num("datasheet.bandwidth_gbs", d.BandwidthGBs),
		str("datasheet.source", d.Source)); err != nil {
		return fmt.Errorf("GPU %q: %w", g.Name, err)
	}
	key := strings.ToLower(g.Name)
	switch {
	case seen[key]:
		return fmt.Errorf("GPU %q: duplicate name", g.Name)
	case known.archs[g.Arch].Name == "":
		return fmt.Errorf("GPU %q: \"arch\" %q: unknown architecture (%s has no record of it)", g.Name, g.Arch, archsFile)
	case known.links[g.Interconnect].Name == "":
		return fmt.Errorf("GPU %q: \"interconnect\" %q: unknown (%s has no record of it)", g.Name, g.Interconnect, linksFile)
	case g.TFLOPs != d.DenseTFLOPs:
		return fmt.Errorf("GPU %q: \"tflops\" %g differs from its datasheet's dense_tflops %g", g.Name, g.TFLOPs, d.DenseTFLOPs)
	case g.BandwidthGBs != d.BandwidthGBs:
		return fmt.Errorf("GPU %q: \"bandwidth_gbs\" %g differs from its datasheet's bandwidth_gbs %g", g.Name, g.BandwidthGBs, d.BandwidthGBs)
	case g.IdlePowerW >= g.BoardPowerW:
		return fmt.Errorf("GPU %q: \"idle_power_w\" %g is not below \"board_power_w\" %g", g.Name, g.IdlePowerW, g.BoardPowerW)
	}
	seen[key] = true
	return nil
}

func checkModel(r modelRecord, seen map[string]bool) error {
	m := r.Model
	if err := missing(str("name", m.Name)); err != nil {
		return err
	}
	if err := missing(str("served_name", m.ServedName), num("params_b", m.ParamsB), num("bytes_per_weight", m.BytesPerWeight),
		count("num_hidden_layers", m.Layers), count("hidden_size", m.Hidden), count("intermediate_size", m.Intermediate),
		count("num_attention_heads", m.Heads), count("num_key_value_heads", m.KVHeads), count("head_dim", m.HeadDim),
		count("vocab_size", m.Vocab), count("max_position_embeddings", m.MaxContext), str("source", r.Source)); err != nil {
		return fmt.Errorf("model %q: %w", m.Name, err)
	}
	moe := m.Experts > 0 || m.ExpertsPerToken > 0 || m.MoEIntermediate > 0
	switch {
	case seen[strings.ToLower(m.Name)]:
		return fmt.Errorf("model %q: duplicate name", m.Name)
	case seen[strings.ToLower(m.ServedName)]:
		return fmt.Errorf("model %q: \"served_name\" %q: duplicate name", m.Name, m.ServedName)
	case moe && (m.Experts == 0 || m.ExpertsPerToken == 0 || m.MoEIntermediate == 0 || m.ExpertsPerToken > m.Experts):
		return fmt.Errorf("model %q: a mixture of experts needs num_experts, num_experts_per_tok (at most num_experts) and moe_intermediate_size", m.Name)
	case m.Quantization == "awq_marlin" && m.BytesPerWeight != awqBytesPerWeight:
		return fmt.Errorf("model %q: \"bytes_per_weight\" %g: AWQ int4 with group size 128 is %g", m.Name, m.BytesPerWeight, awqBytesPerWeight)
	case m.Heads%m.KVHeads != 0:
		return fmt.Errorf("model %q: \"num_key_value_heads\" %d does not divide num_attention_heads %d", m.Name, m.KVHeads, m.Heads)
	case m.SlidingLayers > m.Layers || (m.SlidingLayers > 0) != (m.SlidingWindow > 0):
		return fmt.Errorf("model %q: \"sliding_layers\" %d needs a sliding_window and at most num_hidden_layers", m.Name, m.SlidingLayers)
	}
	seen[strings.ToLower(m.Name)], seen[strings.ToLower(m.ServedName)] = true, true
	return nil
}
