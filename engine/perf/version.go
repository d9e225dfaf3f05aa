package perf

// The vLLM release a configuration emulates (Config.VLLMVersion) changes
// how the engine loop's CPU work meets the GPU's; each boundary here is a
// release that changed it, and the fidelity table replays every figure at
// the release it states (CitedFigure.perf, statedVersion), the seed's
// behaviour where it states none.
//
//   - 0.8.0: V1 by default (vllm-project/vllm#13726, the v0.8.0 release
//     notes). Before it, the V0 engine paid V0SeqOverhead per decoding
//     sequence each step; V1's persistent batch does not.
//   - 0.14.0: async scheduling on by default (vllm-project/vllm#27614;
//     the v0.14.0 release notes: "Async scheduling is now enabled by
//     default", "Overlaps engine core scheduling with GPU execution";
//     --no-async-scheduling turns it off). The scheduler works one step
//     ahead of the model runner (vllm-project/vllm#19970, which added it
//     behind --async-scheduling in 2025-06: an "output placeholder" for
//     tokens scheduled but not yet sampled; the executor keeps two batches
//     in flight, UniProcExecutor.max_concurrent_batches = 2), so the next
//     step's scheduling, input preparation and the last step's output
//     processing run while the GPU computes: StepOverhead is no longer
//     paid between steps, only when it outlasts the GPU's step. Before it
//     (the seed's V1 and every release the table has below 0.14), the GPU
//     waits for that work each step.
//
// Not modelled, as no row shows it apart: 0.6.0's async output
// processing and opt-in multi-step scheduling (the same perf-update post),
// 0.11.0's FULL_AND_PIECEWISE CUDA graphs by default (its release notes),
// Model Runner V2 by default for dense models in 0.25.0 (#44443).
//
// What the rows say (go test ./engine/perf -run Fidelity -v): at batch 1
// the releases past 0.14 sit 2.7-4.6% above the model with StepOverhead
// hidden (A100 40GB: Qwen2.5-7B on 0.20.1, Llama-3.1-8B on 0.23.0; H100:
// Llama-3.1-8B on 0.21.0), where paying it put them 9-12% above. The one
// batch-1 row of a release between 0.8 and 0.14 (vLLM 0.11.0, the seed's
// model on a second RTX 3060) sits 11% below the model already, so the
// rows place that boundary after 0.11. Before 0.8, Argonne's V0 batch
// runs of Llama-3-8B sat 1-18% below the model past batch 1, most on the
// H100, whose GPU work is the shorter; with V0SeqOverhead they are within
// 10% on both GPUs (the H100's batch-64 run at 128 tokens, +9.6%).

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// vllmVersion is a vLLM release as major, minor and patch numbers.
type vllmVersion struct{ major, minor, patch int }

// parseVLLMVersion reads "MAJOR.MINOR[.PATCH]" with an optional leading
// "v" and ignores anything after the patch (".post1", "rc2", "+cu129").
func parseVLLMVersion(s string) (vllmVersion, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	parts := strings.SplitN(t, ".", 3)
	if len(parts) < 2 {
		return vllmVersion{}, fmt.Errorf("perf: --vllm-version %q: expected a vLLM release MAJOR.MINOR[.PATCH], e.g. 0.20.1", s)
	}
	var n [3]int
	for i, part := range parts {
		end := 0
		for end < len(part) && part[end] >= '0' && part[end] <= '9' {
			end++
		}
		if end == 0 || (i < 2 && end != len(part)) {
			return vllmVersion{}, fmt.Errorf("perf: --vllm-version %q: expected a vLLM release MAJOR.MINOR[.PATCH], e.g. 0.20.1", s)
		}
		n[i], _ = strconv.Atoi(part[:end])
	}
	return vllmVersion{n[0], n[1], n[2]}, nil
}

// atLeast reports whether v is release major.minor.patch or later.
func (v vllmVersion) atLeast(major, minor, patch int) bool {
	if v.major != major {
		return v.major > major
	}
	if v.minor != minor {
		return v.minor > minor
	}
	return v.patch >= patch
}

