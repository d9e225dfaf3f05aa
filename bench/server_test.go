package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/launch"
	"github.com/servebench/servebench/engine/sim"
)

// TestLearnAPIKeyHint: a 401 from /v1/models says whether a key was sent
// and names --api-key-env's variable; other failures (nothing listening on
// a port whose number contains "401") get no API key hint.
func TestLearnAPIKeyHint(t *testing.T) {
	e := startEngine(t, func(o *sim.Options) { o.APIKey = "sk-test-learn" })
	ctx := context.Background()
	for _, c := range []struct {
		key, want string
	}{
		{"", "none was sent: put it in the variable --api-key-env names (SB_TEST_KEY)"},
		{"sk-wrong", "refused the API key that was sent (from SB_TEST_KEY)"},
	} {
		s, err := StartServer(ctx, ServerOptions{BaseURL: e.BaseURL(), APIKey: c.key, APIKeyEnv: "SB_TEST_KEY", ReadyTimeout: time.Minute})
		if err == nil {
			s.Stop()
			t.Fatalf("key %q: no error", c.key)
		}
		if !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("key %q: %v, want HTTP 401 and %q", c.key, err, c.want)
		}
	}

	// A closed port numbered 4010: the error text holds "401" but is no 401.
	l, err := net.Listen("tcp", "127.0.0.1:4010")
	if err != nil {
		t.Skipf("port 4010 busy: %v", err)
	}
	l.Close()
	s, err := StartServer(ctx, ServerOptions{BaseURL: "http://127.0.0.1:4010", ReadyTimeout: time.Second})
	if err == nil {
		s.Stop()
		t.Fatal("nothing listening, no error")
	}
	if strings.Contains(err.Error(), "API key") {
		t.Errorf("connection refused got an API key hint: %v", err)
	}
}

// A started Ollama runs in --server-dir: its default models folder must not
// be relative to the folder servebench was started in.
func TestOllamaModelsDirAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	got := OllamaModelsDir("results/run1")
	if !filepath.IsAbs(got) {
		t.Fatalf("OllamaModelsDir(%q) = %q, want an absolute path", "results/run1", got)
	}
	wd, _ := os.Getwd()
	if want := filepath.Join(wd, "results", "run1", "ollama-models"); got != want {
		t.Fatalf("OllamaModelsDir = %q, want %q", got, want)
	}
}

// TestResultsRecordParallel: results.json's server.bundled says what the
// engine ran with, from its /version: the parallel sizes and the KV role
// when set (a decode instance on 2 x 2 GPUs here), none of them for an
// engine on one GPU.
func TestResultsRecordParallel(t *testing.T) {
	for _, c := range []struct {
		mutate func(*sim.Options)
		want   string
	}{
		{func(o *sim.Options) {
			o.GPU, o.Model = "a100-80gb", "qwen2.5-7b-instruct"
			o.TensorParallelSize, o.PipelineParallelSize, o.KVRole = 2, 2, sim.KVRoleConsumer
		}, `"tensor_parallel_size":2,"pipeline_parallel_size":2,"kv_role":"consumer"`},
		{nil, ""},
	} {
		e := startEngine(t, c.mutate)
		_, _, dir := execute(t, e, seqRuns(1, 4)[:1])
		b, err := os.ReadFile(filepath.Join(dir, result.ResultsFile))
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Server struct{ Bundled json.RawMessage }
		}
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, res.Server.Bundled); err != nil {
			t.Fatal(err)
		}
		got := compact.String()
		if c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("server.bundled = %s, want %s", got, c.want)
		}
		if c.want == "" && (strings.Contains(got, "parallel") || strings.Contains(got, "kv_role")) {
			t.Errorf("one-GPU server.bundled = %s, want no parallel sizes or KV role", got)
		}
	}
}

