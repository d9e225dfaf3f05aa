package bench

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine/option"
)

func TestValidateResults(t *testing.T) {
	res := &result.Results{Runs: []result.Run{{Name: "a", Requests: 10, OK: 8, Errors: map[string]int{"http_status": 2}}}}
	if err := validate(res, nil, -1); err != nil {
		t.Errorf("no limit: %v", err)
	}
	if err := validate(res, nil, 20); err != nil {
		t.Errorf("20%% failed with a 20%% limit: %v", err)
	}
	if err := validate(res, nil, 10); !errors.Is(err, ErrInvalidRun) || !strings.Contains(err.Error(), "2 of 10") {
		t.Errorf("over the limit: %v", err)
	}
	res.Runs[0].OK = 0
	if err := validate(res, nil, -1); !errors.Is(err, ErrInvalidRun) || !strings.Contains(err.Error(), "every request failed") {
		t.Errorf("all failed: %v", err)
	}
}

// TestValidateSaysWhy: when every request failed, the error gives the
// commonest error text (the server's reason) and the classes without a Go map.
func TestValidateSaysWhy(t *testing.T) {
	res := &result.Results{Runs: []result.Run{{Name: "a", Requests: 3, Errors: map[string]int{"http_status": 2, "timeout": 1}}}}
	recs := []result.Record{
		{Run: "a", Error: "http_status", ErrorText: "HTTP 404: model `nope` does not exist"},
		{Run: "a", Error: "timeout"},
		{Run: "a", Error: "http_status", ErrorText: "HTTP 404: model `nope` does not exist"},
		{Run: "b", Error: "http_status", ErrorText: "other run"},
	}
	fails := map[string]*store.Failures{"a": {}, "b": {}}
	for i := range recs {
		fails[recs[i].Run].Add(&recs[i])
	}
	// As Runner keeps them: each run's commonest error under its name.
	err := validate(res, map[string]string{"a": fails["a"].Commonest(), "b": fails["b"].Commonest()}, -1)
	if err == nil {
		t.Fatal("every request failed, yet valid")
	}
	msg := err.Error()
	for _, want := range []string{"every request failed (3 of 3; http_status: 2, timeout: 1)", "http_status: HTTP 404: model `nope` does not exist (2 of 3 failures)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "map[") || strings.Contains(msg, "other run") {
		t.Errorf("error shows a Go map or another run's error: %s", msg)
	}
}

func TestSweepRuns(t *testing.T) {
	base := RunSpec{Workload: workload.Workload{Requests: 8}, Request: RequestSpec{MaxTokens: 16, Stream: true}}
	runs, err := Sweep{}.Runs(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 7 || runs[0].Name != "c=1" || runs[6].Name != "c=64" || runs[6].Workload.Concurrency != 64 {
		t.Fatalf("default sweep = %d runs, first %q last %q", len(runs), runs[0].Name, runs[len(runs)-1].Name)
	}
	runs, err = Sweep{Rates: []float64{0.5, 2}}.Runs(base)
	if err != nil || runs[0].Name != "rate=0.5" || runs[1].Workload.Mode != workload.ModeRate {
		t.Fatalf("rate sweep = %+v, %v", runs, err)
	}
	base.Workload.Requests = 0 // default: 4 x concurrency, at least 32
	runs, _ = Sweep{Concurrencies: []int{2, 16}}.Runs(base)
	if runs[0].Workload.Requests != 32 || runs[1].Workload.Requests != 64 {
		t.Errorf("default requests per level %d, %d; want 32, 64", runs[0].Workload.Requests, runs[1].Workload.Requests)
	}
	if _, err := (Sweep{Concurrencies: []int{0}}).Runs(base); err == nil || !strings.Contains(err.Error(), "Concurrencies 0") {
		t.Errorf("level 0 error = %v", err)
	}
	stop := Sweep{MaxErrorRate: 5, MaxP99E2E: time.Second}.StopAfter()
	if why := stop(&result.Run{Requests: 10, OK: 10}); why != "" {
		t.Errorf("healthy level stopped: %s", why)
	}
	if why := stop(&result.Run{Requests: 10, OK: 9}); !strings.Contains(why, "error rate 10.0%") {
		t.Errorf("error stop = %q", why)
	}
	slow := &result.Run{Requests: 10, OK: 10}
	slow.Client = store.ClientSummary([]result.Record{{E2ES: 2}})
	if why := stop(slow); !strings.Contains(why, "p99 E2E") {
		t.Errorf("latency stop = %q", why)
	}
}

func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf)
	p.phase("health OK", 1500*time.Millisecond)
	bar := p.start(RunSpec{Name: "streaming", Workload: workload.Workload{Requests: 3}})
	for i := 0; i < 3; i++ {
		bar.add(result.Record{FirstVisibleS: 0.03, E2ES: 3.85})
	}
	bar.finish()
	out := buf.String()
	for _, want := range []string{"health OK", "1.50 s", "streaming", "first visible p50 0.030s", "e2e p50 3.850s", "(3/3)"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%q", want, out)
		}
	}
	// Quiet: a nil writer writes nothing and never fails.
	q := newProgress(nil)
	q.phase("x", 0)
	qb := q.start(RunSpec{Name: "r"})
	qb.add(result.Record{})
	qb.finish()
}

