package sim

import (
	"strings"
	"testing"
	"time"
)

// TestFaultNamesMatchKinds: the help text's list and the parsing table name
// the same faults.
func TestFaultNamesMatchKinds(t *testing.T) {
	listed := map[string]bool{}
	for _, n := range FaultNames {
		name, _, _ := strings.Cut(n, "=")
		name, _, _ = strings.Cut(name, "[")
		listed[name] = true
		if faultKinds[name] == nil {
			t.Errorf("FaultNames lists %q, which parseFaults does not know", n)
		}
	}
	for name := range faultKinds {
		if !listed[name] {
			t.Errorf("parseFaults knows %q, which FaultNames (the --fault help) leaves out", name)
		}
	}
}

// TestParseFaultsSetsEachField: each fault value lands in its own field and
// leaves the others at their off values.
func TestParseFaultsSetsEachField(t *testing.T) {
	cases := []struct {
		spec string
		want func(*faults)
	}{
		{"never-ready", func(f *faults) { f.neverReady = true }},
		{"exit-during-load", func(f *faults) { f.exitDuringLoad = true }},
		{"metrics-unavailable", func(f *faults) { f.metricsUnavailable = true }},
		{"metrics-reset", func(f *faults) { f.metricsResetAfter = 1 }},
		{"metrics-reset=7", func(f *faults) { f.metricsResetAfter = 7 }},
		{"crash-after=3", func(f *faults) { f.crashAfter = 3 }},
		{"close-connection-every=5", func(f *faults) { f.closeEvery = 5 }},
		{"buffer-stream=4", func(f *faults) { f.bufferEvery = 4 }},
		{"mid-stream-error-after=0", func(f *faults) { f.midStreamErrorAfter = 0 }},
		{"drop-connection-after=6", func(f *faults) { f.dropAfter = 6 }},
		{"malformed-event-after=2", func(f *faults) { f.malformedAfter = 2 }},
		{"http-error=0.25:503", func(f *faults) { f.httpErrorRate, f.httpErrorStatus = 0.25, 503 }},
		{"stall-after=10:5s", func(f *faults) { f.stallAfter, f.stallFor = 10, 5*time.Second }},
	}
	for _, c := range cases {
		got, err := parseFaults([]string{c.spec}, 1)
		if err != nil {
			t.Errorf("%s: %v", c.spec, err)
			continue
		}
		want := &faults{midStreamErrorAfter: -1, dropAfter: -1, stallAfter: -1, malformedAfter: -1} // all off
		c.want(want)
		if g, w := settings(got), settings(want); g != w {
			t.Errorf("%s: parsed %+v, want %+v", c.spec, g, w)
		}
	}
}

// faultSettings is faults without its counters, lock and generator, to
// compare with ==.
type faultSettings struct {
	neverReady, exitDuringLoad, metricsUnavailable                    bool
	crashAfter, httpErrorStatus, midStreamErrorAfter, dropAfter       int
	stallAfter, malformedAfter, bufferEvery, metricsResetAfter, close int
	httpErrorRate                                                     float64
	stallFor                                                          time.Duration
}

func settings(f *faults) faultSettings {
	return faultSettings{f.neverReady, f.exitDuringLoad, f.metricsUnavailable,
		f.crashAfter, f.httpErrorStatus, f.midStreamErrorAfter, f.dropAfter,
		f.stallAfter, f.malformedAfter, f.bufferEvery, f.metricsResetAfter, f.closeEvery,
		f.httpErrorRate, f.stallFor}
}
