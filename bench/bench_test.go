package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine/launch/launchtest"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// BenchmarkNonStreamingRate measures how many non-streaming requests per
// second the harness drives through the bundled engine at its fastest
// settings (--speedup 1000, max_tokens 1), closed loop at several
// concurrencies. The figure is the harness plus engine on the same cores;
// compare it with hey/vegeta against the same engine process (see the
// README) rather than across machines.
func BenchmarkNonStreamingRate(b *testing.B) {
	e := simtest.Start(b, func(o *sim.Options) { o.Speedup = 1000 })
	for _, c := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			cl := client.New(client.Options{BaseURL: e.BaseURL(), MaxConns: c})
			defer cl.Close()
			r := &Runner{Client: cl}
			spec := RunSpec{Name: "bench", Workload: workload.Workload{Mode: workload.ModeConcurrent, Concurrency: c, Requests: b.N},
				Request: RequestSpec{Model: e.ServedModelName(), MaxTokens: 1, ExactLength: true}}
			b.ReportAllocs()
			b.ResetTimer()
			run, _, err := r.Run(context.Background(), spec)
			b.StopTimer()
			if err != nil || run.OK != b.N {
				b.Fatalf("ok %d of %d: %v (errors %v)", run.OK, b.N, err, run.Errors)
			}
			b.ReportMetric(float64(run.OK)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

// cannedDoer answers every request at once with a fixed 256-event trace:
// what is left is the harness's own cost per request.
type cannedDoer struct{ tr client.Trace }

func (c *cannedDoer) Do(context.Context, *client.Request) client.Trace {
	tr := c.tr
	tr.Start = time.Now()
	return tr
}

// BenchmarkRunnerOverhead measures the Runner's cost per request without a
// server: building the request, keeping the record, writing requests.jsonl
// (256 content events per line) and the final summaries. It bounds how fast
// servebench can drive any server.
func BenchmarkRunnerOverhead(b *testing.B) {
	tr := client.Trace{Stream: true, Status: 200, OutputTokens: 256, TokensFrom: "usage",
		FirstByte: time.Millisecond, FirstToken: 2 * time.Millisecond, FirstVisible: 2 * time.Millisecond, Done: 3 * time.Second}
	for i := range 256 {
		tr.Events.Append(client.Event{At: time.Duration(i+2) * time.Millisecond, Tokens: 1})
	}
	for _, c := range []int{1, 16} {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			rw, err := store.CreateRecordFile(filepath.Join(b.TempDir(), "requests.jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			r := &Runner{Client: &cannedDoer{tr: tr}, Records: rw}
			spec := RunSpec{Name: "bench", Workload: workload.Workload{Mode: workload.ModeConcurrent, Concurrency: c, Requests: b.N},
				Request: RequestSpec{Model: "m", MaxTokens: 256, Stream: true}}
			b.ReportAllocs()
			b.ResetTimer()
			run, _, err := r.Run(context.Background(), spec)
			if cerr := rw.Close(); err != nil || cerr != nil || run.OK != b.N {
				b.Fatalf("ok %d of %d: %v %v", run.OK, b.N, err, cerr)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

// BenchmarkRateVsHey compares the non-streaming request rate servebench
// drives with hey's (github.com/rakyll/hey, a Go load generator on
// net/http), both against one bundled engine child process at its fastest
// settings (H200 profile, --speedup 100000, max_tokens 1), closed loop, at
// several concurrencies. Rounds alternate hey and servebench so host noise
// falls on both; the ratio is the median of the paired ratios.
//
// A third client, floor, is the least any HTTP/1.1 client can do: canned
// request bytes on keep-alive connections, the response head parsed, the
// body discarded, nothing recorded. floor-ratio (floor over hey) bounds
// the ratio any harness can reach against this engine on this host: the
// engine shares the cores with the client, so past a few requests in
// flight the rate is 2 cores over engine plus client CPU per request, and
// the engine's share does not shrink with a leaner client. Skipped
// without hey on PATH or in $GOPATH/bin:
//
//	go install github.com/rakyll/hey@latest
//	go test ./bench -run '^$' -bench RateVsHey -benchtime 1x
func BenchmarkRateVsHey(b *testing.B) {
	hey := findHey()
	if hey == "" {
		b.Skip("hey not found on PATH or in $GOPATH/bin: go install github.com/rakyll/hey@latest")
	}
	ctx := context.Background()
	srv, err := StartServer(ctx, ServerOptions{Self: launchtest.Servebench(b), Speedup: 100000,
		EngineArgs: []string{"--gpu", "h200-141gb"}, ReadyTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	const requests, rounds = 10240, 3 // a multiple of every c: hey sends n/c per worker
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"max_tokens":1,"min_tokens":1,"ignore_eos":true,"stream":false}`,
		srv.Model, workload.DefaultPrompt)
	enginePID := srv.proc.PID()
	for _, c := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			var ours, theirs, floors, ratios, floorRatios, ourCPU, heyCPU, floorCPU, engCPU []float64
			perReq := func(d time.Duration) float64 { return float64(d.Microseconds()) / requests }
			for range rounds * b.N {
				e0 := processCPU(b, enginePID)
				h, hcpu, err := heyRate(hey, srv.BaseURL+"/v1/chat/completions", body, c, requests)
				if err != nil {
					b.Fatal(err)
				}
				e1 := processCPU(b, enginePID)
				// As `servebench run` does: a request timeout, and a requests.jsonl line per request.
				cl := client.New(client.Options{BaseURL: srv.BaseURL, MaxConns: c, RequestTimeout: 10 * time.Minute})
				rw, err := store.CreateRecordFile(filepath.Join(b.TempDir(), "requests.jsonl"))
				if err != nil {
					b.Fatal(err)
				}
				r := &Runner{Client: cl, Records: rw}
				spec := RunSpec{Name: "rate", Workload: workload.Workload{Mode: workload.ModeConcurrent, Concurrency: c, Requests: requests},
					Request: RequestSpec{Model: srv.Model, MaxTokens: 1, ExactLength: true}}
				s0 := processCPU(b, os.Getpid())
				run, _, err := r.Run(ctx, spec)
				if cerr := rw.Close(); err == nil {
					err = cerr
				}
				s1 := processCPU(b, os.Getpid())
				e2 := processCPU(b, enginePID)
				cl.Close()
				if err != nil || run.OK != requests {
					b.Fatalf("servebench: ok %d of %d: %v (errors %v)", run.OK, requests, err, run.Errors)
				}
				f0 := processCPU(b, os.Getpid())
				f, err := floorRate(srv.BaseURL, "/v1/chat/completions", body, c, requests)
				if err != nil {
					b.Fatal(err)
				}
				floorCPU = append(floorCPU, perReq(processCPU(b, os.Getpid())-f0))
				s := float64(run.OK) / run.DurationS
				ours, theirs, ratios = append(ours, s), append(theirs, h), append(ratios, s/h)
				floors, floorRatios = append(floors, f), append(floorRatios, f/h)
				ourCPU, heyCPU = append(ourCPU, perReq(s1-s0)), append(heyCPU, perReq(hcpu))
				engCPU = append(engCPU, perReq(e1-e0), perReq(e2-e1))
			}
			b.ReportMetric(stats.Summarize(ours).Median, "servebench-req/s")
			b.ReportMetric(stats.Summarize(theirs).Median, "hey-req/s")
			b.ReportMetric(stats.Summarize(ratios).Median, "ratio")
			b.ReportMetric(stats.Summarize(floors).Median, "floor-req/s")
			b.ReportMetric(stats.Summarize(floorRatios).Median, "floor-ratio")
			b.ReportMetric(stats.Summarize(ourCPU).Median, "servebench-cpu-us/req")
			b.ReportMetric(stats.Summarize(heyCPU).Median, "hey-cpu-us/req")
			b.ReportMetric(stats.Summarize(floorCPU).Median, "floor-cpu-us/req")
			b.ReportMetric(stats.Summarize(engCPU).Median, "engine-cpu-us/req")
		})
	}
}

// floorRate is BenchmarkRateVsHey's floor client: c connections, each
// sending the same canned request and reading the answer, n in all.
func floorRate(baseURL, path, body string, c, n int) (float64, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return 0, err
	}
	req := []byte("POST " + path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	probe, _ := http.NewRequest(http.MethodPost, baseURL+path, nil)
	var left atomic.Int64
	left.Store(int64(n))
	errs := make(chan error, c)
	start := time.Now()
	for range c {
		go func() {
			errs <- func() error {
				conn, err := net.Dial("tcp", u.Host)
				if err != nil {
					return err
				}
				defer conn.Close()
				br := bufio.NewReader(conn)
				for left.Add(-1) >= 0 {
					if _, err := conn.Write(req); err != nil {
						return err
					}
					resp, err := http.ReadResponse(br, probe)
					if err != nil {
						return err
					}
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != http.StatusOK {
						return fmt.Errorf("floor client: HTTP %d, %v", resp.StatusCode, err)
					}
				}
				return nil
			}()
		}()
	}
	for range c {
		if err := <-errs; err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// processCPU is a process's user+system CPU time so far, from
// /proc/PID/stat (clock ticks of 10 ms).
func processCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the parenthesised command name: state is field 3, so
	// utime (14) and stime (15) are the 12th and 13th after it.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func findHey() string {
	if p, err := exec.LookPath("hey"); err == nil {
		return p
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return ""
	}
	for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
		if p := filepath.Join(dir, "bin", "hey"); fileExists(p) {
			return p
		}
	}
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// heyRate runs hey and returns the "Requests/sec" it printed and the CPU
// time it used, after checking that every answer was a 200.
func heyRate(hey, url, body string, c, n int) (float64, time.Duration, error) {
	cmd := exec.Command(hey, "-n", strconv.Itoa(n), "-c", strconv.Itoa(c), "-m", "POST",
		"-T", "application/json", "-d", body, url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("hey: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("[200]\t%d responses", n)) {
		return 0, 0, fmt.Errorf("hey: not all %d answers were 200:\n%s", n, out)
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	for line := range strings.SplitSeq(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Requests/sec:"); ok {
			rate, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return rate, cpu, err
		}
	}
	return 0, 0, fmt.Errorf("hey printed no Requests/sec:\n%s", out)
}
