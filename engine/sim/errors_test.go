package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/option"
	"github.com/servebench/servebench/engine/perf"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// TestErrorPaths: every rejection is an OpenAI-style error with the right
// status, and the engine counts none of them as requests.
func TestErrorPaths(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { quick(o); o.APIKey = "sekret" })
	auth := []string{"Authorization", "Bearer sekret"}
	long := strings.Repeat("abcd", 4100) // 4100 tokens > 4096, 4129 in a chat
	cases := []struct {
		name   string
		body   any
		hdr    []string
		path   string
		status int
		msg    string // regexp on error.message ("" for the 401 body)
	}{
		{"no api key", chat("hi", 5, false), nil, "/v1/chat/completions", 401, ""},
		{"wrong api key", chat("hi", 5, false), []string{"Authorization", "Bearer nope"}, "/v1/chat/completions", 401, ""},
		{"prompt over max-model-len", chat(long, 5, false), auth, "/v1/chat/completions", 400, `maximum context length is 4096 tokens.*4129 input tokens`},
		{"prompt+max_tokens over", map[string]any{"prompt": strings.Repeat("abcd", 4000), "max_tokens": 200}, auth, "/v1/completions", 400, `4200 tokens \(4000 in the messages, 200 in the completion\)`},
		{"body too large", `{"prompt":"` + strings.Repeat("a", sim.MaxBodyBytes) + `"}`, auth, "/v1/completions", 413, `over \d+ bytes`},
		{"unknown model", map[string]any{"model": "gpt-9", "prompt": "hi"}, auth, "/v1/completions", 404, "The model `gpt-9` does not exist"},
		{"malformed JSON", `{"prompt": "hi",`, auth, "/v1/completions", 400, `malformed JSON`},
		{"max_tokens 0", map[string]any{"prompt": "hi", "max_tokens": 0}, auth, "/v1/completions", 400, `max_tokens must be at least 1, got 0`},
		{"min_tokens > max_tokens", map[string]any{"prompt": "hi", "max_tokens": 3, "min_tokens": 5}, auth, "/v1/completions", 400, `min_tokens must be between 0 and max_tokens=3, got 5`},
		{"no messages", map[string]any{"messages": []any{}}, auth, "/v1/chat/completions", 400, `at least one message`},
		{"no prompt", map[string]any{"max_tokens": 3}, auth, "/v1/completions", 400, `prompt is required`},
		{"n=0", map[string]any{"prompt": "hi", "n": 0}, auth, "/v1/completions", 400, `n must be at least 1, got 0\.`},
		{"n=2 greedy", map[string]any{"prompt": "hi", "n": 2, "temperature": 0}, auth, "/v1/completions", 400, `n must be 1 when using greedy sampling, got 2\.`},
	}
	before := scrape(t, e)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := post(t, e, c.path, c.body, c.hdr...)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, b)
			}
			if c.status == 401 {
				if string(b) != `{"error":"Unauthorized"}` {
					t.Errorf("401 body %s", b)
				}
				return
			}
			var out struct {
				Error struct {
					Message string
					Type    string
					Code    int
				}
			}
			if err := json.Unmarshal(b, &out); err != nil || out.Error.Code != c.status || out.Error.Type == "" {
				t.Fatalf("not an OpenAI-style error: %s", b)
			}
			if !regexp.MustCompile(c.msg).MatchString(out.Error.Message) {
				t.Errorf("message %q does not match %q", out.Error.Message, c.msg)
			}
		})
	}
	// Routing answers as FastAPI does: unknown path 404, wrong method 405.
	for _, c := range []struct{ method, path, allow, body string }{
		{"GET", "/v1/embeddings", "", `{"detail":"Not Found"}`},
		{"GET", "/v1/chat/completions", "POST", `{"detail":"Method Not Allowed"}`},
		{"POST", "/v1/models", "GET, HEAD", `{"detail":"Method Not Allowed"}`},
		{"DELETE", "/health", "GET, HEAD", `{"detail":"Method Not Allowed"}`},
	} {
		req, _ := http.NewRequest(c.method, e.BaseURL()+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		status := 404
		if c.allow != "" {
			status = 405
		}
		if resp.StatusCode != status || string(b) != c.body || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %s, Allow %q, body %s; want %d, Allow %q, body %s", c.method, c.path, resp.Status, resp.Header.Get("Allow"), b, status, c.allow, c.body)
		}
	}
	// With the key: it works; /health and /metrics need no key, as in vLLM.
	resp := post(t, e, "/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 2}, auth...)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("with the key: %s", resp.Status)
	}
	after := scrape(t, e)
	if d := value(after, "vllm:request_success_total") - value(before, "vllm:request_success_total"); d != 1 {
		t.Errorf("engine counted %v requests, want 1 (only the good one)", d)
	}
}

