package launch

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestRedactWriterSplits: a secret is replaced wherever the child's output
// is cut into reads, including across two reads.
func TestRedactWriterSplits(t *testing.T) {
	const key = "sk-secret-TEST-123"
	in := "INFO non-default args: {'api_key': ['" + key + "']}\nbearer " + key + key + "\ntail " + key[:5]
	want := strings.ReplaceAll(in, key, Redacted)
	for cut := 1; cut <= len(in); cut++ {
		var out bytes.Buffer
		w := newRedactWriter(&out, []string{key})
		for i := 0; i < len(in); i += cut {
			w.Write([]byte(in[i:min(i+cut, len(in))]))
		}
		w.Flush()
		if out.String() != want {
			t.Fatalf("reads of %d bytes: got\n%q\nwant\n%q", cut, out.String(), want)
		}
	}
}

func TestSecretsOf(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want []string
	}{
		// The probes' key and both spellings of --api-key.
		{Spec{APIKey: "k-env-1", Command: []string{"vllm", "serve", "m", "--api-key", "k-arg-2", "--api-key=k-arg-3"}},
			[]string{"k-env-1", "k-arg-2", "k-arg-3"}},
		// Inside a shell string, quoted.
		{Spec{Command: []string{"sh", "-c", "exec vllm serve m --api-key 'k-sh-4'"}}, []string{"k-sh-4"}},
		// Too short to be a key: left alone rather than garbling the log.
		{Spec{APIKey: "ab", Command: []string{"x", "--api-key"}}, nil},
	} {
		if got := secretsOf(tc.spec); strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("secretsOf(%+v) = %q, want %q", tc.spec, got, tc.want)
		}
	}
}

// TestRedactArgs: every way a secret reaches a command line is redacted,
// and what is not a secret (variable names, ports, settings) is kept.
func TestRedactArgs(t *testing.T) {
	in := []string{"run", "--api-key", "sk-secret", "--api-key=sk-2", "--api-key-env", "MY_KEY",
		"--server-cmd", "vllm serve m --api-key sk-3 --port 8011", "-H", "Authorization: Bearer sk-4",
		"--engine-arg=--api-key=sk-5", "--engine-arg=--api-key", "--engine-arg=sk-6", "--engine-arg", "--api-key=sk-7",
		// #4: URL passwords, as a flag value and inline.
		"--base-url", "http://bob:pw-8@127.0.0.1:8000", "--metrics-url=http://bob:pw-9@127.0.0.1:8000/metrics",
		// #5: tokens in environment assignments and --hf-token.
		"--server-cmd", "env HF_TOKEN=hf-10 VLLM_API_KEY=sk-11 TOKENIZERS_PARALLELISM=false vllm serve m --hf-token hf-12",
		"--server-cmd=vllm serve m --hf-token=hf-13 --max-num-batched-tokens 8192",
		// #7: a quoted key with a blank goes whole.
		"--server-cmd", `vllm serve m --api-key="sk 14" --port 8012`,
		// A key inside a sh -c script inside --server-cmd.
		"--server-cmd", `sh -c 'exec vllm serve m --api-key sk-15'`,
		"--engine-arg", "--api-key", "--engine-arg", "sk-16",
	}
	out := strings.Join(RedactArgs(in), " ")
	for _, secret := range []string{"sk-secret", "sk-2", "sk-3", "sk-4", "sk-5", "sk-6", "sk-7", "pw-8", "pw-9",
		"hf-10", "sk-11", "hf-12", "hf-13", "sk 14", "14", "sk-15", "sk-16"} {
		if strings.Contains(out, secret) {
			t.Errorf("%q survives redaction: %s", secret, out)
		}
	}
	for _, kept := range []string{"MY_KEY", "--port 8011", "--engine-arg=REDACTED", "http://bob:xxxxx@127.0.0.1:8000",
		"--metrics-url=http://bob:xxxxx@127.0.0.1:8000/metrics", "HF_TOKEN=REDACTED", "TOKENIZERS_PARALLELISM=false",
		"--max-num-batched-tokens 8192", "--port 8012", "--hf-token REDACTED"} {
		if !strings.Contains(out, kept) {
			t.Errorf("redaction lost %q: %s", kept, out)
		}
	}
	if in[2] != "sk-secret" {
		t.Error("RedactArgs modified its input")
	}
	// The log redaction learns the same secrets.
	got := secretsOf(Spec{Command: in})
	for _, secret := range []string{"sk-secret", "pw-8", "hf-10", "sk-11", "hf-13", "sk 14", "sk-15", "sk-16"} {
		if !slices.Contains(got, secret) {
			t.Errorf("secretsOf lacks %q: %q", secret, got)
		}
	}
}

// TestServerLogRedacted: a server that prints its key (as vLLM's
// "non-default args" line does) leaves it neither in server.log nor in the
// log tail an error message shows.
func TestServerLogRedacted(t *testing.T) {
	const key = "sk-secret-TEST-123"
	spec := Spec{
		Command: []string{"sh", "-c", "echo \"non-default args: {'api_key': ['$0']}\"; echo \"auth $1\" >&2; exit 3",
			"--api-key=" + key, "other-KEY-456"},
		APIKey:       "other-KEY-456",
		LogPath:      t.TempDir() + "/server.log",
		BaseURL:      "http://127.0.0.1:1",
		ReadyTimeout: 10e9,
	}
	s, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	_, err = s.WaitReady(context.Background(), nil)
	if !errors.Is(err, ErrExited) {
		t.Fatalf("err = %v, want ErrExited", err)
	}
	<-s.logDone
	log, rerr := os.ReadFile(spec.LogPath)
	if rerr != nil {
		t.Fatal(rerr)
	}
	for _, secret := range []string{key, "other-KEY-456"} {
		if strings.Contains(string(log), secret) || strings.Contains(err.Error(), secret) {
			t.Errorf("%q leaked:\nlog:\n%s\nerror: %v", secret, log, err)
		}
	}
	if !strings.Contains(string(log), "api_key': ['--api-key=REDACTED']") || !strings.Contains(string(log), "auth REDACTED") {
		t.Errorf("log lines lost instead of redacted:\n%s", log)
	}
}
