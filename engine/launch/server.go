package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Sentinels for the conditions callers test with errors.Is (cmd maps both to exit 3).
var (
	// ErrExited: the server process exited (before it was ready, or mid-run).
	ErrExited = errors.New("server exited")
	// ErrNotReady: the server did not become ready (timeout, or a readiness
	// probe failed in a way waiting cannot fix).
	ErrNotReady = errors.New("server not ready")
)

// tailLines is how many log lines a Server keeps in memory.
const tailLines = 200

// Server is a running server process. Its methods are safe for concurrent use.
type Server struct {
	spec    Spec
	cmd     *exec.Cmd
	pid     int // also the process group id (Setpgid)
	spawned time.Time

	logFile *os.File      // nil when Spec.LogPath is ""
	logW    *redactWriter // writes logFile, secrets replaced; nil with logFile
	secrets []string      // the API key and --api-key values: kept out of the log and its tail
	pipe    *os.File      // read end of the child's stdout+stderr
	tail    *ring

	mu     sync.Mutex
	parser *Parser
	model  string // set by WaitReady

	exited    chan struct{} // closed when the process has exited and been reaped
	exitErr   error         // set before exited is closed; nil when the exit followed Stop
	state     *os.ProcessState
	logDone   chan struct{} // closed when the log reader has seen EOF
	stopping  chan struct{} // closed when Stop starts
	stopOnce  sync.Once
	stopErr   error
	closeOnce sync.Once
}

// Start spawns spec.Command in its own process group with stdout and stderr
// captured to spec.LogPath and parsed live. Contract: the server lives until
// Stop is called or ctx is done, whichever comes first; a done ctx leads to
// Stop (so cancelling servebench's context, as its SIGINT handler does, never
// leaves a child). On Linux the child also gets SIGKILL if servebench itself
// dies without stopping it (PR_SET_PDEATHSIG). Callers should still defer Stop.
func Start(ctx context.Context, spec Spec) (*Server, error) {
	spec = spec.withDefaults()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &Server{
		spec:     spec,
		tail:     newRing(tailLines),
		parser:   NewParser(),
		exited:   make(chan struct{}),
		logDone:  make(chan struct{}),
		stopping: make(chan struct{}),
	}
	if spec.LogPath != "" {
		if err := os.MkdirAll(filepath.Dir(spec.LogPath), 0o755); err != nil {
			return nil, fmt.Errorf("server log %s: %w", spec.LogPath, err)
		}
		f, err := os.Create(spec.LogPath)
		if err != nil {
			return nil, fmt.Errorf("server log: %w", err)
		}
		s.logFile = f
	}
	s.secrets = secretsOf(spec)
	if s.logFile != nil {
		s.logW = newRedactWriter(s.logFile, s.secrets)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		s.closeLog()
		return nil, fmt.Errorf("server output pipe: %w", err)
	}
	s.pipe = pr

	cmd := exec.Command(spec.Command[0], spec.Command[1:]...)
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Dir = spec.Dir
	cmd.Stdout, cmd.Stderr = pw, pw // one pipe keeps stdout and stderr in order
	cmd.SysProcAttr = sysProcAttr()
	s.cmd = cmd

	started := make(chan error, 1)
	go s.run(started)
	if err := <-started; err != nil {
		pw.Close()
		pr.Close()
		s.closeLog()
		return nil, fmt.Errorf("starting server %q: %w", spec.Command[0], err)
	}
	pw.Close() // the child holds its own copy; EOF comes when the group closes it
	go s.readLog()
	go func() {
		select {
		case <-ctx.Done():
			s.Stop()
		case <-s.exited:
		}
	}()
	return s, nil
}

// run starts the process and waits for it on one locked OS thread: Linux's
// parent-death signal fires when the thread that forked exits, so that thread
// must live as long as the child.
func (s *Server) run(started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := s.cmd.Start(); err != nil {
		started <- err
		return
	}
	s.spawned = time.Now()
	s.pid = s.cmd.Process.Pid
	started <- nil
	err := s.cmd.Wait()
	s.state = s.cmd.ProcessState
	select {
	case <-s.stopping:
		// Exit requested by Stop: not a failure.
	default:
		if err == nil {
			err = errors.New("exit status 0")
		}
		// %w twice: callers can also errors.As the *exec.ExitError (its code).
		s.exitErr = fmt.Errorf("%w: %w (pid %d, after %.2f s)", ErrExited, err, s.pid, time.Since(s.spawned).Seconds())
	}
	close(s.exited)
}