// syncBuffer is a goroutine-safe log sink (shared with the package's
// internal tests).
type syncBuffer = sim.SyncBuffer

func TestStartupLog(t *testing.T) {
	var log syncBuffer
	e := simtest.Start(t, func(o *sim.Options) { o.Log = &log; o.Speedup = 50 })
	out := log.String()
	prefix := `\(\w+ pid=\d+\) INFO \d\d-\d\d \d\d:\d\d:\d\d \[[a-z_]+\.py:\d+\] `
	want := []string{
		`Loading weights took (\d+\.\d\d) seconds`,
		`Model loading took \d+\.\d{4} GiB and \d+\.\d{6} seconds`,
		`GPU KV cache size: ` + regexp.QuoteMeta(perf.Commas(e.KVCacheTokens())) + ` tokens`,
		`Maximum concurrency for 4,096 tokens per request: \d+\.\d\dx`,
		`init engine \(profile, create kv cache, warmup model\) took \d+\.\d\d seconds`,
		`Starting vLLM API server 0 on ` + regexp.QuoteMeta(e.BaseURL()),
	}
	at := 0
	for _, w := range want {
		re := regexp.MustCompile(prefix + w + "\n")
		loc := re.FindStringIndex(out[at:])
		if loc == nil {
			t.Fatalf("log lacks (in order) %q:\n%s", w, out)
		}
		at += loc[1]
	}
	if !strings.Contains(out[at:], "INFO:     Application startup complete.\n") {
		t.Errorf("no uvicorn startup line after the server line:\n%s", out)
	}
	// The phase durations printed are the model's, divided by the speedup.
	g, mod, _ := perf.Lookup("rtx3060-12gb", "qwen2.5-7b-instruct-awq")
	p, err := perf.New(g, mod, perf.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	su := p.Startup()
	for _, line := range []string{
		fmt.Sprintf("Loading weights took %.2f seconds\n", su.WeightsLoad.Seconds()/50),
		fmt.Sprintf("Model loading took %.4f GiB and %.6f seconds\n", su.ModelGiB, su.ModelLoad.Seconds()/50),
		fmt.Sprintf("init engine (profile, create kv cache, warmup model) took %.2f seconds\n", su.InitEngine().Seconds()/50),
	} {
		if !strings.Contains(out, line) {
			t.Errorf("log lacks %q", line)
		}
	}
	m := regexp.MustCompile(`Maximum concurrency for 4,096 tokens per request: (\d+\.\d\d)x`).FindStringSubmatch(out)
	conc, _ := strconv.ParseFloat(m[1], 64)
	if want := float64(e.KVCacheTokens()) / 4096; conc < want-0.01 || conc > want+0.01 {
		t.Errorf("max concurrency %.2f, want %.2f", conc, want)
	}
}

// TestHealth503DuringLoad: listening from the start, /health and the API
// answer 503 with a JSON error until ready, then 200.
func TestHealth503DuringLoad(t *testing.T) {
	e, _ := simtest.StartNoWait(t, func(o *sim.Options) { o.HealthDuringLoad = sim.Health503; o.Speedup = 20 })
	deadline := time.Now().Add(5 * time.Second)
	for e.BaseURL() == "" && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if e.BaseURL() == "" {
		t.Fatal("not listening during load in 503 mode")
	}
	select {
	case <-e.Ready():
		t.Fatal("ready at once; the load should take ~4.5 s at speedup 20")
	default:
	}
	for _, p := range []string{"/health", "/v1/models", "/metrics"} {
		resp, err := http.Get(e.BaseURL() + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var out struct{ Error struct{ Code int } }
		if resp.StatusCode != 503 || json.Unmarshal(b, &out) != nil || out.Error.Code != 503 {
			t.Errorf("%s during load: %s %s", p, resp.Status, b)
		}
	}
	wantHealthyOnceReady(t, e)
}

// wantHealthyOnceReady waits for e to be ready and checks /health says so.
func wantHealthyOnceReady(t *testing.T, e *sim.Engine) {
	t.Helper()
	<-e.Ready()
	resp, err := http.Get(e.BaseURL() + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/health after ready: %s", resp.Status)
	}
}

// TestHealthRefuseDuringLoad: vLLM's behaviour, nothing listens until ready.
func TestHealthRefuseDuringLoad(t *testing.T) {
	e, _ := simtest.StartNoWait(t, func(o *sim.Options) { o.Speedup = 20 })
	time.Sleep(200 * time.Millisecond)
	if u := e.BaseURL(); u != "" {
		t.Fatalf("listening at %s during load in refuse mode", u)
	}
	wantHealthyOnceReady(t, e)
}

// TestGracefulShutdown: cancelling Run's context ends in-flight streams and
// Run returns nil promptly.
func TestGracefulShutdown(t *testing.T) {
	o := sim.DefaultOptions()
	o.Port, o.Speedup = 0, 100
	e, err := sim.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- e.Run(ctx) }()
	<-e.Ready()
	resp := post(t, e, "/v1/chat/completions", chat("long", 3000, true))
	buf := make([]byte, 512)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of cancel")
	}
	io.Copy(io.Discard, resp.Body) // the stream ends (cut short)
	resp.Body.Close()
	if _, err := http.Get(e.BaseURL() + "/health"); err == nil {
		t.Errorf("still serving after shutdown")
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	cases := []struct {
		name  string
		mut   func(*sim.Options)
		want  string
		field string // the option.FieldError's field; "" for another error
	}{
		{"unknown GPU", func(o *sim.Options) { o.GPU = "tpu-v9" }, `"tpu-v9"`, ""},
		{"unknown model", func(o *sim.Options) { o.Model = "gpt-9" }, `"gpt-9"`, ""},
		{"model does not fit", func(o *sim.Options) { o.Model = "qwen2.5-7b-instruct" }, "does not fit", ""},
		{"bad utilization", func(o *sim.Options) { o.GPUMemoryUtilization = 1.5 }, "1.5", "GPUMemoryUtilization"},
		{"bad speedup", func(o *sim.Options) { o.Speedup = 0 }, "Speedup 0", "Speedup"},
		{"bad health mode", func(o *sim.Options) { o.HealthDuringLoad = "maybe" }, `"maybe"`, "HealthDuringLoad"},
		{"too few blocks", func(o *sim.Options) { o.NumGPUBlocksOverride = 10 }, "larger than", ""},
		{"bad fault", func(o *sim.Options) { o.Faults = []string{"crash-after=soon"} }, `"crash-after=soon"`, ""},
		{"unknown fault", func(o *sim.Options) { o.Faults = []string{"gremlins"} }, `unknown fault "gremlins"`, ""},
		{"unknown KV role", func(o *sim.Options) { o.KVRole = "both" }, `KVRole "both": want one of producer, consumer`, "KVRole"},
		{"negative KV link", func(o *sim.Options) { o.KVLinkGbps = -1 }, "KVLinkGbps -1: want a positive link rate in Gb/s (or 0 for the default, 100)", "KVLinkGbps"},
		{"bad vLLM version", func(o *sim.Options) { o.VLLMVersion = "latest" }, `--vllm-version "latest"`, ""},
	}
	for _, c := range cases {
		o := sim.DefaultOptions()
		c.mut(&o)
		_, err := sim.New(o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %s", c.name, err, c.want)
		}
		var fe *option.FieldError
		if c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field) {
			t.Errorf("%s: error %v, want an option.FieldError of %s", c.name, err, c.field)
		}
		// Validate refuses what New refuses, with the same error, and
		// leaves the options as given.
		before := fmt.Sprintf("%#v", o)
		if verr := o.Validate(); fmt.Sprint(verr) != fmt.Sprint(err) {
			t.Errorf("%s: Validate: %v, want New's error %v", c.name, verr, err)
		}
		if after := fmt.Sprintf("%#v", o); after != before {
			t.Errorf("%s: Validate changed the options:\n%s\nwas\n%s", c.name, after, before)
		}
	}
	if _, err := sim.New(sim.DefaultOptions()); err != nil {
		t.Errorf("default options: %v", err)
	}
	if err := sim.DefaultOptions().Validate(); err != nil {
		t.Errorf("default options: Validate: %v", err)
	}
	o := sim.DefaultOptions()
	o.VLLMVersion = "0.20.1"
	if _, err := sim.New(o); err != nil {
		t.Errorf("--vllm-version 0.20.1: %v", err)
	}
}
