package launch

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/launch/launchtest"
)

// The test binary doubles as a fake server: TestMain runs fakeMain instead of
// the tests when LAUNCH_FAKE names a mode. That makes every launcher test real
// process management (fork, exec, process groups, signals, pipes).
const fakeEnv = "LAUNCH_FAKE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); mode != "" {
		os.Exit(fakeMain(mode))
	}
	os.Exit(launchtest.Run(m))
}

// fakeSpec returns a spec that runs this test binary as a fake server.
func fakeSpec(t *testing.T, mode string, env ...string) Spec {
	t.Helper()
	return Spec{
		Command:      []string{os.Args[0], "-test.run=^$"},
		Env:          append([]string{fakeEnv + "=" + mode}, env...),
		LogPath:      t.TempDir() + "/server.log",
		PollInterval: 20 * time.Millisecond,
		ReadyTimeout: 20 * time.Second,
		StopGrace:    2 * time.Second,
	}
}

func envDur(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

// fakeMain is the fake server. Modes:
//
//	vllm      log like vLLM, load (LAUNCH_FAKE_LOAD), init (LAUNCH_FAKE_INIT), then listen
//	503       listen at once and answer /health 503 until loaded (llama.cpp style)
//	exit      print an error and exit 3 at once
//	never     log, ignore SIGINT, start a grandchild that ignores SIGINT and SIGTERM, never listen
//	die       become ready like vllm, then exit 7 after LAUNCH_FAKE_DIE
//	sleeper   (grandchild) ignore SIGINT and SIGTERM and sleep
//
// LAUNCH_FAKE_PORT fixes the port (default 0, named in the log);
// LAUNCH_FAKE_CHATONLY=1 answers 404 on /v1/completions;
// LAUNCH_FAKE_NOMODELS=1 answers 404 on /v1/models;
// LAUNCH_FAKE_HEALTH=404 makes /health answer 404.
func fakeMain(mode string) int {
	logf := func(format string, a ...any) {
		fmt.Printf("(EngineCore_DP0 pid=%d) INFO 01-01 00:00:00 [fake.py:1] "+format+"\n", append([]any{os.Getpid()}, a...)...)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	load, initDur := envDur("LAUNCH_FAKE_LOAD", 300*time.Millisecond), envDur("LAUNCH_FAKE_INIT", 200*time.Millisecond)
	switch mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB")
		return 3
	case "sleeper":
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
		time.Sleep(time.Hour)
		return 0
	case "never":
		signal.Ignore(syscall.SIGINT)
		child := exec.Command(os.Args[0], "-test.run=^$")
		child.Env = append(os.Environ(), fakeEnv+"=sleeper")
		if err := child.Start(); err != nil {
			fmt.Println("cannot start grandchild:", err)
			return 1
		}
		fmt.Printf("grandchild pid %d\n", child.Process.Pid)
		logf("Waiting for a GPU that never comes")
		<-sig // SIGTERM
		fmt.Println("got SIGTERM, exiting")
		return 0
	}

	var ready atomic.Bool
	ln, err := net.Listen("tcp", "127.0.0.1:"+cmpOr(os.Getenv("LAUNCH_FAKE_PORT"), "0"))
	listen := func() {
		go http.Serve(ln, fakeHandler(&ready))
		fmt.Printf("(APIServer pid=%d) INFO 01-01 00:00:00 [api_server.py:1895] Starting vLLM API server 0 on http://%s\n",
			os.Getpid(), ln.Addr())
	}
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	if mode == "503" {
		listen()
	}
	// Like vLLM, a signal during start-up ends the process.
	pause := func(d time.Duration) {
		select {
		case <-time.After(d):
		case s := <-sig:
			fmt.Printf("interrupted during start-up (%v)\n", s)
			os.Exit(1)
		}
	}
	logf("Starting to load model fake/model...")
	pause(load)
	logf("Loading weights took %.2f seconds", load.Seconds())
	logf("Model loading took 5.2012 GiB and %.6f seconds", load.Seconds()+0.01)
	logf("GPU KV cache size: 77,744 tokens")
	logf("Maximum concurrency for 4,096 tokens per request: 18.98x")
	pause(initDur)
	logf("init engine (profile, create kv cache, warmup model) took %.2f seconds", initDur.Seconds())
	if mode != "503" {
		listen()
	}
	ready.Store(true)
	fmt.Println("INFO:     Application startup complete.")
	if mode == "die" {
		select {
		case <-time.After(envDur("LAUNCH_FAKE_DIE", 300*time.Millisecond)):
			fmt.Println("Fatal Python error: Segmentation fault")
			return 7
		case <-sig:
			return 0
		}
	}
	s := <-sig
	fmt.Printf("INFO:     Shutting down (%v)\n", s)
	return 0
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func fakeHandler(ready *atomic.Bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {
		if code, _ := strconv.Atoi(os.Getenv("LAUNCH_FAKE_HEALTH")); code != 0 {
			w.WriteHeader(code)
			return
		}
		if !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"code":503,"message":"Loading model"}}`)
		}
	})
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		if os.Getenv("LAUNCH_FAKE_NOMODELS") == "1" {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list",
			"data": []map[string]any{{"id": "fake/model", "object": "model", "max_model_len": 4096}}})
	})
	complete := func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model     string `json:"model"`
			MaxTokens int    `json:"max_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "fake/model" || req.MaxTokens != 1 {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, `{"choices":[{"text":"!","index":0}],"usage":{"completion_tokens":1}}`)
	}
	mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		if os.Getenv("LAUNCH_FAKE_CHATONLY") == "1" {
			http.NotFound(w, r)
			return
		}
		complete(w, r)
	})
	mux.HandleFunc("/v1/chat/completions", complete)
	return mux
}