// TestProgressRetries: a retried attempt finishes no request, so under
// 429/503 retries the bar neither fills early nor counts a failure.
func TestProgressRetries(t *testing.T) {
	var buf bytes.Buffer
	bar := newProgress(&buf).start(RunSpec{Name: "r", Workload: workload.Workload{Requests: 2, Warmup: 1}})
	retried := result.Record{Error: "http_status", Status: 503, Retried: true}
	for _, rec := range []result.Record{retried, {Warmup: true}, retried, retried, {E2ES: 1}} {
		bar.add(rec)
		if bar.bar.IsFinished() {
			t.Fatalf("bar full after %d of 3 requests finished:\n%q", bar.n, buf.String())
		}
	}
	bar.add(result.Record{E2ES: 1})
	if !bar.bar.IsFinished() {
		t.Errorf("bar not full after its 3 requests finished:\n%q", buf.String())
	}
	if out := buf.String(); strings.Contains(out, "failed") || !strings.Contains(out, "(3/3)") {
		t.Errorf("want 3/3 done and no failure shown:\n%q", out)
	}
}

// TestCheckLimits: each bound names its flag; Execute refuses a bad one as
// a usage error before starting anything.
func TestCheckLimits(t *testing.T) {
	running := ServerOptions{BaseURL: "http://127.0.0.1:1"}
	cases := []struct {
		name string
		cfg  Config
		want string // "" = accepted
	}{
		{"defaults", Config{}, ""},
		{"continuing over a running server's exit", Config{Server: running, ContinueOnServerExit: true, Retries: MaxRetries}, ""},
		{"negative retries", Config{Retries: -1}, "Retries -1: expected 0-100"},
		{"too many retries", Config{Retries: MaxRetries + 1}, "Retries 101"},
		{"continuing over a started server's exit", Config{ContinueOnServerExit: true}, "ContinueOnServerExit: only for a server servebench did not start"},
		{"continuing over a preset's exit", Config{Server: ServerOptions{BaseURL: running.BaseURL, Preset: "vllm"}, ContinueOnServerExit: true}, "ContinueOnServerExit"},
		{"negative gauge interval", Config{GaugeEvery: -time.Second}, "GaugeEvery -1s"},
		{"negative window", Config{Interval: -time.Second}, "Interval -1s"},
		{"negative stall timeout", Config{StallTimeout: -time.Second}, "StallTimeout -1s: expected durations >= 0"},
	}
	for _, tc := range cases {
		err := tc.cfg.CheckLimits()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
		if fe := (*option.FieldError)(nil); tc.want != "" && (!errors.As(err, &fe) || !strings.Contains(tc.want, fe.Field)) {
			t.Errorf("%s: %v: want an option.FieldError of the field named", tc.name, err)
		}
	}
	_, _, err := Execute(t.Context(), Config{Server: running, Dir: t.TempDir(), Interval: -time.Second})
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "Interval -1s") {
		t.Errorf("Execute with --interval -1s: %v, want a usage error naming it", err)
	}
}

