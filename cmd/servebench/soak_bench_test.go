//go:build linux

package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/launch/launchtest"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/scrape/promql/promtest"
)

var soakSizes = flag.String("soak.sizes", "10000,100000", "BenchmarkSoakRSS: request counts, comma-separated (1000000 takes about 4 min on 2 cores)")

// BenchmarkSoakRSS prints the peak RSS of `servebench run --interval 10s`
// (bounded memory: no record kept in memory) for each of -soak.sizes
// requests of 128 streamed tokens, 64 in flight, against the bundled
// engine (H200 profile, --speedup 1000) started once as its own process,
// so the figure is servebench's alone (wait4's ru_maxrss). It fails when
// the largest size's peak is over 1.5x the smallest's. Run it with
//
//	go test ./cmd/servebench -run '^$' -bench SoakRSS -benchtime 1x
func BenchmarkSoakRSS(b *testing.B) {
	bin, base := soakEngine(b)
	var peaks []float64
	for _, n := range soakCounts(b) {
		b.Run(fmt.Sprintf("requests=%d", n), func(b *testing.B) {
			for range b.N {
				peaks = append(peaks, soakRun(b, []string{bin}, base, n, "--interval", "10s").peakMiB)
			}
		})
	}
	checkFlat(b, "peak RSS", peaks)
}

// soakInMemoryMax is the largest size BenchmarkSoakRSSNoInterval runs
// keeping every record in memory: at about 5 KiB per record of 128 tokens,
// 1,000,000 would take gigabytes of a shared machine.
const soakInMemoryMax = 100_000

// standInRecordsInMemory, as this test binary's first argument, has it
// stand in for servebench with keepRecords set (no flag sets it): the
// in-memory path BenchmarkSoakRSSNoInterval measures beside the bounded
// default, in a process of its own as the real binary's runs are.
const standInRecordsInMemory = "stand-in-records-in-memory"

func init() {
	if len(os.Args) > 1 && os.Args[1] == standInRecordsInMemory {
		keepRecords = true
		os.Exit(Main(os.Args[2:], os.Stdout, os.Stderr))
	}
}

// recordsInMemory is the command line, up to `run`, of servebench keeping
// every record in memory: this test binary standing in for it (init).
func recordsInMemory(b *testing.B) []string {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	return []string{self, standInRecordsInMemory}
}

// BenchmarkSoakRSSNoInterval is BenchmarkSoakRSS without --interval (the
// default of every short run): peak RSS and CPU per request of the bounded
// default (bounded=1), and, up to soakInMemoryMax requests, of the same run
// keeping every record in memory, the path every run without windows took
// before (bounded=0: this test binary standing in for servebench, see
// standInRecordsInMemory), measured in the same benchmark against the same
// engine. It fails when the bounded peak at the largest size is over 1.5x
// the smallest's, or its CPU per request over 1.1x the in-memory path's at
// the same size (a tenth for the noise of a shared machine). Run it with
//
//	go test ./cmd/servebench -run '^$' -bench SoakRSSNoInterval -benchtime 1x -soak.sizes 10000,100000,1000000
func BenchmarkSoakRSSNoInterval(b *testing.B) {
	bin, base := soakEngine(b)
	var peaks []float64
	for _, n := range soakCounts(b) {
		var bounded soakFigures
		b.Run(fmt.Sprintf("requests=%d/bounded=1", n), func(b *testing.B) {
			for range b.N {
				bounded = soakRun(b, []string{bin}, base, n)
				peaks = append(peaks, bounded.peakMiB)
			}
		})
		if n > soakInMemoryMax {
			continue
		}
		b.Run(fmt.Sprintf("requests=%d/bounded=0", n), func(b *testing.B) {
			for range b.N {
				mem := soakRun(b, recordsInMemory(b), base, n)
				if bounded.cpuPerReq > 1.1*mem.cpuPerReq {
					b.Errorf("%d requests: bounded CPU %.3f ms/request, in memory %.3f: over 1.1x",
						n, 1e3*bounded.cpuPerReq, 1e3*mem.cpuPerReq)
				}
			}
		})
	}
	checkFlat(b, "bounded peak RSS", peaks)
}

// soakFigures are one soakRun's measurements of servebench's process.
type soakFigures struct {
	peakMiB   float64 // wait4's ru_maxrss
	cpuPerReq float64 // user + system seconds per request
}

// soakRun runs `servebench run` (servebench: the command line up to run)
// for n requests of 128 streamed tokens, 64 in flight, against base with
// extra flags, and reports its peak RSS, CPU per request and requests per
// second.
func soakRun(b *testing.B, servebench []string, base string, n int, extra ...string) soakFigures {
	b.Helper()
	args := append([]string{"run", "--base-url", base, "--requests", strconv.Itoa(n), "--concurrency", "64",
		"--max-tokens", "128", "--stream", "on", "--quiet", "--out", b.TempDir()}, extra...)
	run := exec.Command(servebench[0], slices.Concat(servebench[1:], args)...)
	start := time.Now()
	if msg, err := run.CombinedOutput(); err != nil {
		b.Fatalf("servebench run: %v\n%s", err, msg)
	}
	f := soakFigures{
		peakMiB:   float64(run.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024, // KiB on Linux
		cpuPerReq: (run.ProcessState.UserTime() + run.ProcessState.SystemTime()).Seconds() / float64(n),
	}
	b.ReportMetric(f.peakMiB, "peak-RSS-MiB")
	b.ReportMetric(1e3*f.cpuPerReq, "CPU-ms/request")
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "requests/s")
	return f
}

