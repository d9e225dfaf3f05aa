package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/probe"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

func TestProbeUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"probe"}, "expected one probe name"},
		{[]string{"probe", "nope", "--base-url", "http://127.0.0.1:1"}, `probe "nope"`},
		{[]string{"probe", "cancel", "--base-url", "http://127.0.0.1:1", "--format", "xml"}, `--format "xml"`},
		{[]string{"probe", "cancel", "--base-url", "http://127.0.0.1:1", "--after", "0"}, "--after 0"},
		{[]string{"probe", "cancel", "--base-url", "http://127.0.0.1:1", "--after", "64", "--max-tokens", "32"}, "--after 64"},
		{[]string{"probe", "cancel", "--base-url", "ftp://x"}, "--base-url"},
		{[]string{"probe", "cancel", "--base-url", "http://127.0.0.1:1", "--speedup", "10"}, "only for the bundled engine"},
		{[]string{"probe", "cancel", "--base-url", "http://127.0.0.1:1", "--watch", "0s"}, "--watch 0s"},
		{[]string{"probe", "cancel", "--after", "x"}, `"x"`},
	} {
		code, _, stderr := runMain(tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestProbeUnreachable(t *testing.T) {
	// Nothing listens on loopback port 1.
	code, _, stderr := runMain("probe", "limits", "--base-url", "http://127.0.0.1:1")
	if code != exitInvalidRun || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("exit %d, stderr %q; want exit 3 naming the server", code, stderr)
	}
}

func TestProbeCommand(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.IgnoreDisconnect = true })
	code, stdout, stderr := runMain("probe", "cancel", "--base-url", e.BaseURL(), "--settle", "200ms", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q; want 0 (a verdict is output, not an exit status)", code, stderr)
	}
	var rs []probe.Result
	if err := json.Unmarshal([]byte(stdout), &rs); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if len(rs) != 1 || rs[0].Verdict != probe.Fail || !strings.HasPrefix(rs[0].Summary, "keeps generating, 496 tokens wasted") {
		t.Errorf("results %+v; want one cancel result: fail, keeps generating, 496 tokens wasted", rs)
	}

	code, stdout, stderr = runMain("probe", "limits", "--base-url", e.BaseURL())
	if code != exitOK || !strings.Contains(stdout, "probe limits: PASS: rejected with 400") {
		t.Errorf("limits: exit %d, stdout %q, stderr %q; want 0 and a PASS line", code, stdout, stderr)
	}
}
