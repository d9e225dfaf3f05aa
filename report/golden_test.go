package report

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// checkGolden compares got with testdata/<name>.golden (t.Name() by default),
// or rewrites the file with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	if name == "" {
		name = t.Name()
	}
	path := filepath.Join("testdata", filepath.FromSlash(name)+".golden")
	if *update {
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
	if string(got) != string(want) {
		t.Errorf("output differs from %s (run go test -update if the change is intended)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}
