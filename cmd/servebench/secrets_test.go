package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// testKey is the API key the secrets tests give the server and the client;
// it must never show up in anything servebench prints or writes.
const testKey = "sk-secret-TEST-123"

// keyEnv is the variable --api-key-env names in these tests; OPENAI_API_KEY
// (the default) is set too, so both paths are exercised.
const keyEnv = "SERVEBENCH_AUDIT_KEY"

// assertNoSecret fails when secret appears in the outputs or in any file
// under dir (results.json, requests.jsonl, report.md, server.log, charts).
func assertNoSecret(t *testing.T, secret, stdout, stderr, dir string) {
	t.Helper()
	if strings.Contains(stdout, secret) {
		t.Errorf("the key is on stdout:\n%s", stdout)
	}
	if strings.Contains(stderr, secret) {
		t.Errorf("the key is on stderr:\n%s", stderr)
	}
	if dir == "" {
		return
	}
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, secret) {
				t.Errorf("the key is in %s:%d: %s", filepath.Base(p), i+1, line)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Errorf("%s: no files written, nothing checked", dir)
	}
}

// withArgs sets os.Args (the manifest's command line comes from it, as in
// the real binary) for the duration of the test.
func withArgs(t *testing.T, args []string) {
	t.Helper()
	old := os.Args
	os.Args = append([]string{"servebench"}, args...)
	t.Cleanup(func() { os.Args = old })
}

// keyEngine starts the in-process bundled engine requiring testKey.
func keyEngine(t *testing.T) *sim.Engine {
	return simtest.Start(t, func(o *sim.Options) { o.APIKey = testKey; o.Speedup = 200 })
}

// TestSecretsRun: a real run against a server that wants the key, the key
// from the environment (default variable and --api-key-env): every request
// succeeds, and the key is nowhere in the output or the results directory.
func TestSecretsRun(t *testing.T) {
	e := keyEngine(t)
	t.Setenv("OPENAI_API_KEY", testKey)
	t.Setenv(keyEnv, testKey)
	for _, env := range []string{"", keyEnv} {
		t.Run("env "+env, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"run", "--base-url", e.BaseURL(), "--requests", "3", "--concurrency", "2", "--max-tokens", "8",
				"--stream", "both", "--out", dir, "--format", "json"}
			if env != "" {
				args = append(args, "--api-key-env", env)
			}
			withArgs(t, args)
			code, stdout, stderr := runMain(args...)
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			_, recs := loadSaved(t, dir)
			for _, r := range recs {
				if r.Error != "" || r.Status != 200 {
					t.Errorf("record %s #%d: status %d error %q: the key was not sent", r.Run, r.Index, r.Status, r.Error)
				}
			}
			assertNoSecret(t, testKey, stdout, stderr, dir)
		})
	}
}

// TestSecretsEngineArgs: the bundled engine started with the key on its
// command line (--engine-arg, every spelling a user may type): the engine
// requires it, the client sends it from OPENAI_API_KEY, and neither the
// manifest's command line, server.command, server.bundled.args, report.md
// nor server.log shows it. The child is this test binary (see init in
// main_test.go).
func TestSecretsEngineArgs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the bundled engine as a child process")
	}
	t.Setenv("OPENAI_API_KEY", testKey)
	for _, tc := range []struct {
		name string
		args []string
	}{
		// Two arguments: --engine-arg then --api-key=KEY.
		{"engine-arg, --api-key=KEY", []string{"--engine-arg", "--api-key=" + testKey}},
		// One argument holding both flags.
		{"--engine-arg=--api-key=KEY", []string{"--engine-arg=--api-key=" + testKey}},
		// The key as its own --engine-arg after a bare --api-key.
		{"--engine-arg=--api-key --engine-arg=KEY", []string{"--engine-arg=--api-key", "--engine-arg=" + testKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"table", "--speedup", "200", "--requests", "2", "--max-tokens", "8", "--out", dir,
				"--quiet", "--ready-timeout", "30s"}, tc.args...)
			withArgs(t, args)
			code, stdout, stderr := runMain(args...)
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			res, _ := loadSaved(t, dir)
			if !strings.Contains(strings.Join(res.Manifest.CommandLine, " "), "--engine-arg") {
				t.Errorf("manifest.command_line lost the flags instead of redacting the value: %q", res.Manifest.CommandLine)
			}
			if !strings.Contains(res.Server.Command, "REDACTED") {
				t.Errorf("server.command %q: want the key replaced by REDACTED", res.Server.Command)
			}
			for _, r := range res.Runs {
				if r.OK != r.Requests {
					t.Errorf("run %s: %d of %d ok (errors %v): the key did not reach the engine", r.Name, r.OK, r.Requests, r.Errors)
				}
			}
			assertNoSecret(t, testKey, stdout, stderr, dir)
		})
	}
}

