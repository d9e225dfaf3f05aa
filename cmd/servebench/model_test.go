package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/gguf"
)

// TestModelTiny: the command writes a GGUF and a Modelfile naming it, the
// same bytes for the same flags, and refuses bad flags with exit 2.
func TestModelTiny(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, out := range []string{a, b} {
		code, stdout, stderr := runMain("model", "tiny", "--out", out, "--seed", "3")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(stdout, "word soup") || !strings.Contains(stdout, "never emits end-of-sequence") {
			t.Errorf("stdout does not say what the model is: %s", stdout)
		}
	}
	ga, _ := os.ReadFile(filepath.Join(a, "tiny.gguf"))
	gb, _ := os.ReadFile(filepath.Join(b, "tiny.gguf"))
	if len(ga) == 0 || !bytes.Equal(ga, gb) {
		t.Errorf("same flags: %d and %d bytes, equal %v", len(ga), len(gb), bytes.Equal(ga, gb))
	}
	if err := gguf.CheckFile(filepath.Join(a, "tiny.gguf")); err != nil {
		t.Error(err)
	}
	mf, _ := os.ReadFile(filepath.Join(a, "Modelfile"))
	if !strings.Contains(string(mf), "FROM ./tiny.gguf") {
		t.Errorf("Modelfile does not name the GGUF:\n%s", mf)
	}
	for _, args := range [][]string{
		{"model", "tiny"},
		{"model", "tiny", "--out", a, "--size", "huge"},
	} {
		if code, _, stderr := runMain(args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitUsage, stderr)
		}
	}
}
