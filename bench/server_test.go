package bench

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