// checkFlat fails b when the last of peaks is over 1.5x the first: memory
// that grows with the run.
func checkFlat(b *testing.B, what string, peaks []float64) {
	if len(peaks) > 1 && peaks[len(peaks)-1] > 1.5*peaks[0] {
		b.Errorf("%s %.1f MiB at the largest size, %.1f MiB at the smallest: over 1.5x, memory grows with the run",
			what, peaks[len(peaks)-1], peaks[0])
	}
}

// BenchmarkReportRSS prints the peak RSS of `servebench report DIR` after
// kill -9 of `servebench run --interval 1s` (bounded memory) once half of
// each of -soak.sizes requests (128 streamed tokens, 64 in flight, the
// bundled engine as in BenchmarkSoakRSS) has completed: the rebuild from
// checkpoint.json and requests.jsonl (rebuild-peak-RSS-MiB), then `report
// DIR` again on the rebuilt directory (report-peak-RSS-MiB). A
// requests.jsonl over report.MaxChartBytes (from about 15,000 requests) is
// drawn from a sample (sampled 1): the per-request charts must exist and
// report.md name the sample. It fails when the largest size's peaks, either,
// are over 1.5x the smallest's: neither the rebuild nor the sampled charts
// may hold the records. Sizes under about 10,000 end before the first
// boundary and fail. Run it with
//
//	go test ./cmd/servebench -run '^$' -bench ReportRSS -benchtime 1x
func BenchmarkReportRSS(b *testing.B) {
	bin, base := soakEngine(b)
	var peaks [2][]float64 // rebuild, report
	for _, n := range soakCounts(b) {
		b.Run(fmt.Sprintf("requests=%d", n), func(b *testing.B) {
			for range b.N {
				dir := b.TempDir()
				// 1,000,000 requests take about 4 min on 2 cores.
				killWithin(b, 10*time.Minute, dir, func(cp *result.Results) bool { return lastRun(cp).Requests >= n/2 }, nil,
					"run", "--base-url", base, "--requests", strconv.Itoa(n), "--concurrency", "64",
					"--max-tokens", "128", "--stream", "on", "--interval", "1s", "--quiet", "--out", dir)
				fi, err := os.Stat(filepath.Join(dir, result.RequestsFile))
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(fi.Size())/(1<<20), "requests.jsonl-MiB")
				sampled := fi.Size() > report.MaxChartBytes
				if sampled {
					b.ReportMetric(1, "sampled")
				}
				for k, metric := range []string{"rebuild-peak-RSS-MiB", "report-peak-RSS-MiB"} {
					rep := exec.Command(bin, "report", dir)
					if msg, err := rep.CombinedOutput(); err != nil {
						b.Fatalf("servebench report: %v\n%s", err, msg)
					}
					mb := float64(rep.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024 // KiB on Linux
					b.ReportMetric(mb, metric)
					peaks[k] = append(peaks[k], mb)
				}
				md, err := os.ReadFile(filepath.Join(dir, result.ReportFile))
				if err != nil {
					b.Fatal(err)
				}
				for _, f := range []string{report.FileTimeline, report.FileTokens, report.FileCDF} {
					if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
						b.Errorf("%s: %v", f, err)
					}
				}
				if sampled != strings.Contains(string(md), "a uniform sample of") {
					b.Errorf("requests.jsonl of %d MiB: report.md names a sample: %v, want %v", fi.Size()>>20, !sampled, sampled)
				}
			}
		})
	}
	for k, what := range []string{"rebuild", "report"} {
		if p := peaks[k]; len(p) > 1 && p[len(p)-1] > 1.5*p[0] {
			b.Errorf("%s peak RSS %.1f MiB at the largest size, %.1f MiB at the smallest: over 1.5x, it holds the records", what, p[len(p)-1], p[0])
		}
	}
}

// soakEngine starts the bundled engine (H200 profile, --speedup 1000) as
// its own process, so that a peak RSS measured is servebench's alone, and
// returns servebench's binary and the engine's base URL; the engine stops
// when b ends.
func soakEngine(b *testing.B) (bin, base string) {
	bin = launchtest.Servebench(b)
	addr := promtest.FreeAddr(b)
	_, port, _ := strings.Cut(addr, ":")
	eng := exec.Command(bin, "engine", "--port", port, "--speedup", "1000", "--gpu", "h200-141gb")
	if err := eng.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = eng.Process.Kill(); _ = eng.Wait() })
	base = "http://" + addr
	waitHealthy(b, base)
	return bin, base
}

// soakCounts are -soak.sizes' request counts.
func soakCounts(b *testing.B) []int {
	var ns []int
	for _, s := range strings.Split(*soakSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			b.Fatalf("-soak.sizes %q: expected request counts", *soakSizes)
		}
		ns = append(ns, n)
	}
	return ns
}