// TestPresetPD: --server pd is the bundled engine started with
// --pd-prefill and --pd-decode before the other engine arguments, so its
// command (results.json's server.command) is what --server bundled with
// those arguments gives; pools under one instance are refused.
func TestPresetPD(t *testing.T) {
	pd := ServerOptions{Preset: PresetPD, Self: "/x/servebench", Prefill: 2, Decode: 3, Speedup: 10, EngineArgs: []string{"--max-num-seqs=4"}}
	got, started, err := serverSpec(pd)
	if err != nil || !started {
		t.Fatalf("serverSpec(pd): started %v, %v", started, err)
	}
	bundled := pd
	bundled.Preset, bundled.Prefill, bundled.Decode = PresetBundled, 0, 0
	bundled.EngineArgs = []string{"--pd-prefill", "2", "--pd-decode", "3", "--max-num-seqs=4"}
	want, _, err := serverSpec(bundled)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := strings.Join(got.Command, " "), strings.Join(want.Command, " "); g != w || !strings.Contains(g, "--pd-prefill 2 --pd-decode 3") {
		t.Errorf("pd command %q, want %q", g, w)
	}
	if got.Preset != PresetBundled || !pd.Bundled() {
		t.Errorf("pd: launch preset %q, Bundled %v; want the bundled engine", got.Preset, pd.Bundled())
	}
	if cmdPD := (ServerOptions{Preset: PresetPD, ServerCmd: "vllm serve m"}); cmdPD.Bundled() {
		t.Error("--server pd with --server-cmd counted as the bundled engine")
	}
	pd.Decode = 0
	if err := CheckServer(pd); err == nil || err.Error() != "Prefill 2 Decode 0: want at least one instance of each" {
		t.Errorf("no decode instance: %v", err)
	}
}

// TestLaunchSpecProfiles: startup's --gpu and --model (GPU, ServeModel)
// reach the bundled engine's command, pd's too, and replace another
// preset's model; an unknown profile or a model that does not fit is
// refused before anything starts, and --base-url alone has no spec.
func TestLaunchSpecProfiles(t *testing.T) {
	for _, preset := range []string{PresetBundled, PresetPD} {
		o := ServerOptions{Preset: preset, Self: "/x/servebench", Prefill: 1, Decode: 1, GPU: "h100-80gb", ServeModel: "llama-3.1-8b-instruct"}
		spec, err := LaunchSpec(o)
		if err != nil {
			t.Fatalf("%s: %v", preset, err)
		}
		if c := strings.Join(spec.Command, " "); !strings.Contains(c, "--model llama-3.1-8b-instruct --gpu h100-80gb") {
			t.Errorf("%s: command %q lacks the profiles", preset, c)
		}
		if spec.Model != "" {
			t.Errorf("%s: spec.Model %q: the profile name is not the model to ask for", preset, spec.Model)
		}
	}
	spec, err := LaunchSpec(ServerOptions{Preset: "vllm", ServeModel: "org/other"})
	if err != nil || spec.Command[2] != "org/other" {
		t.Errorf("vllm with ServeModel: %q, %v", spec.Command, err)
	}
	for _, c := range []struct {
		o    ServerOptions
		want string
	}{
		{ServerOptions{Self: "/x/servebench", GPU: "nope"}, `GPU: `},
		{ServerOptions{Self: "/x/servebench", ServeModel: "nope"}, `ServeModel: `},
		{ServerOptions{Self: "/x/servebench", GPU: "rtx3060-12gb", ServeModel: "llama-3.1-70b-instruct"}, "GPU rtx3060-12gb ServeModel llama-3.1-70b-instruct: "},
		{ServerOptions{BaseURL: "http://127.0.0.1:1"}, "BaseURL alone"},
	} {
		if _, err := LaunchSpec(c.o); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("LaunchSpec(%+v): %v, want an error starting %q", c.o, err, c.want)
		}
	}
}