// TestSecretsServerCmd: the key inside --server-cmd, as a user starting
// their own server would write it.
func TestSecretsServerCmd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the bundled engine as a child process")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(keyEnv, testKey)
	port := freePort(t)
	dir := t.TempDir()
	args := []string{"run", "--server-cmd", fmt.Sprintf("%s engine --port %d --speedup 200 --api-key %s", self, port, testKey),
		"--base-url", fmt.Sprintf("http://127.0.0.1:%d", port), "--api-key-env", keyEnv,
		"--requests", "2", "--max-tokens", "8", "--stream", "on", "--out", dir, "--quiet"}
	withArgs(t, args)
	code, stdout, stderr := runMain(args...)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	assertNoSecret(t, testKey, stdout, stderr, dir)

	// A server that logs its arguments, key included (vLLM's "non-default
	// args" line): server.log and any log tail shown keep it out.
	t.Run("server logs its key", func(t *testing.T) {
		port := freePort(t)
		dir := t.TempDir()
		// The key comes from the environment the server inherits, as
		// VLLM_API_KEY would: only --api-key-env tells servebench what it is.
		script := fmt.Sprintf(`echo "INFO non-default args: {api_key: [$%s]}" >&2; exec %s engine --port %d --speedup 200 --api-key $%s`,
			keyEnv, self, port, keyEnv)
		args := []string{"run", "--server-cmd", "sh -c '" + script + "'", "--base-url", fmt.Sprintf("http://127.0.0.1:%d", port),
			"--api-key-env", keyEnv, "--requests", "1", "--max-tokens", "4", "--stream", "on", "--out", dir, "--quiet"}
		withArgs(t, args)
		code, stdout, stderr := runMain(args...)
		if code != exitOK {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		log, err := os.ReadFile(filepath.Join(dir, result.ServerLog))
		if err != nil || !strings.Contains(string(log), "{api_key: [REDACTED]}") {
			t.Errorf("server.log (%v) lacks the redacted args line:\n%s", err, log)
		}
		assertNoSecret(t, testKey, stdout, stderr, dir)
	})

	// A token in an environment assignment (env HF_TOKEN=... vllm serve).
	t.Run("env assignment", func(t *testing.T) {
		const token = "hf_SECRET_TOKEN_42"
		port := freePort(t)
		dir := t.TempDir()
		args := []string{"run", "--server-cmd", fmt.Sprintf("env HF_TOKEN=%s %s engine --port %d --speedup 200", token, self, port),
			"--base-url", fmt.Sprintf("http://127.0.0.1:%d", port), "--requests", "1", "--max-tokens", "4", "--stream", "on", "--out", dir, "--quiet"}
		withArgs(t, args)
		code, stdout, stderr := runMain(args...)
		if code != exitOK {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		assertNoSecret(t, token, stdout, stderr, dir)
	})
}

// TestSecretsStartup: startup of a server that wants a key (the readiness
// probes send it from --api-key-env), the key also among --engine-arg.
func TestSecretsStartup(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the bundled engine as a child process")
	}
	t.Setenv(keyEnv, testKey)
	dir := t.TempDir()
	args := []string{"startup", "--speedup", "200", "--quiet", "--out", dir, "--api-key-env", keyEnv,
		"--engine-arg", "--api-key=" + testKey, "--format", "json"}
	withArgs(t, args)
	code, stdout, stderr := runMain(args...)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	res, _ := loadSaved(t, dir)
	if res.Server.Startup == nil || res.Server.Startup.FirstTokenS == nil {
		t.Errorf("no first token measured: %+v", res.Server.Startup)
	}
	assertNoSecret(t, testKey, stdout, stderr, dir)

	// No key, or a wrong one: exit 3, saying which, the key never shown.
	t.Setenv("SERVEBENCH_AUDIT_WRONG_KEY", "sk-wrong-TEST-456")
	for _, tc := range []struct{ env, want string }{
		{"SERVEBENCH_AUDIT_NO_KEY", "none was sent"},
		{"SERVEBENCH_AUDIT_WRONG_KEY", "refused the API key"},
	} {
		code, stdout, stderr := runMain("startup", "--speedup", "200", "--quiet", "--out", t.TempDir(), "--api-key-env", tc.env,
			"--engine-arg", "--api-key="+testKey)
		if code != exitInvalidRun || !strings.Contains(stderr, "401") || !strings.Contains(stderr, tc.want) {
			t.Errorf("--api-key-env %s: exit %d, want 3 naming 401 and %q:\n%s", tc.env, code, tc.want, stderr)
		}
		assertNoSecret(t, testKey, stdout, stderr, "")
		assertNoSecret(t, "sk-wrong-TEST-456", stdout, stderr, "")
	}
}