// TestExecuteLeavesConfig: Execute completes, fits and calibrates copies of
// what it is given: the caller's Config, its runs, its search and the
// sources they share are deep-equal before and after a session that did
// all of it (defaults, max_model_len, token calibration of a synthetic
// source with a shared prefix).
func TestExecuteLeavesConfig(t *testing.T) {
	e := startEngine(t, nil)
	src, _, err := workload.NewSource(workload.SourceOptions{InputTokens: "16", SharedPrefixTokens: 8, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	synth, ok := src.(*workload.Synth)
	if !ok {
		t.Fatalf("source %T, want *workload.Synth", src)
	}
	fixed, _ := workload.FixedPrompt("hello")
	slo, _ := result.ParseSLO("e2e=10s")
	wl := workload.Workload{Mode: workload.ModeSequential, Requests: 2}
	cfg := Config{
		Server: ServerOptions{BaseURL: e.BaseURL()}, Dir: t.TempDir(), Args: []string{"servebench", "test"}, Version: "test",
		FailOnErrorRate: -1,
		// Endpoints, the search's Start and Precision, and the second
		// run's Source are left to their defaults.
		Runs: []RunSpec{
			{Name: "synthetic", Workload: wl, Request: RequestSpec{MaxTokens: 4, Stream: true}, Source: synth},
			{Name: "fixed", Workload: wl, Request: RequestSpec{MaxTokens: 4}, Prompts: fixed},
		},
		Search: &MaxRateSearch{Target: 50, MaxSteps: 1, Base: RunSpec{Workload: wl, Request: RequestSpec{MaxTokens: 4, Stream: true}, Source: synth, SLO: slo}},
	}
	// want is a deep copy: its own runs, search and source.
	want := cfg
	synthCopy, fixedCopy, searchCopy := *synth, *fixed, *cfg.Search
	want.Runs = slices.Clone(cfg.Runs)
	want.Runs[0].Source, want.Runs[1].Prompts = &synthCopy, &fixedCopy
	searchCopy.Base.Source = &synthCopy
	want.Search = &searchCopy

	res, _, err := Execute(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Server.PromptTokens == nil || len(res.Runs) != 3 || res.MaxRate == nil {
		t.Fatalf("the session did not calibrate, run and search: prompt_tokens %v, %d runs, max_rate %v", res.Server.PromptTokens, len(res.Runs), res.MaxRate)
	}
	if res.Runs[1].Workload.Endpoint != EndpointChat || res.Runs[1].Workload.PromptKind == "" {
		t.Errorf("the defaults were not applied: run %s endpoint %q, prompt kind %q", res.Runs[1].Name, res.Runs[1].Workload.Endpoint, res.Runs[1].Workload.PromptKind)
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("Execute changed its caller's Config:\n got %+v\nsearch %+v\nsource %+v\nwant %+v\nsearch %+v\nsource %+v",
			cfg, *cfg.Search, *synth, want, *want.Search, synthCopy)
	}
}

// failDoer answers every request HTTP 503 with the same text.
type failDoer struct{}

func (failDoer) Do(_ context.Context, req *client.Request) client.Trace {
	return client.Trace{Start: time.Now(), Stream: req.Stream, Status: 503, Error: client.ErrHTTPStatus,
		ErrorText: "HTTP 503: overloaded", Done: time.Millisecond}
}

// TestOutcomeCarriesCommonest: why every request of a run failed comes
// back in that run's Outcome, its direct side's too, and the Runner keeps
// nothing from one run to the next (its settings are as set after two runs).
func TestOutcomeCarriesCommonest(t *testing.T) {
	r := &Runner{Client: failDoer{}, Direct: &echoDoer{}, DirectURL: "http://engine"}
	before := *r
	spec := RunSpec{Name: "a", Workload: workload.Workload{Mode: workload.ModeSequential, Requests: 3}, Request: RequestSpec{MaxTokens: 4}}
	for _, name := range []string{"a", "b"} {
		spec.Name = name
		var told int
		out, err := r.Measure(context.Background(), spec, Reporter{Record: func(result.Record) { told++ }})
		if err != nil {
			t.Fatal(err)
		}
		if out.Run == nil || out.Run.OK != 0 || out.Direct == nil || out.Direct.OK != 3 || told != 3 {
			t.Fatalf("run %s: outcome %+v, told %d records", name, out, told)
		}
		want := map[string]string{name: out.Commonest[name], name + DirectSuffix: ""}
		if !strings.Contains(out.Commonest[name], "HTTP 503: overloaded") || !reflect.DeepEqual(out.Commonest, want) {
			t.Errorf("run %s: commonest %q", name, out.Commonest)
		}
	}
	if !reflect.DeepEqual(*r, before) {
		t.Errorf("the Runner changed across runs:\n got %+v\nwant %+v", *r, before)
	}
}

// TestEngineClock: a clock without a speed-up takes the one the bundled
// engine states in its /version (and its start-up speed-up), under either
// name; the modelled clock of a server that states none is refused, naming
// the field; a clock servebench set the speed-up of is kept, with the
// start-up speed-up the engine states.
func TestEngineClock(t *testing.T) {
	engine := &result.Bundled{Speedup: 50, StartupSpeedup: 1000}
	for _, tc := range []struct {
		name string
		c    result.Clock
		bd   *result.Bundled
		want result.Clock
		err  string
	}{
		{"none kept", result.Clock{}, engine, result.Clock{}, ""},
		{"wall takes the engine's", result.Clock{Name: result.ClockWall, Speedup: 1}, engine, result.Clock{Name: result.ClockWall, Speedup: 50, StartupSpeedup: 1000}, ""},
		{"modelled takes the engine's", result.Clock{Name: result.ClockModelled, Speedup: 1}, engine, result.Clock{Name: result.ClockModelled, Speedup: 50, StartupSpeedup: 1000}, ""},
		{"--speedup kept, the engine's start-up speed-up taken", result.Clock{Name: result.ClockModelled, Speedup: 4}, engine, result.Clock{Name: result.ClockModelled, Speedup: 4, StartupSpeedup: 1000}, ""},
		{"--speedup kept, no start-up speed-up stated", result.Clock{Name: result.ClockModelled, Speedup: 4}, &result.Bundled{Speedup: 4}, result.Clock{Name: result.ClockModelled, Speedup: 4}, ""},
		{"an engine not sped up", result.Clock{Name: result.ClockModelled, Speedup: 1}, &result.Bundled{Speedup: 1}, result.Clock{Name: result.ClockModelled, Speedup: 1}, ""},
		{"wall on another server", result.Clock{Name: result.ClockWall, Speedup: 1}, nil, result.Clock{Name: result.ClockWall, Speedup: 1}, ""},
		{"modelled on another server", result.Clock{Name: result.ClockModelled, Speedup: 1}, nil, result.Clock{}, "states no speed-up"},
	} {
		got, err := engineClock(tc.c, tc.bd, "http://127.0.0.1:1")
		var fe *option.FieldError
		if tc.err != "" {
			if !errors.As(err, &fe) || fe.Field != "Clock" || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "http://127.0.0.1:1") {
				t.Errorf("%s: %v, want a Clock error naming the server and %q", tc.name, err, tc.err)
			}
			continue
		}
		got.Note = ""
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}
