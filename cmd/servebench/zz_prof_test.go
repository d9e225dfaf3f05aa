//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/launch/launchtest"
	"github.com/servebench/servebench/scrape/promql/promtest"
)

func TestZZProf(t *testing.T) {
	n := os.Getenv("ZZPROF_N")
	if n == "" {
		t.Skip()
	}
	bin := launchtest.Servebench(t)
	addr := promtest.FreeAddr(t)
	_, port, _ := strings.Cut(addr, ":")
	eng := exec.Command(bin, "engine", "--port", port, "--speedup", "1000", "--gpu", "h200-141gb")
	if err := eng.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = eng.Process.Kill(); _ = eng.Wait() }()
	base := "http://" + addr
	waitHealthy(t, base)
	done := make(chan struct{})
	go func() {
		k := 0
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Second):
			}
			k++
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Printf("t=%3ds heapalloc=%.1fMiB heapinuse=%.1fMiB sys=%.1fMiB stack=%.1fMiB goroutines=%d\n", k*5, float64(ms.HeapAlloc)/(1<<20), float64(ms.HeapInuse)/(1<<20), float64(ms.Sys)/(1<<20), float64(ms.StackInuse)/(1<<20), runtime.NumGoroutine())
			if k%4 == 0 {
				f, _ := os.Create(filepath.Join("/tmp/soakprof", fmt.Sprintf("heap-%s-%03d.pb.gz", n, k*5)))
				pprof.WriteHeapProfile(f)
				f.Close()
			}
		}
	}()
	out := t.TempDir()
	code, _, errOut := runMain("run", "--base-url", base, "--requests", n, "--concurrency", "64",
		"--max-tokens", "128", "--stream", "on", "--interval", "10s", "--quiet", "--out", out)
	close(done)
	_ = strconv.Itoa
	if code != 0 {
		t.Fatal(errOut)
	}
}
