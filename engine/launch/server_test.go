package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// alive reports whether pid is a live process: it exists (kill -0) and, on
// Linux, is not a zombie left for a PID 1 that never reaps.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	if _, state, ok := procStat(pid); ok && (state == 'Z' || state == 'X') {
		return false
	}
	return true
}

// phaseRecorder collects progress callbacks.
type phaseRecorder struct {
	mu     sync.Mutex
	phases []string
	at     map[string]time.Duration
}

func (r *phaseRecorder) record(phase string, at time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = map[string]time.Duration{}
	}
	r.phases = append(r.phases, phase)
	r.at[phase] = at
}

func startFake(t *testing.T, spec Spec) *Server {
	t.Helper()
	s, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

func assertGone(t *testing.T, s *Server) {
	t.Helper()
	select {
	case <-s.Exited():
	default:
		t.Fatalf("server pid %d has not exited", s.PID())
	}
	if alive(s.PID()) {
		t.Errorf("server pid %d still alive", s.PID())
	}
	if groupAlive(s.PID()) {
		t.Errorf("process group %d still has live processes", s.PID())
	}
}

func TestReadyPathPhasesInOrder(t *testing.T) {
	spec := fakeSpec(t, "vllm", "LAUNCH_FAKE_LOAD=400ms", "LAUNCH_FAKE_INIT=300ms")
	s := startFake(t, spec)
	var rec phaseRecorder
	st, err := s.WaitReady(context.Background(), rec.record)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(rec.phases, " -> "), strings.Join(eagerPhases(), " -> "); got != want {
		t.Errorf("phases = %s\nwant     %s", got, want)
	}
	for i := 1; i < len(rec.phases); i++ {
		if rec.at[rec.phases[i]] < rec.at[rec.phases[i-1]] {
			t.Errorf("%s at %v before %s at %v", rec.phases[i], rec.at[rec.phases[i]], rec.phases[i-1], rec.at[rec.phases[i-1]])
		}
	}
	// The fake loads 400 ms, then inits 300 ms before listening.
	if st.WeightsLoadedAtS == nil || *st.WeightsLoadedAtS < 0.4 {
		t.Errorf("weights_loaded_at_s = %v, want >= 0.4", st.WeightsLoadedAtS)
	}
	if st.PortOpenS == nil || *st.PortOpenS < 0.7 || *st.PortOpenS < *st.WeightsLoadedAtS {
		t.Errorf("port_open_s = %v, want >= 0.7 and after the weights", st.PortOpenS)
	}
	if *st.HealthOKS < *st.PortOpenS || *st.ModelListedS < *st.HealthOKS || *st.FirstTokenS < *st.ModelListedS {
		t.Errorf("phase times out of order: %v %v %v %v", *st.PortOpenS, *st.HealthOKS, *st.ModelListedS, *st.FirstTokenS)
	}
	if st.WeightsLoadS == nil || *st.WeightsLoadS != 0.4 || st.KVCacheTokens == nil || *st.KVCacheTokens != 77744 ||
		st.MaxConcurrency == nil || *st.MaxConcurrency != 18.98 || st.ModelGiB == nil || *st.ModelGiB != 5.2012 ||
		st.InitEngineS == nil || *st.InitEngineS != 0.3 {
		t.Errorf("log facts: weights %v kv %v conc %v gib %v init %v", st.WeightsLoadS, st.KVCacheTokens, st.MaxConcurrency, st.ModelGiB, st.InitEngineS)
	}
	if st.PollIntervalS == nil || *st.PollIntervalS != 0.02 {
		t.Errorf("poll_interval_s = %v, want 0.02", st.PollIntervalS)
	}
	if s.Model() != "fake/model" || !strings.HasPrefix(s.BaseURL(), "http://127.0.0.1:") {
		t.Errorf("model %q, base URL %q", s.Model(), s.BaseURL())
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, s)
	if s.ExitErr() != nil {
		t.Errorf("ExitErr after Stop = %v, want nil (a requested exit)", s.ExitErr())
	}
	// SIGINT was enough: the fake logged its shutdown, and the log file has everything.
	b, err := os.ReadFile(spec.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Loading weights took 0.40 seconds", "Starting vLLM API server 0 on", "Shutting down (interrupt)"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("server.log lacks %q:\n%s", want, b)
		}
	}
}