// stepLoop is what the emulated release's engine loop does beside the GPU.
type stepLoop struct {
	// asyncScheduling: the scheduler runs one step ahead of the GPU, so a
	// step's CPU work (StepOverhead) overlaps the previous step's GPU work.
	asyncScheduling bool
	// v0Seq is what each decoding sequence adds to a step in V0
	// (V0SeqOverhead), 0 from V1 on; a field so that fitV0SeqOverhead can
	// try other values.
	v0Seq time.Duration
}

// stepLoopOf is the step loop of vLLM release s ("" is the seed's).
func stepLoopOf(s string) (stepLoop, error) {
	if s == "" {
		return stepLoop{}, nil
	}
	v, err := parseVLLMVersion(s)
	if err != nil {
		return stepLoop{}, err
	}
	loop := stepLoop{asyncScheduling: v.atLeast(0, 14, 0)}
	if !v.atLeast(0, 8, 0) {
		loop.v0Seq = V0SeqOverhead
	}
	return loop, nil
}

// statedVersion is the release a figure's VLLM field opens with ("0.20.1",
// "0.15.1 (vllm/vllm-openai:latest, ...)"), or "" where it states none.
func statedVersion(s string) string {
	first, _, _ := strings.Cut(s, " ")
	if _, err := parseVLLMVersion(first); err != nil {
		return ""
	}
	return first
}

// seqOverhead is what decodeSeqs decoding sequences add to a step's CPU
// work (V0SeqOverhead each, before V1).
func (l stepLoop) seqOverhead(decodeSeqs int) time.Duration {
	return time.Duration(decodeSeqs) * l.v0Seq
}

// overlap is b as the release's loop meets the GPU: under async
// scheduling this step's StepOverhead ran beside the GPU's previous step,
// so the step takes only what it outlasts the GPU's work. The hidden part
// comes off Overhead and Total alike, so the parts still add up.
func (l stepLoop) overlap(b Breakdown) Breakdown {
	if !l.asyncScheduling {
		return b
	}
	hidden := min(StepOverhead, b.Total-StepOverhead)
	b.Overhead -= hidden
	b.Total -= hidden
	return b
}

// V0SeqOverhead is what each decoding sequence adds to a step of vLLM's V0
// engine (every release before 0.8.0, which made V1 the default:
// vllm-project/vllm#13726): CPU work per sequence on the step's critical
// path, paid before the GPU can start the next step. vLLM's own profile
// of V0 (blog.vllm.ai/2024/09/05/perf-update.html, Llama 3 8B on one
// H100) puts 29% of the run in scheduling, which it defines as gathering
// the last step's results, scheduling the next step and preparing its
// inputs, beside 33% in the HTTP server; V0 rebuilt those inputs from
// per-sequence Python objects each step, where V1's model runner keeps
// them in a persistent batch that a step updates with what changed
// (vllm/v1/worker/gpu_input_batch.py's InputBatch). The seed's V1 and
// later releases pay none.
//
// Fitted (fitV0SeqOverhead; TestFidelity's "FIT v0-seq-overhead" line)
// to one figure, Argonne's A100 40GB batch of 32 Llama-3-8B prompts of
// 128 tokens answered with 128 (data/figures/argonne-llm-inference-bench.csv), whose batch-1 siblings
// the model meets within 1.5% with no V0 term, so what its steps add over
// them beyond DecodeGEMMShare is per sequence; DecodeGEMMShare is fitted
// with it in place. Held out against it: the same files' other batch
// runs on the A100 and the H100, and vLLM 0.6.0's batch-10 and tensor
// parallel decode rows (data/figures/lambdalabs-vllm-benchmark.csv).
// The same per-sequence cost on both GPUs is a host cost: the H100's
// faster GPU work makes it a larger share of its steps, as its rows show.
const V0SeqOverhead = 54 * time.Microsecond
