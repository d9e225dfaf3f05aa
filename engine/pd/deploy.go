package pd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/servebench/servebench/engine/option"
	"github.com/servebench/servebench/engine/sim"
)

// ErrInstance is wrapped by Run's error when an instance fails to start
// or dies while serving (not for bad options).
var ErrInstance = errors.New("P/D instance failed")

// Options is a P/D deployment: Engine configures every instance (its
// KVRole is set per pool; its Host and Port are the router's, its Log gets
// every instance's lines, prefixed), Prefill and Decode are the pool sizes.
type Options struct {
	Engine          sim.Options
	Prefill, Decode int
}

// Check refuses pool sizes and engine options no deployment takes, before
// anything starts (Run's first step; `servebench engine --validate`'s all).
func (o Options) Check() error {
	if o.Prefill < 1 || o.Decode < 1 {
		return option.Errorf("Prefill", nil, "{Prefill} %d {Decode} %d: want at least one instance of each", o.Prefill, o.Decode)
	}
	if o.Engine.KVRole != "" {
		return option.Errorf("KVRole", nil, "each P/D pool sets its own; give it only to a single engine")
	}
	return nil
}

// Run starts the instances, waits until all are ready, then serves the
// router on Engine.Host:Engine.Port until ctx is done. Bad options or an
// instance that fails are returned as errors.
func Run(ctx context.Context, o Options) error {
	if err := o.Check(); err != nil {
		return err
	}
	log := &lineLog{w: o.Engine.Log}
	if log.w == nil {
		log.w = io.Discard
	}
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	var engines []*sim.Engine
	var roles []string
	for i := 0; i < o.Prefill+o.Decode; i++ {
		eo := o.Engine
		name := fmt.Sprintf("prefill-%d", i)
		eo.Host, eo.Port, eo.KVRole = "127.0.0.1", 0, sim.KVRoleProducer
		if i >= o.Prefill {
			eo.KVRole, name = sim.KVRoleConsumer, fmt.Sprintf("decode-%d", i-o.Prefill)
		}
		eo.Log = log.prefixed(name)
		e, err := sim.New(eo)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		engines, roles = append(engines, e), append(roles, eo.KVRole)
	}
	errc := make(chan error, len(engines))
	var wg sync.WaitGroup
	for _, e := range engines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.Run(ictx); err != nil {
				errc <- err
			}
		}()
	}
	defer wg.Wait()
	rt := &Router{Client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}}
	for i, e := range engines {
		select {
		case <-e.Ready():
		case err := <-errc:
			return fmt.Errorf("%w to start: %w", ErrInstance, err)
		case <-ctx.Done():
			return nil
		}
		if roles[i] == sim.KVRoleProducer {
			rt.Prefill = append(rt.Prefill, e.BaseURL())
		} else {
			rt.Decode = append(rt.Decode, e.BaseURL())
		}
	}
	return serve(ctx, o, rt, log, errc)
}

// serve runs the router until ctx is done or an instance fails.
func serve(ctx context.Context, o Options, rt *Router, log *lineLog, errc <-chan error) error {
	host := o.Engine.Host
	if host == "" {
		host = "127.0.0.1"
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(o.Engine.Port)))
	if err != nil {
		return fmt.Errorf("P/D router: %w", err)
	}
	srv := &http.Server{Handler: rt, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	// The launcher learns the base URL from this line, as from vLLM's.
	log.line("APIServer", fmt.Sprintf("Starting vLLM API server 0 on http://%s (servebench P/D router, an emulation: %d prefill, %d decode instances; GET /pd/instances lists them)",
		l.Addr(), len(rt.Prefill), len(rt.Decode)))
	log.line("APIServer", "Application startup complete.")
	select {
	case <-ctx.Done():
		err = nil
	case err = <-errc:
		err = fmt.Errorf("%w: %w", ErrInstance, err)
	case err = <-done:
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if srv.Shutdown(sctx) != nil {
		srv.Close()
	}
	return err
}

// lineLog serialises the instances' log lines into one writer, each
// prefixed with its instance's name. An instance's "Starting vLLM API
// server" line is renamed so that only the router's names the base URL.
type lineLog struct {
	mu sync.Mutex
	w  io.Writer
}

type prefixWriter struct {
	l    *lineLog
	name string
}

func (l *lineLog) prefixed(name string) io.Writer { return &prefixWriter{l, name} }

func (p *prefixWriter) Write(b []byte) (int, error) {
	s := strings.ReplaceAll(string(b), "Starting vLLM API server", "Starting instance API server")
	s = strings.ReplaceAll(s, "Application startup complete.", "Instance startup complete.")
	var out strings.Builder
	for _, ln := range strings.SplitAfter(s, "\n") {
		if ln != "" {
			out.WriteString("[" + p.name + "] " + ln)
		}
	}
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	_, err := io.WriteString(p.l.w, out.String())
	return len(b), err
}

// line writes one router line in vLLM's format.
func (l *lineLog) line(proc, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sim.LogLine(l.w, proc, os.Getpid(), "INFO", "pd.go", 1, msg)
}
