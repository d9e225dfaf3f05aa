package workload

import (
	"testing"

	"github.com/servebench/servebench/engine/perf"
)

// TestDefaultPromptCalibrated: the bundled engine's default profile is
// calibrated (engine/perf TestCalibration) for the table's requests as
// servebench sends them, so the prompt it tokenizes must be DefaultPrompt.
func TestDefaultPromptCalibrated(t *testing.T) {
	if DefaultPrompt != perf.CalibrationPrompt {
		t.Errorf("bench.DefaultPrompt %q differs from perf.CalibrationPrompt %q: change both and recalibrate engine/perf",
			DefaultPrompt, perf.CalibrationPrompt)
	}
}
