package bench

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/workload"
)

// TestValidateIsPure: Validate changes nothing in what it checks (a run,
// its workload, a search) and judges a value as its completed copy
// (WithDefaults): the same verdict either way, and WithDefaults fills what
// Validate leaves.
func TestValidateIsPure(t *testing.T) {
	fixed, _ := workload.FixedPrompt("hello")
	slo, _ := result.ParseSLO("e2e=1s")
	req := RequestSpec{MaxTokens: 4}
	specs := []RunSpec{
		{Name: "mode left to its default", Workload: workload.Workload{Requests: 1}, Request: req},
		{Name: "rate without arrival or workers", Workload: workload.Workload{Mode: workload.ModeRate, Rate: 2, Requests: 1}, Request: req, Prompts: fixed},
		{Name: "sharded sequential", Workload: workload.Workload{Mode: workload.ModeSequential, Requests: 4}, Request: req, Shard: Shard{Index: 0, Count: 2}},
		{Name: "trace without a trace", Workload: workload.Workload{Mode: workload.ModeTrace}, Request: req, Prompts: fixed},
		{Name: "bad endpoint", Workload: workload.Workload{Requests: 1}, Request: RequestSpec{Endpoint: "nope", MaxTokens: 1}},
	}
	for _, spec := range specs {
		before := spec
		err := spec.Validate()
		if spec.Shard.Count > 0 && (err == nil || !strings.Contains(err.Error(), "concurrency 1")) {
			t.Errorf("%s: Validate %v, want the sequential run's one worker split over 2 shards refused", spec.Name, err)
		}
		if !reflect.DeepEqual(spec, before) {
			t.Errorf("%s: Validate changed the spec:\n got %+v\nwant %+v", spec.Name, spec, before)
		}
		done := spec.WithDefaults()
		if fmt.Sprint(err) != fmt.Sprint(done.Validate()) {
			t.Errorf("%s: Validate %v, completed %v", spec.Name, err, done.Validate())
		}
		if done.Request.Endpoint == "" || done.Source == nil || done.Workload.Mode == "" || !reflect.DeepEqual(done.WithDefaults(), done) {
			t.Errorf("%s: WithDefaults left defaults out, or completing again changed more: %+v", spec.Name, done)
		}
	}
	m := MaxRateSearch{Target: 90, Base: RunSpec{Request: req, Prompts: fixed, SLO: slo}}
	before := m
	if err := m.Validate(); err != nil || !reflect.DeepEqual(m, before) {
		t.Errorf("search Validate %v changed it: %+v", err, m)
	}
	if d := m.WithDefaults(); d.Start != DefaultMaxRateStart || d.MaxSteps != DefaultMaxRateSteps || d.Precision != DefaultMaxRatePrecision || d.Base.Source == nil {
		t.Errorf("search WithDefaults = %+v", d)
	}
}
