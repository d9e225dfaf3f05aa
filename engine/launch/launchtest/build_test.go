package launchtest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestServebench: the path is the same on every call (one build) and is a
// working servebench binary.
func TestServebench(t *testing.T) {
	defer Cleanup()
	a := Servebench(t)
	if b := Servebench(t); b != a {
		t.Fatalf("second call built again: %s, then %s", a, b)
	}
	out, err := exec.Command(a, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "servebench") {
		t.Fatalf("%s --help: %v\n%s", a, err, out)
	}
}
