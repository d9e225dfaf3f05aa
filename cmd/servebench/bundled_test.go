package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
)

// TestBundledRecordsWhatRuns: results.json's server.bundled, report.md and
// compare name the profiles the engine runs, whichever way --engine-arg
// gave them (issue 20: --engine-arg=--gpu=X was recorded as the default).
func TestBundledRecordsWhatRuns(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		gpu, model string
	}{
		{"engine-arg with =", []string{"--engine-arg=--gpu=a100-40gb", "--engine-arg=--model=llama-3.1-8b-instruct"},
			"a100-40gb", "llama-3.1-8b-instruct"},
		{"engine-arg as separate words", []string{"--engine-arg", "--gpu", "--engine-arg", "h100-80gb",
			"--engine-arg", "--model", "--engine-arg", "Qwen/Qwen2.5-7B-Instruct"}, "h100-80gb", "qwen2.5-7b-instruct"},
		{"server bundled, last flag wins", []string{"--server", "bundled", "--engine-arg=--gpu=h100-80gb",
			"--engine-arg=--gpu=a100-80gb"}, "a100-80gb", "qwen2.5-7b-instruct-awq"},
	}
	dirs := make([]string, len(cases))
	for i, c := range cases {
		dirs[i] = t.TempDir()
		t.Run(c.name, func(t *testing.T) {
			dir := dirs[i]
			args := append([]string{"run", "--speedup", "50", "--concurrency", "8", "--requests", "8", "--max-tokens", "8", "--stream", "on",
				"--out", dir, "--quiet"}, c.args...)
			code, out, errOut := runMain(args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			res, _ := loadSaved(t, dir)
			b := res.Server.Bundled
			if b == nil || b.GPU != c.gpu || b.Model != c.model || b.Speedup != 50 {
				t.Fatalf("server.bundled = %+v, want %s / %s at 50x", b, c.gpu, c.model)
			}
			log, _ := os.ReadFile(filepath.Join(dir, result.ServerLog))
			if !strings.Contains(string(log), c.gpu) {
				t.Errorf("server.log does not name %s: the engine ran something else", c.gpu)
			}
			md, _ := os.ReadFile(filepath.Join(dir, result.ReportFile))
			if want := "emulating " + c.gpu + " running " + c.model; !strings.Contains(string(md), want) {
				t.Errorf("report.md lacks %q", want)
			}
		})
	}
	if t.Failed() {
		return
	}
	code, out, errOut := runMain("compare", "--force", dirs[0], dirs[1])
	for _, want := range []string{"a100-40gb", "h100-80gb", "llama-3.1-8b-instruct"} {
		if !strings.Contains(out+errOut, want) {
			t.Errorf("compare (exit %d) does not name %s:\n%s\n%s", code, want, out, errOut)
		}
	}
}

// TestStartupRecordsWhatRuns: startup's results.json reads its engine
// command line as the engine does, --engine-arg after --gpu.
func TestStartupRecordsWhatRuns(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runMain("startup", "--quiet", "--speedup", "50", "--gpu", "a100-80gb",
		"--engine-arg=--gpu=h100-80gb", "--engine-arg", "--model", "--engine-arg", "llama-3.1-8b-instruct", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	res, _ := loadSaved(t, dir)
	if b := res.Server.Bundled; b == nil || b.GPU != "h100-80gb" || b.Model != "llama-3.1-8b-instruct" || b.Speedup != 50 {
		t.Errorf("server.bundled = %+v, want h100-80gb / llama-3.1-8b-instruct at 50x", b)
	}
}
