package launchtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Pkg is the import path Servebench builds.
const Pkg = "github.com/servebench/servebench/cmd/servebench"

var (
	once sync.Once
	dir  string // temporary directory holding the binary; "" until built
	path string
	err  error
)

// Servebench returns the path of a servebench binary built from this tree
// with `go build`, once per test binary, and only when a test asks for it
// (the build costs seconds). Under -short it skips tb: every caller starts
// processes, which -short leaves out. A failed build fails every caller.
// TestMain calls Run (or Cleanup) to remove the binary.
func Servebench(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("builds and starts the servebench binary; skipped with -short")
	}
	once.Do(build)
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

func build() {
	dir, err = os.MkdirTemp("", "servebench-test-bin")
	if err != nil {
		return
	}
	path = filepath.Join(dir, "servebench")
	if out, berr := exec.Command("go", "build", "-o", path, Pkg).CombinedOutput(); berr != nil {
		err = fmt.Errorf("go build %s: %v\n%s", Pkg, berr, out)
	}
}

// Cleanup removes the binary Servebench built, if any; call it from
// TestMain after m.Run (a test's TempDir would not outlive the test that
// built it, and the binary is shared by all).
func Cleanup() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// Run runs m's tests and then Cleanup, returning the exit code for
// TestMain to pass to os.Exit.
func Run(m *testing.M) int {
	defer Cleanup()
	return m.Run()
}
