package launch

import (
	"bytes"
	"context"
	"errors"
	"os"
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
