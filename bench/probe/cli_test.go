package probe_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestProbeCLIBundled is issue 7's "done means" for the probes, through
// the real CLI: `servebench probe` starts the bundled engine as a child
// process (with the engine flags given) and prints the verdict.
func TestProbeCLIBundled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds servebench and starts the engine per case")
	}
	bin := servebench(t)
	for _, tc := range []struct {
		name string
		args []string
		want string // the verdict line's start
	}{
		{"cancel default", []string{"cancel"}, "probe cancel: PASS: stops generating"},
		{"cancel ignore-disconnect", []string{"cancel", "--engine-arg=--ignore-disconnect"}, "probe cancel: FAIL: keeps generating, 496 tokens wasted"},
		// 7.5 ms per token, so that a busy machine's stalls do not look like buffering.
		{"buffering plain", []string{"buffering", "--speedup", "2", "--max-tokens", "64"}, "probe buffering: PASS: streams token by token"},
		{"buffering buffer-stream=32", []string{"buffering", "--speedup", "2", "--max-tokens", "64", "--engine-arg=--fault=buffer-stream=32"}, "probe buffering: FAIL: buffered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"probe", "--engine-arg=--startup-speedup=1000", "--settle", "300ms"}, tc.args...)
			if tc.args[0] == "cancel" {
				args = append(args, "--speedup", "10")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) || err != nil {
				t.Fatalf("servebench %v: %v\nstderr: %s", args, err, stderr.String())
			}
			out := stdout.String()
			t.Logf("servebench %s\n%s", strings.Join(args, " "), out)
			verdict := strings.SplitN(out, "\n", 2)[0]
			if strings.Contains(verdict, "INCONCLUSIVE") && strings.Contains(verdict, "own process stalling") {
				t.Skipf("machine too busy to judge: %s", verdict)
			}
			if !strings.HasPrefix(verdict, tc.want) {
				t.Errorf("verdict line %q, want it to start %q", verdict, tc.want)
			}
		})
	}
}