// TestUnknownPresetListsPD: an unknown --server names every preset bench
// takes, pd included (engine/launch's own list does not know pd), and an
// error about a pd deployment names pd, not the bundled engine it becomes.
func TestUnknownPresetListsPD(t *testing.T) {
	_, _, err := serverSpec(ServerOptions{Preset: "bogus", Self: "/x/servebench"})
	want := `Preset "bogus": expected one of bundled, vllm, sglang, tgi, llamacpp, ollama, pd`
	if err == nil || err.Error() != want {
		t.Errorf("unknown preset: %v, want %q", err, want)
	}
	_, _, err = serverSpec(ServerOptions{Preset: PresetPD, Prefill: 1, Decode: 1, ServerBin: "/x/vllm"})
	if err == nil || !strings.HasPrefix(err.Error(), `Preset "pd": `) {
		t.Errorf("pd with --server-bin: %v, want it to name --server \"pd\"", err)
	}
}

// TestRecordBundledCopiesEveryField: result.Bundled mirrors
// sim.BundledVersion by hand (report may not import an engine package), so
// a field added to the engine's /version object must be added to the
// results' mirror with the same name, type and JSON key, and copied by
// recordBundled; this fails on the first field that is not.
func TestRecordBundledCopiesEveryField(t *testing.T) {
	var bv sim.BundledVersion
	src := reflect.ValueOf(&bv).Elem()
	for i := range src.NumField() {
		f := src.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(fmt.Sprintf("v%d", i))
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.5)
		default:
			t.Fatalf("sim.BundledVersion.%s: kind %s not handled by this test", src.Type().Field(i).Name, f.Kind())
		}
	}
	var info result.Server
	recordBundled(&info, &bv)
	dst := reflect.ValueOf(info.Bundled).Elem()
	for i := range src.NumField() {
		sf := src.Type().Field(i)
		df, ok := dst.Type().FieldByName(sf.Name)
		if !ok || df.Type != sf.Type || df.Tag.Get("json") != sf.Tag.Get("json") {
			t.Errorf("result.Bundled has no field %s %s `json:%q` mirroring sim.BundledVersion's", sf.Name, sf.Type, sf.Tag.Get("json"))
			continue
		}
		if got, want := dst.FieldByIndex(df.Index).Interface(), src.Field(i).Interface(); got != want {
			t.Errorf("recordBundled copied %s as %v, want %v", sf.Name, got, want)
		}
	}
}

// TestCheckServerOptionsReadsNoFile: CheckServerOptions judges the options
// alone, so a missing server directory, ollama binary or GGUF file passes
// it; CheckServer, which looks, refuses each. A flag error is the same
// from both.
func TestCheckServerOptionsReadsNoFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name string
		opts ServerOptions
		want string // in CheckServer's error
	}{
		{"server dir", ServerOptions{ServerCmd: "vllm serve m", ServerDir: missing}, "working directory"},
		{"ollama binary", ServerOptions{Preset: launch.PresetOllama, ServerBin: missing, Model: "m"}, "not found"},
		{"gguf file", ServerOptions{Preset: launch.PresetOllama, ServerBin: "/bin/true", GGUF: missing}, missing},
	} {
		if err := CheckServerOptions(tc.opts); err != nil {
			t.Errorf("%s: CheckServerOptions looked at the file: %v", tc.name, err)
		}
		if err := CheckServer(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: CheckServer: %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, opts := range []ServerOptions{
		{ServerCmd: "vllm serve m", Preset: launch.PresetOllama},         // both
		{Preset: "bogus", Self: "/x/servebench"},                         // unknown
		{Preset: launch.PresetOllama, ServerBin: missing, Speedup: 2},    // bundled only
		{Preset: PresetPD, Prefill: 0, Decode: 1, Self: "/x/servebench"}, // no prefill
	} {
		want := CheckServer(opts)
		if got := CheckServerOptions(opts); got == nil || want == nil || got.Error() != want.Error() {
			t.Errorf("%+v: CheckServerOptions %v, CheckServer %v: want the same flag error", opts, got, want)
		}
	}
}