// TestSecretsProbe: probe output (verdicts and evidence) never shows the key.
func TestSecretsProbe(t *testing.T) {
	e := keyEngine(t)
	t.Setenv(keyEnv, testKey)
	code, stdout, stderr := runMain("probe", "limits", "--base-url", e.BaseURL(), "--api-key-env", keyEnv, "--format", "json")
	if code != exitOK || !strings.Contains(stdout, "400") {
		t.Fatalf("exit %d (want 0 and a 400 in the evidence)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	assertNoSecret(t, testKey, stdout, stderr, "")
}

// TestSecretsMissingKey: without the key (or with a wrong one) every
// request is a 401 recorded as data (error class http_status, status 401),
// the run ends as invalid (exit 3), and a wrong key is not echoed either.
func TestSecretsMissingKey(t *testing.T) {
	e := keyEngine(t)
	wrong := "sk-wrong-TEST-456"
	t.Setenv(keyEnv, wrong)
	t.Setenv("SERVEBENCH_AUDIT_NO_KEY", "")
	for _, env := range []string{"SERVEBENCH_AUDIT_NO_KEY", keyEnv} {
		t.Run(env, func(t *testing.T) {
			dir := t.TempDir()
			// --model skips /v1/models, which would answer 401 before any request.
			code, stdout, stderr := runMain("run", "--base-url", e.BaseURL(), "--model", "Qwen/Qwen2.5-7B-Instruct-AWQ",
				"--api-key-env", env, "--requests", "2", "--warmup", "0", "--max-tokens", "8", "--stream", "both", "--out", dir, "--quiet")
			if code != exitInvalidRun || !strings.Contains(stderr, "every request failed") {
				t.Errorf("exit %d, want 3 (every request failed)\nstderr:\n%s", code, stderr)
			}
			res, recs := loadSaved(t, dir)
			if len(recs) != 4 {
				t.Errorf("%d records, want 4 (2 per stream mode): failed requests are data", len(recs))
			}
			for _, r := range recs {
				if r.Status != 401 || r.Error != "http_status" {
					t.Errorf("record %s #%d: status %d error %q, want 401 http_status", r.Run, r.Index, r.Status, r.Error)
				}
			}
			// The engine columns are empty because nothing reached the
			// engine, not because the server lacks the metrics.
			if !strings.Contains(stdout, "the engine finished none of this run's 2 requests") || strings.Contains(stdout, "does not export") {
				t.Errorf("the table's notes should say the engine finished none of the requests:\n%s", stdout)
			}
			for _, r := range res.Runs {
				if r.Errors["http_status"] != r.Requests {
					t.Errorf("run %s errors %v, want http_status: %d", r.Name, r.Errors, r.Requests)
				}
			}
			assertNoSecret(t, wrong, stdout, stderr, dir)
			assertNoSecret(t, testKey, stdout, stderr, dir)
		})
	}
	// Without --model the first call is /v1/models: refused before the run,
	// saying why.
	code, _, stderr := runMain("run", "--base-url", e.BaseURL(), "--api-key-env", "SERVEBENCH_AUDIT_NO_KEY",
		"--requests", "1", "--out", t.TempDir(), "--quiet")
	if code != exitInvalidRun || !strings.Contains(stderr, "401") {
		t.Errorf("no key, no --model: exit %d, want 3 naming HTTP 401\nstderr:\n%s", code, stderr)
	}
	t.Run("hint", func(t *testing.T) {
		if !strings.Contains(stderr, "API key") || !strings.Contains(stderr, "SERVEBENCH_AUDIT_NO_KEY") {
			t.Errorf("the 401 does not say an API key is wanted, nor which variable was read:\n%s", stderr)
		}
	})
}

// TestSecretsReflected: a server (or proxy) that echoes the bearer token in
// its error body must not get it written to requests.jsonl or printed.
func TestSecretsReflected(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error": {"message": "invalid key in header %q", "code": 401}}`, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	t.Setenv(keyEnv, testKey)
	dir := t.TempDir()
	code, stdout, stderr := runMain("run", "--base-url", srv.URL, "--model", "m", "--api-key-env", keyEnv,
		"--requests", "2", "--warmup", "0", "--max-tokens", "8", "--stream", "both", "--out", dir, "--quiet")
	if code != exitInvalidRun {
		t.Errorf("exit %d, want 3 (every request failed)\nstderr:\n%s", code, stderr)
	}
	_, recs := loadSaved(t, dir)
	if len(recs) != 4 || recs[0].Status != 401 || !strings.Contains(recs[0].ErrorText, "401") {
		t.Fatalf("records %+v: want 4 with status 401 and the body kept (less the key)", recs)
	}
	assertNoSecret(t, testKey, stdout, stderr, dir)
}

// TestSecretsURLPassword: a password in --base-url or --metrics-url
// (http://user:pass@host, for a server behind basic auth) is a secret too.
func TestSecretsURLPassword(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 200 })
	const pw = "pw-SECRET-789"
	withPW := strings.Replace(e.BaseURL(), "http://", "http://bob:"+pw+"@", 1)
	dir := t.TempDir()
	args := []string{"run", "--base-url", withPW, "--metrics-url", withPW + "/metrics",
		"--requests", "2", "--max-tokens", "8", "--stream", "on", "--out", dir, "--quiet"}
	withArgs(t, args)
	code, stdout, stderr := runMain(args...)
	if code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	assertNoSecret(t, pw, stdout, stderr, dir)
}