func TestHealth503DuringLoad(t *testing.T) {
	s := startFake(t, fakeSpec(t, "503", "LAUNCH_FAKE_LOAD=500ms", "LAUNCH_FAKE_INIT=200ms"))
	st, err := s.WaitReady(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The port opens at once; /health says 503 until load and init are done.
	if !(*st.PortOpenS < *st.WeightsLoadedAtS && *st.WeightsLoadedAtS < *st.HealthOKS) {
		t.Errorf("want port open (%.3f) < weights loaded (%.3f) < health OK (%.3f)", *st.PortOpenS, *st.WeightsLoadedAtS, *st.HealthOKS)
	}
	if *st.HealthOKS < 0.7 {
		t.Errorf("health_ok_s = %.3f, want >= 0.7 (load + init)", *st.HealthOKS)
	}
}

func TestFixedBaseURLAndChatFallback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	spec := fakeSpec(t, "vllm", "LAUNCH_FAKE_PORT="+strconv.Itoa(port), "LAUNCH_FAKE_CHATONLY=1")
	spec.BaseURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	spec.Model = "fake/model"
	s := startFake(t, spec)
	st, err := s.WaitReady(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.FirstTokenS == nil {
		t.Error("first_token_s absent after falling back to chat")
	}
}

func TestNoModelsRouteSkipsThePhase(t *testing.T) {
	spec := fakeSpec(t, "vllm", "LAUNCH_FAKE_LOAD=10ms", "LAUNCH_FAKE_INIT=10ms", "LAUNCH_FAKE_NOMODELS=1")
	spec.Model = "fake/model" // the completion still needs a name
	s := startFake(t, spec)
	var rec phaseRecorder
	st, err := s.WaitReady(context.Background(), rec.record)
	if err != nil {
		t.Fatal(err)
	}
	if st.ModelListedS != nil || st.FirstTokenS == nil || slices.Contains(rec.phases, PhaseModelListed) {
		t.Errorf("model_listed_s %v, first_token_s %v, phases %v: want the listing phase absent, the rest passed",
			st.ModelListedS, st.FirstTokenS, rec.phases)
	}
}

func TestExitsAtOnce(t *testing.T) {
	s := startFake(t, fakeSpec(t, "exit"))
	_, err := s.WaitReady(context.Background(), nil)
	if !errors.Is(err, ErrExited) {
		t.Fatalf("err = %v, want ErrExited", err)
	}
	for _, want := range []string{"exit status 3", "before it was ready", "CUDA out of memory", "last 1 lines of the server log"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if !errors.Is(s.ExitErr(), ErrExited) {
		t.Errorf("ExitErr = %v", s.ExitErr())
	}
	assertGone(t, s)
}

func TestNeverReadyTimesOutAndLeavesNoOrphan(t *testing.T) {
	spec := fakeSpec(t, "never")
	spec.ReadyTimeout = 1500 * time.Millisecond
	spec.StopGrace = 500 * time.Millisecond
	s := startFake(t, spec)
	start := time.Now()
	_, err := s.WaitReady(context.Background(), nil)
	if !errors.Is(err, ErrNotReady) {
		t.Fatalf("err = %v, want ErrNotReady", err)
	}
	for _, want := range []string{"ready timeout", "Waiting for a GPU that never comes", "last probe:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	m := regexp.MustCompile(`grandchild pid (\d+)`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("no grandchild pid in the log tail:\n%v", err)
	}
	grandchild, _ := strconv.Atoi(m[1])
	// WaitReady stopped the server: the leader ignores SIGINT and exits on
	// SIGTERM; the grandchild ignores both and needs SIGKILL.
	assertGone(t, s)
	if alive(grandchild) {
		t.Errorf("grandchild %d survived", grandchild)
	}
	if el := time.Since(start); el < 2*spec.StopGrace {
		t.Errorf("stopped after %v: expected SIGINT and SIGTERM waits first", el)
	}
}

func TestKilledMidRun(t *testing.T) {
	s := startFake(t, fakeSpec(t, "vllm", "LAUNCH_FAKE_LOAD=50ms", "LAUNCH_FAKE_INIT=50ms"))
	if _, err := s.WaitReady(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if s.ExitErr() != nil {
		t.Fatalf("ExitErr while running = %v", s.ExitErr())
	}
	if err := syscall.Kill(s.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("Exited did not fire within 5 s of SIGKILL")
	}
	err := s.ExitErr()
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "signal: killed") {
		t.Errorf("ExitErr = %v, want ErrExited with 'signal: killed'", err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Stop after death: %v", err)
	}
}

func TestDiesOnItsOwnMidRun(t *testing.T) {
	s := startFake(t, fakeSpec(t, "die", "LAUNCH_FAKE_LOAD=50ms", "LAUNCH_FAKE_INIT=50ms", "LAUNCH_FAKE_DIE=400ms"))
	if _, err := s.WaitReady(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("Exited did not fire")
	}
	if err := s.ExitErr(); !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "exit status 7") {
		t.Errorf("ExitErr = %v, want ErrExited with exit status 7", err)
	}
	s.waitLogDrained(time.Second)
	if tail := strings.Join(s.LogTail(2), "\n"); !strings.Contains(tail, "Segmentation fault") {
		t.Errorf("log tail lacks the last words: %q", tail)
	}
}

func TestContextCancelStopsChild(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, fakeSpec(t, "vllm", "LAUNCH_FAKE_LOAD=50ms", "LAUNCH_FAKE_INIT=50ms"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	if _, err := s.WaitReady(ctx, nil); err != nil {
		t.Fatal(err)
	}
	cancel() // no Stop call: the context alone must end the child
	select {
	case <-s.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("child still running 5 s after its context was cancelled")
	}
	if err := s.Stop(); err != nil { // waits for the Stop the cancel started
		t.Fatal(err)
	}
	assertGone(t, s)
	if s.ExitErr() != nil {
		t.Errorf("ExitErr = %v, want nil after a cancel-driven stop", s.ExitErr())
	}
}

func TestContextCancelDuringWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, fakeSpec(t, "vllm", "LAUNCH_FAKE_LOAD=10s"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err = s.WaitReady(ctx, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	assertGone(t, s)
}

func TestFailFastProbes(t *testing.T) {
	cases := []struct {
		name  string
		mut   func(*Spec)
		env   []string
		wants []string
	}{
		{"model not served", func(s *Spec) { s.Model = "other/model" }, nil,
			[]string{`model "other/model" is not served`, "fake/model"}},
		{"health path missing", nil, []string{"LAUNCH_FAKE_HEALTH=404"},
			[]string{"GET /health answered HTTP 404", "set the health path"}},
		{"unauthorized", nil, []string{"LAUNCH_FAKE_HEALTH=401"},
			[]string{"HTTP 401", "API key"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := fakeSpec(t, "vllm", append([]string{"LAUNCH_FAKE_LOAD=10ms", "LAUNCH_FAKE_INIT=10ms"}, c.env...)...)
			if c.mut != nil {
				c.mut(&spec)
			}
			s := startFake(t, spec)
			start := time.Now()
			_, err := s.WaitReady(context.Background(), nil)
			if !errors.Is(err, ErrNotReady) {
				t.Fatalf("err = %v, want ErrNotReady", err)
			}
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if time.Since(start) > 10*time.Second {
				t.Errorf("took %v: should fail at the first answer, not at the timeout", time.Since(start))
			}
			assertGone(t, s)
		})
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := Start(context.Background(), Spec{Command: []string{"/nonexistent/vllm", "serve"}}); err == nil ||
		!strings.Contains(err.Error(), "/nonexistent/vllm") {
		t.Errorf("missing program: err = %v", err)
	}
	if _, err := Start(context.Background(), Spec{}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty command: err = %v", err)
	}
	if _, err := Start(context.Background(), Spec{Command: []string{"true"}, BaseURL: "localhost:8000"}); err == nil ||
		!strings.Contains(err.Error(), `"localhost:8000"`) {
		t.Errorf("bad base URL: err = %v", err)
	}
	if _, err := Start(context.Background(), Spec{Command: []string{"true"}, Env: []string{"NOEQUALS"}}); err == nil {
		t.Error("bad env entry accepted")
	}
}

func TestEnvAndDirPassThrough(t *testing.T) {
	dir := t.TempDir()
	spec := Spec{Command: []string{"sh", "-c", `echo "dir=$(pwd) x=$SB_X path=${PATH:+set}"`}, Dir: dir, Env: []string{"SB_X=42"}}
	s, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	<-s.Exited()
	s.Stop()
	got := strings.Join(s.LogTail(5), "\n")
	if !strings.Contains(got, "dir="+dir) || !strings.Contains(got, "x=42") || !strings.Contains(got, "path=set") {
		t.Errorf("output %q: want the working dir, the added variable and the inherited PATH", got)
	}
	if !errors.Is(s.ExitErr(), ErrExited) || !strings.Contains(s.ExitErr().Error(), "exit status 0") {
		t.Errorf("ExitErr = %v: an unrequested exit, even with status 0, is a death", s.ExitErr())
	}
}
