package perf

import "fmt"

// Cited figures for the kinds issue 21 still lacked per profile: a dense
// model's batch-1 decode on one H200 (and its larger batches up to 512, with
// the H100 twin from the same runs).
//
// H200 and H100 (pacesource): a graduate course's hands-on lab pages
// (github.com/hungchun0201/agentic-ai-survey, ai-infra-basics/hands-on/,
// "real GPU experiment data" added in c2d11c0, 2026-04-12), run on Georgia
// Tech's PACE Phoenix cluster. Week 2's "Latency vs Batch Size (in=512,
// out=128)" table is vLLM's benchmark_latency (offline LLM.generate, the
// page's step 3: `benchmark_latency.py --model
// meta-llama/Llama-3.1-8B-Instruct --input-len 512 --output-len 128
// --batch-size B`), Llama-3.1-8B-Instruct in bf16, --max-model-len 4096,
// on one "NVIDIA H200 141GB HBM3e" and one "NVIDIA H100 80GB HBM3". The
// page's text reads the batch-1 rows as 5.86 and 7.06 ms a token, i.e.
// the latency over the 128 output tokens. The vLLM the labs ran is not
// pinned: the setup page tells students to `pip install vllm==0.6.3`,
// but every results page reads its code from "vllm-continuum", the
// cluster's vLLM fork (week 0: torch 2.8.0, transformers < 5; the code
// excerpts are V1's vllm/v1/worker/gpu_model_runner.py), so the rows say
// "not stated" and the model keeps its V1 defaults.
//
// How the model prices a row: benchmark_latency repeats the same dummy
// prompts every iteration, and V1 keeps prefix caching on by default, so
// after the warm-up iterations every prompt is found in the prefix cache
// and its prefill step computes one token per sequence. The same labs show
// it: week 3's "prefill" sweep (batch 1, output 1) takes 12.14 ms for
// 4,096 tokens on the H200, which would need ~5.4 PFLOP/s for the 66
// TFLOP of a real prefill, over five times the GPU's 989 dense; those
// rows are not used. So a row is one step of B one-token prefills at 511
// cached tokens, then 127 decode steps of B sequences at context 513 to
// 639 (pacesLatency). Uncached, the prefill would add 0.8% at batch 1 and
// 4.6% at batch 32 on the H200.
//
// Week 3's "Decode Batch Sweep (real, in=128, out=64)" is the same
// benchmark_latency at batch 1 to 512, printed as ms a token: the latency
// over the 64 output tokens, as week 2's text reads its own table (750.6
// ms / 128 = 5.86). Its batch 1, 64, 128, 256 and 512 rows are read
// (pacesSweepFigures; 4 and 16 repeat week 2's). At 512 the prompts' 65k
// tokens, uncached, would take longer than the whole row's 1.9 s, so
// those too were prefix-cached. What they show (go test ./engine/perf
// -run Fidelity -v): within 7% up to batch 64, then the model's step
// grows too fast, +12% to +20% at 128 to 512 on both GPUs, at a context
// of ~160 tokens where KV reads are a few percent of the step: the
// decode GEMMs' FLOP time at large batches (DecodeGEMMShare, fitted to
// batch-64 rows, and the architecture's MFU), not the weights' reads.
//
// Not used from the same pages: the A100 rows (an A100 80GB PCIe, 1.935
// TB/s, which has no profile; the a100-80gb profile is the SXM part) and
// the L40S (no profile); week 3's "prefill" sweep (prefix-cached, above);
// week 13's tensor-parallel rows (Llama-3.1-70B at TP 2 on two H200s:
// per-token latency only, its input and output lengths not stated for
// that table).
const (
	pacesCommit = "c2d11c026caa815574326701a9a29b9fb508fbed"
	pacesSource = "github.com/hungchun0201/agentic-ai-survey @" + pacesCommit + " ai-infra-basics/hands-on/week-02.html " +
		"(\"Latency vs Batch Size (in=512, out=128)\" table, benchmark_latency.py; row \"%s (ms)\", bs=%d: %s)"
	pacesVLLM = "not stated (vllm-continuum, the cluster's vLLM fork: V1 engine, torch 2.8.0; the setup page pins 0.6.3)"
	// pacesInput and pacesOutput are the table's in and out.
	pacesInput, pacesOutput = 512, 128
)

// pacesLatencyAt is one benchmark_latency iteration, in ms, of batch
// prompts of input tokens whose tokens, all but the last, are in the
// prefix cache: one step of batch one-token prefills, then the decode
// steps of the rest of the output tokens.
func pacesLatencyAt(batch, input, output int) func(*Perf) float64 {
	return func(p *Perf) float64 {
		var s Step
		for range batch {
			s.AddPrefill(1, input-1)
		}
		return millis(p.StepTime(s) + decodeAfter(p, batch, input, output))
	}
}