// readLog copies the child's output to the log file and parses it line by line.
func (s *Server) readLog() {
	defer close(s.logDone)
	defer s.closeLog()
	var sp lineSplitter
	emit := func(line []byte, no int) {
		at := time.Since(s.spawned)
		str := redactString(string(line), s.secrets)
		s.tail.add(str)
		s.mu.Lock()
		s.parser.Line(str, no, at)
		s.mu.Unlock()
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := s.pipe.Read(buf)
		if n > 0 {
			if s.logW != nil {
				s.logW.Write(buf[:n]) // a full disk must not stop the server; the tail stays in memory
			}
			sp.feed(buf[:n], emit)
		}
		if err != nil {
			break
		}
	}
	sp.flush(emit)
}

func (s *Server) closeLog() {
	s.closeOnce.Do(func() {
		if s.logW != nil {
			s.logW.Flush()
		}
		if s.logFile != nil {
			s.logFile.Close()
		}
	})
}

// PID is the server's process id, which is also its process group id.
func (s *Server) PID() int { return s.pid }

// Spec is the spec the server was started with, defaults filled in.
func (s *Server) Spec() Spec { return s.spec }

// BaseURL is where the server answers: Spec.BaseURL, or the URL the server
// named in its log (empty until then).
func (s *Server) BaseURL() string {
	if s.spec.BaseURL != "" {
		return s.spec.BaseURL
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.parser.f.URL
}

// Facts returns the start-up facts parsed from the log so far.
func (s *Server) Facts() Facts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.parser.Facts()
}

// LogTail returns up to the last n lines of the server's output (at most 200 are kept).
func (s *Server) LogTail(n int) []string { return s.tail.tail(n) }

// Exited is closed when the process has exited, for whatever reason.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// ExitErr says how the process ended when it exited on its own (wrapping
// ErrExited, with the exit status or signal). It is nil while the process
// runs and when the exit followed Stop, so ExitErr() != nil after Exited()
// means the server died.
func (s *Server) ExitErr() error {
	select {
	case <-s.exited:
		return s.exitErr
	default:
		return nil
	}
}

// ProcessState is the reaped process's state, nil while it runs.
func (s *Server) ProcessState() *os.ProcessState {
	select {
	case <-s.exited:
		return s.state
	default:
		return nil
	}
}

// Stop ends the server and every process in its group: SIGINT, then SIGTERM,
// then SIGKILL, waiting up to Spec.StopGrace after each of the first two and
// 5 s after SIGKILL. It returns when the group is gone (error if a process
// survived SIGKILL, which only an unkillable process does). Stop is
// idempotent; later calls return the first call's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		close(s.stopping)
		s.stopErr = s.stop()
		// The log reader ends when the last holder of the pipe is gone; a
		// process that left the group (setsid) could keep it open forever.
		select {
		case <-s.logDone:
		case <-time.After(2 * time.Second):
			s.pipe.Close()
			<-s.logDone
		}
	})
	return s.stopErr
}

func (s *Server) stop() error {
	steps := []struct {
		sig  syscall.Signal
		wait time.Duration
	}{
		{syscall.SIGINT, s.spec.StopGrace},
		{syscall.SIGTERM, s.spec.StopGrace},
		{syscall.SIGKILL, 5 * time.Second},
	}
	for _, st := range steps {
		if s.gone() {
			return nil
		}
		// ESRCH: the group emptied since gone() looked; nothing to signal.
		if err := syscall.Kill(-s.pid, st.sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signalling server process group %d: %w", s.pid, err)
		}
		if s.waitGone(st.wait) {
			return nil
		}
	}
	return fmt.Errorf("server process group %d still has processes after SIGKILL", s.pid)
}

// gone reports whether the leader has been reaped and no live process is left in its group.
func (s *Server) gone() bool {
	select {
	case <-s.exited:
		return !groupAlive(s.pid)
	default:
		return false
	}
}

// waitGone polls gone for up to d.
func (s *Server) waitGone(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if s.gone() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-s.exited:
			time.Sleep(20 * time.Millisecond) // leader gone: poll the rest of the group
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitLogDrained gives the log reader up to d to read what a dead process
// wrote last, so error messages carry the process's final words.
func (s *Server) waitLogDrained(d time.Duration) {
	select {
	case <-s.logDone:
	case <-time.After(d):
	}
}
