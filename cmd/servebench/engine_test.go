package main

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a goroutine-safe stderr for a running command.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestEngineListProfiles(t *testing.T) {
	code, out, errOut := runMain("engine", "--list-profiles")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"rtx3060-12gb", "h200-141gb", "qwen2.5-7b-instruct-awq", "llama-3.1-8b-instruct", "no (needs", "CITED POINTS", "WORST ERR"} {
		if !strings.Contains(out, want) {
			t.Errorf("--list-profiles lacks %q:\n%s", want, out)
		}
	}
}

func TestEngineBadInputExit2(t *testing.T) {
	for _, args := range [][]string{
		{"engine", "--fault", "chaos"},
		{"engine", "--gpu", "tpu-v9"},
		{"engine", "--model", "qwen2.5-7b-instruct"}, // bf16 does not fit a 12 GB card
		{"engine", "--speedup", "-1"},
		{"engine", "--speculative-tokens", "40"},
		{"engine", "--acceptance-rate", "1.5", "--speculative-tokens", "2"},
		{"engine", "--acceptance-rate", "0.5"}, // without --speculative-tokens it would do nothing
		{"engine", "--tool-call-parser", "hermes2"},
		{"engine", "--auto-tool-call-rate", "2"},
	} {
		if code, _, errOut := runMain(args...); code != exitUsage || !strings.Contains(errOut, args[2]) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %q", args, code, errOut, args[2])
		}
	}
}

// TestEngineUnknownToolParserListsKnown: an unknown --tool-call-parser
// exits 2 naming vLLM's parsers, as vLLM refuses it at start-up.
func TestEngineUnknownToolParserListsKnown(t *testing.T) {
	code, _, errOut := runMain("engine", "--enable-auto-tool-choice", "--tool-call-parser", "hermes2")
	if code != exitUsage || !strings.Contains(errOut, `"hermes2"`) {
		t.Fatalf("exit %d, stderr %q; want 2 naming the parser", code, errOut)
	}
	for _, p := range []string{"hermes", "llama3_json", "mistral", "pythonic"} {
		if !strings.Contains(errOut, p) {
			t.Errorf("stderr does not list the known parser %q: %s", p, errOut)
		}
	}
	code, _, errOut = runMain("engine", "--enable-auto-tool-choice")
	if code != exitUsage || !strings.Contains(errOut, "requires --tool-call-parser") {
		t.Errorf("--enable-auto-tool-choice alone: exit %d, stderr %q; want 2 asking for --tool-call-parser", code, errOut)
	}
}

func TestEngineExitDuringLoadExit3(t *testing.T) {
	code, _, errOut := runMain("engine", "--port", "0", "--startup-speedup", "1000", "--fault", "exit-during-load")
	if code != exitInvalidRun || !strings.Contains(errOut, "exit-during-load") {
		t.Errorf("exit %d, stderr %q; want 3", code, errOut)
	}
}

// TestEngineServesAndStops runs `servebench engine --port 0`, finds its port
// in the vLLM log line, checks /health, then cancels it like SIGINT would.
func TestEngineServesAndStops(t *testing.T) {
	var out bytes.Buffer
	var errb lockedBuffer
	cmd := newRootCmd(&out, &errb)
	cmd.SetArgs([]string{"engine", "--port", "0", "--speedup", "100", "--startup-speedup", "1000"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	re := regexp.MustCompile(`Starting vLLM API server 0 on (http://127\.0\.0\.1:\d+)`)
	var url string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(errb.String(), "Application startup complete.") {
			if m := re.FindStringSubmatch(errb.String()); m != nil {
				url = m[1]
			}
			break
		}
	}
	if url == "" {
		cancel()
		t.Fatalf("no ready server line in the log:\n%s", errb.String())
	}
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/health: %s", resp.Status)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("engine after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("engine did not stop within 10s of cancel")
	}
}