func pacesFigures() []CitedFigure {
	rows := []struct {
		gpu, label, measured string
		batch                int
		latency              string // as printed, ms
	}{
		{"h200-141gb", "H200", "NVIDIA H200 141GB HBM3e", 1, "750.6"},
		{"h200-141gb", "H200", "NVIDIA H200 141GB HBM3e", 4, "776.8"},
		{"h200-141gb", "H200", "NVIDIA H200 141GB HBM3e", 16, "838.4"},
		{"h200-141gb", "H200", "NVIDIA H200 141GB HBM3e", 32, "1012.1"},
		{"h100-80gb", "H100", "NVIDIA H100 80GB HBM3", 1, "903.4"},
		{"h100-80gb", "H100", "NVIDIA H100 80GB HBM3", 16, "1016.5"},
		{"h100-80gb", "H100", "NVIDIA H100 80GB HBM3", 32, "1176.7"},
	}
	figs := make([]CitedFigure, 0, len(rows))
	for _, r := range rows {
		figs = append(figs, CitedFigure{
			GPU: r.gpu, Model: "llama-3.1-8b-instruct", Quantity: fitQuantityDecode,
			Config: fmt.Sprintf("benchmark_latency,batch=%d,input=%d(prefix-cached),output=%d,mean-E2E", r.batch,
				pacesInput, pacesOutput),
			Real: argonneSeconds(r.latency), Unit: "ms",
			Source:   fmt.Sprintf(pacesSource, r.label, r.batch, r.latency),
			VLLM:     pacesVLLM,
			Measured: "meta-llama/Llama-3.1-8B-Instruct bf16, 1x " + r.measured + " (PACE Phoenix), --max-model-len 4096",
			HeldOut:  true,
			Cfg:      Config{MaxModelLen: 4096, GPUMemoryUtilization: 0.9},
			Eval:     pacesLatencyAt(r.batch, pacesInput, pacesOutput),
		})
	}
	return figs
}

// pacesSweepSource is week 3's table at the commit of week 2's.
const pacesSweepSource = "github.com/hungchun0201/agentic-ai-survey @" + pacesCommit + " ai-infra-basics/hands-on/week-03.html " +
	"(\"Decode Batch Sweep (real, in=128, out=64)\" table, benchmark_latency; row \"%s ms/tok\", bs=%d: %s)"

// pacesSweepFigures are week 3's per-token rows: the model's value is its
// benchmark_latency iteration (pacesLatencyAt) over the 64 tokens out.
func pacesSweepFigures() []CitedFigure {
	const input, output = 128, 64
	rows := []struct {
		gpu, label, measured string
		batch                int
		msPerToken           string
	}{
		{"h200-141gb", "H200", "NVIDIA H200 141GB HBM3e", 1, "5.78"},
		{"h200-141gb", "H200", "NVIDIA H200 141GB HBM3e", 64, "8.37"},
		{"h200-141gb", "H200", "NVIDIA H200 141GB HBM3e", 128, "10.91"},
		{"h200-141gb", "H200", "NVIDIA H200 141GB HBM3e", 256, "16.47"},
		{"h200-141gb", "H200", "NVIDIA H200 141GB HBM3e", 512, "29.39"},
		{"h100-80gb", "H100", "NVIDIA H100 80GB HBM3", 1, "7.06"},
		{"h100-80gb", "H100", "NVIDIA H100 80GB HBM3", 64, "9.81"},
		{"h100-80gb", "H100", "NVIDIA H100 80GB HBM3", 128, "12.42"},
		{"h100-80gb", "H100", "NVIDIA H100 80GB HBM3", 256, "17.87"},
		{"h100-80gb", "H100", "NVIDIA H100 80GB HBM3", 512, "30.81"},
	}
	figs := make([]CitedFigure, 0, len(rows))
	for _, r := range rows {
		iteration := pacesLatencyAt(r.batch, input, output)
		figs = append(figs, CitedFigure{
			GPU: r.gpu, Model: "llama-3.1-8b-instruct", Quantity: fitQuantityDecode,
			Config: fmt.Sprintf("benchmark_latency,batch=%d,input=%d(prefix-cached),output=%d,mean-E2E/%d", r.batch, input,
				output, output),
			Real: argonneSeconds(r.msPerToken), Unit: "ms",
			Source:   fmt.Sprintf(pacesSweepSource, r.label, r.batch, r.msPerToken),
			VLLM:     pacesVLLM,
			Measured: "meta-llama/Llama-3.1-8B-Instruct bf16, 1x " + r.measured + " (PACE Phoenix)",
			HeldOut:  true,
			Cfg:      Config{MaxModelLen: 4096, GPUMemoryUtilization: 0.9},
			Eval:     func(p *Perf) float64 { return iteration(p) / output },
		})
	}
	return figs
}

// figsFigures are this file's rows.
func figsFigures() []CitedFigure {
	return append(pacesFigures(), pacesSweepFigures()...)
}
