package reporttest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// CheckGolden compares got with the golden file at path or, with update
// (the caller's -update flag), rewrites the file from got.
func CheckGolden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run go test -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run go test -update if the change is intended)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}
