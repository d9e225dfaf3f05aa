package perf

// The vLLM release a configuration emulates (Config.VLLMVersion) changes
// how the engine loop's CPU work meets the GPU's; each boundary here is a
// release that changed it, and the fidelity table replays every figure at
// the release it states (CitedFigure.perf, statedVersion), the seed's
// behaviour where it states none.
//
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
// What the rows say (go test ./engine/perf -run Fidelity -v): at batch 1
// the releases past the boundary sit 3-5% above the model with
// StepOverhead hidden (A100 40GB: Qwen2.5-7B on 0.20.1, Llama-3.1-8B on
// 0.23.0; H100: Llama-3.1-8B on 0.21.0), where paying it put them 9-12%
// above. The one batch-1 row of a release between 0.8 and 0.14 (vLLM
// 0.11.0, the seed's model on a second RTX 3060) sits 11% below the
// model already, as the seed's own decode does not, so the rows place the
// boundary after 0.11 and no earlier row asks for it.

import (
	"fmt"
	"strconv"
	"strings"
)

// vllmVersion is a vLLM release as major, minor and patch numbers.
type vllmVersion struct{ major, minor, patch int }

// parseVLLMVersion reads "MAJOR.MINOR[.PATCH]" with an optional leading
// "v" and ignores anything after the patch (".post1", "rc2", "+cu129").
func parseVLLMVersion(s string) (vllmVersion, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	parts := strings.SplitN(t, ".", 3)
	if len(parts) < 2 {
		return vllmVersion{}, fmt.Errorf("perf: vLLM version %q: expected MAJOR.MINOR[.PATCH], e.g. 0.20.1", s)
	}
	var n [3]int
	for i, part := range parts {
		end := 0
		for end < len(part) && part[end] >= '0' && part[end] <= '9' {
			end++
		}
		if end == 0 || (i < 2 && end != len(part)) {
			return vllmVersion{}, fmt.Errorf("perf: vLLM version %q: expected MAJOR.MINOR[.PATCH], e.g. 0.20.1", s)
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
	return stepLoop{asyncScheduling: v.atLeast(0, 14, 0)}, nil
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
