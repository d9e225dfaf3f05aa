package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Phase names, in the order a server normally passes them.
const (
	PhaseSpawned       = "spawned"
	PhaseWeightsLoaded = "weights loaded"
	PhasePortOpen      = "port open"
	PhaseHealthOK      = "health OK"
	PhaseModelListed   = "model listed"
	PhaseModelLoaded   = "model loaded" // a server that loads on first use (Ollama): listed, not ready
	PhaseFirstToken    = "first token"
)

// Phases lists the phase names in their usual order.
var Phases = []string{PhaseSpawned, PhaseWeightsLoaded, PhasePortOpen, PhaseHealthOK, PhaseModelListed, PhaseModelLoaded, PhaseFirstToken}

// Probe time limits. A probe that hangs is a server that is not ready yet;
// the first completion may be slow (kernels compiled on first use).
const (
	probeTimeout      = 10 * time.Second
	completionTimeout = 60 * time.Second
	maxProbeBody      = 1 << 20
	tailOnError       = 40
)

// waiter is the state of one WaitReady call.
type waiter struct {
	s        *Server
	hc       *http.Client
	base     *url.URL
	st       Startup
	progress func(string, time.Duration)
	weights  bool   // weights-loaded progress reported
	model    string // model to use for the completion probe
	chat     bool   // completions endpoint refused: use chat
	noModels bool   // GET /v1/models answered 404: no model-listed phase
	prepared bool   // Spec.Prepare has run
	last     string // why the last probe said "not yet", for the timeout message
}

// WaitReady polls the server every Spec.PollInterval until it has passed
// every phase: port accepting TCP connections, GET HealthPath answering 200
// (refused or 503 mean not yet), the model listed in GET /v1/models (Spec.Model,
// or the first one listed; skipped when the server has no such route), and a
// first 1-token completion (POST
// /v1/completions, or /v1/chat/completions when that is refused). Times are
// seconds since spawn, measured to the poll interval's resolution.
// progress, if not nil, is called once per phase as it passes (the weights
// phase when its log line has been seen), from WaitReady's goroutine.
//
// Errors wrap ErrExited (the process died: exit status and log tail),
// ErrNotReady (Spec.ReadyTimeout passed, or a probe failed for good: log tail)
// or ctx's error. On any error the server has been stopped, and the Startup
// returned holds what was measured before the failure (the phases passed).
func (s *Server) WaitReady(ctx context.Context, progress func(phase string, at time.Duration)) (*Startup, error) {
	w := &waiter{s: s, progress: progress, model: s.spec.Model}
	tr := &http.Transport{Proxy: nil, DisableCompression: true}
	defer tr.CloseIdleConnections()
	w.hc = &http.Client{Transport: tr}
	poll := s.spec.PollInterval.Seconds()
	w.st.PollIntervalS = &poll
	w.report(PhaseSpawned, 0)

	deadline := time.NewTimer(time.Until(s.spawned.Add(s.spec.ReadyTimeout)))
	defer deadline.Stop()
	tick := time.NewTicker(s.spec.PollInterval)
	defer tick.Stop()
	for {
		done, err := w.step(ctx)
		if err != nil {
			s.Stop()
			return w.partial(), err
		}
		if done {
			w.finish(ctx)
			return &w.st, nil
		}
		select {
		case <-tick.C:
		case <-s.exited:
			err := w.exitedErr(ctx)
			return w.partial(), err
		case <-ctx.Done():
			s.Stop()
			// No "waiting for ..." prefix: callers say what they were doing.
			return w.partial(), fmt.Errorf("%w before the server was ready; %s", ctx.Err(), w.reached())
		case <-deadline.C:
			s.Stop()
			return w.partial(), fmt.Errorf("%w after %s (ready timeout); %s%s", ErrNotReady, s.spec.ReadyTimeout, w.reached(), s.tailText())
		}
	}
}

// report records a phase and calls progress.
func (w *waiter) report(phase string, at time.Duration) {
	if w.progress != nil {
		w.progress(phase, at)
	}
}

func (w *waiter) since() time.Duration { return time.Since(w.s.spawned) }

// secondsPtr is d in seconds, for Startup's optional figures.
func secondsPtr(d time.Duration) *float64 {
	v := d.Seconds()
	return &v
}

// step runs the probes of one poll, going on to the next phase as soon as
// one passes. It reports whether all phases have passed; an error is final.
func (w *waiter) step(ctx context.Context) (bool, error) {
	w.checkWeights()
	phases := []func(context.Context) (bool, error){
		w.stepBaseURL, w.stepPortOpen, w.stepHealth, w.stepPrepare, w.stepModels, w.stepFirstToken,
	}
	for _, phase := range phases {
		if ok, err := phase(ctx); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

// The step functions each probe one phase, in order: true when it has
// passed (now or at an earlier poll); an error is final.

func (w *waiter) stepBaseURL(context.Context) (bool, error) {
	if w.base != nil {
		return true, nil
	}
	raw := w.s.BaseURL()
	if raw == "" {
		w.last = "the server has not named its URL in the log yet"
		return false, nil
	}
	u, err := ParseBaseURL(raw)
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrNotReady, err)
	}
	w.base = u
	return true, nil
}

func (w *waiter) stepPortOpen(ctx context.Context) (bool, error) {
	if w.st.PortOpenS != nil {
		return true, nil
	}
	if !w.portOpen(ctx) {
		return false, nil
	}
	w.passed(&w.st.PortOpenS, PhasePortOpen)
	return true, nil
}

func (w *waiter) stepHealth(ctx context.Context) (bool, error) {
	if w.st.HealthOKS != nil {
		return true, nil
	}
	if ok, err := w.health(ctx); !ok || err != nil {
		return false, err
	}
	w.passed(&w.st.HealthOKS, PhaseHealthOK)
	return true, nil
}

// stepPrepare runs Spec.Prepare once (no phase of its own).
func (w *waiter) stepPrepare(ctx context.Context) (bool, error) {
	if p := w.s.spec.Prepare; p != nil && !w.prepared {
		if err := p(ctx, w.base.String()); err != nil {
			return false, fmt.Errorf("%w: %v", ErrNotReady, err)
		}
		w.prepared = true
	}
	return true, nil
}

func (w *waiter) stepModels(ctx context.Context) (bool, error) {
	if w.st.ModelListedS != nil || w.noModels {
		return true, nil
	}
	if ok, err := w.models(ctx); !ok || err != nil {
		return false, err
	}
	if !w.noModels {
		w.passed(&w.st.ModelListedS, PhaseModelListed)
	}
	return true, nil
}

func (w *waiter) stepFirstToken(ctx context.Context) (bool, error) {
	complete := w.complete
	if w.s.spec.Preset == PresetOllama {
		complete = w.ollamaFirstToken
	}
	if ok, err := complete(ctx); !ok || err != nil {
		return false, err
	}
	at := w.since()
	w.checkWeights() // a weights line read while this step probed
	w.st.FirstTokenS = secondsPtr(at)
	w.report(PhaseFirstToken, at)
	return true, nil
}

// passed records phase as passed now, in *field, and reports it.
func (w *waiter) passed(field **float64, phase string) {
	at := w.since()
	*field = secondsPtr(at)
	w.report(phase, at)
}

// checkWeights reports the weights phase once its log line has been read.
func (w *waiter) checkWeights() {
	if w.weights {
		return
	}
	if f := w.s.Facts(); f.WeightsLoaded != nil {
		w.weights = true
		w.report(PhaseWeightsLoaded, f.WeightsLoaded.At)
	}
}

func (w *waiter) portOpen(ctx context.Context) bool {
	port := w.base.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[w.base.Scheme]
	}
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(w.base.Hostname(), port))
	if err != nil {
		w.last = "port closed: " + err.Error()
		return false
	}
	c.Close()
	return true
}

// do sends one probe request and returns status and (capped) body; a
// transport error is returned as err and means "not yet".
func (w *waiter) do(ctx context.Context, method, path string, body any, timeout time.Duration) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, w.base.JoinPath(path).String(), rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if w.s.spec.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+w.s.spec.APIKey)
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxProbeBody))
	return resp.StatusCode, b, err
}

// APIKeyHint says what to do about a 401/403, which differs with whether a
// key was sent; env names the variable --api-key-env chose, when known.
func APIKeyHint(sent bool, env string) string {
	if sent {
		if env != "" {
			return "the server refused the API key that was sent (from " + env + ")"
		}
		return "the server refused the API key that was sent"
	}
	if env == "" {
		env = "OPENAI_API_KEY by default"
	}
	return "the server wants an API key and none was sent: put it in the variable --api-key-env names (" + env + ")"
}

// final turns an answer that waiting cannot fix into an error.
func (w *waiter) final(what string, status int, body []byte) error {
	hint := ""
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		hint = " (" + APIKeyHint(w.s.spec.APIKey != "", "") + ")"
	case http.StatusNotFound:
		if what == "GET "+w.s.spec.HealthPath {
			hint = " (the server has no such path: set the health path)"
		}
	}
	return fmt.Errorf("%w: %s answered HTTP %d%s: %s%s", ErrNotReady, what, status, hint, snippet(body), w.s.tailText())
}

// pending reports whether a probe's answer means "not ready yet": no
// answer, or a status that means still starting. It remembers the answer
// for the timeout message.
func (w *waiter) pending(what string, status int, err error) bool {
	switch {
	case err != nil:
		w.last = what + ": " + err.Error()
	case notYet(status):
		w.last = fmt.Sprintf("%s: HTTP %d", what, status)
	default:
		return false
	}
	return true
}

// notYet reports whether an HTTP status means "still starting".
func notYet(status int) bool {
	return status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests ||
		status == http.StatusRequestTimeout || status >= 500
}

func (w *waiter) health(ctx context.Context) (bool, error) {
	what := "GET " + w.s.spec.HealthPath
	status, body, err := w.do(ctx, http.MethodGet, w.s.spec.HealthPath, nil, probeTimeout)
	switch {
	case w.pending(what, status, err):
		return false, nil
	case status == http.StatusOK:
		return true, nil
	}
	return false, w.final(what, status, body)
}

func (w *waiter) models(ctx context.Context) (bool, error) {
	const what = "GET /v1/models"
	status, body, err := w.do(ctx, http.MethodGet, "/v1/models", nil, probeTimeout)
	switch {
	case w.pending(what, status, err):
		return false, nil
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
		// Older servers (e.g. TGI before its OpenAI routes) list no models:
		// the phase is skipped (absent), not failed.
		w.noModels = true
		return true, nil
	case status != http.StatusOK:
		return false, w.final(what, status, body)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return false, fmt.Errorf("%w: %s: not an OpenAI model list: %v: %s", ErrNotReady, what, err, snippet(body))
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
		if w.model == "" || m.ID == w.model {
			if w.model == "" {
				w.model = m.ID
			}
			return true, nil
		}
	}
	if len(ids) == 0 {
		w.last = what + ": no model listed yet"
		return false, nil
	}
	return false, fmt.Errorf("%w: model %q is not served: %s lists %s", ErrNotReady, w.model, what, strings.Join(ids, ", "))
}

func (w *waiter) complete(ctx context.Context) (bool, error) {
	path, body := "/v1/completions", any(map[string]any{"model": w.model, "prompt": "Hello", "max_tokens": 1})
	if w.chat {
		path, body = "/v1/chat/completions", map[string]any{"model": w.model, "max_tokens": 1,
			"messages": []map[string]string{{"role": "user", "content": "Hello"}}}
	}
	what := "POST " + path
	status, resp, err := w.do(ctx, http.MethodPost, path, body, completionTimeout)
	switch {
	case w.pending(what, status, err):
		return false, nil
	case status == http.StatusOK:
		return true, nil
	case !w.chat && (status == http.StatusNotFound || status == http.StatusMethodNotAllowed || status == http.StatusBadRequest):
		w.chat = true // e.g. a chat-only model or server
		return w.complete(ctx)
	}
	return false, w.final(what, status, resp)
}

// finish adds the log facts (and SGLang's start-up gauges) to the result.
func (w *waiter) finish(ctx context.Context) {
	f := w.s.Facts()
	if f.Engine == "sglang" || w.s.spec.Preset == "sglang" {
		if status, body, err := w.do(ctx, http.MethodGet, "/metrics", nil, probeTimeout); err == nil && status == http.StatusOK {
			f.Merge(MetricsFacts(string(body)))
		}
	}
	f.Fill(&w.st)
	w.s.mu.Lock()
	w.s.model = w.model
	w.s.mu.Unlock()
}

// partial is what a start-up that failed measured before it failed: the
// phases passed and the log's facts (an Ollama that refuses its model has
// passed port open and health OK).
func (w *waiter) partial() *Startup {
	f := w.s.Facts()
	f.Fill(&w.st)
	return &w.st
}

// exitedErr describes a process that died while WaitReady waited.
func (w *waiter) exitedErr(ctx context.Context) error {
	w.s.waitLogDrained(time.Second)
	err := w.s.ExitErr()
	if err == nil { // Stop ended it: ctx was cancelled
		if ctx.Err() != nil {
			return fmt.Errorf("%w before the server was ready; %s", ctx.Err(), w.reached())
		}
		err = fmt.Errorf("%w: stopped", ErrExited)
	}
	return fmt.Errorf("%w before it was ready; %s%s", err, w.reached(), w.s.tailText())
}

// reached says how far the server got, for error messages.
func (w *waiter) reached() string {
	var got []string
	add := func(name string, v *float64) {
		if v != nil {
			got = append(got, fmt.Sprintf("%s at %.2f s", name, *v))
		}
	}
	add(PhasePortOpen, w.st.PortOpenS)
	add(PhaseHealthOK, w.st.HealthOKS)
	add(PhaseModelListed, w.st.ModelListedS)
	s := "phases passed: none"
	if len(got) > 0 {
		s = "phases passed: " + strings.Join(got, ", ")
	}
	if w.last != "" {
		s += "; last probe: " + w.last
	}
	return s
}

// tailText formats the last log lines for an error message.
func (s *Server) tailText() string {
	lines := s.LogTail(tailOnError)
	if len(lines) == 0 {
		return "\n(the server wrote nothing)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nlast %d lines of the server log", len(lines))
	if s.spec.LogPath != "" {
		fmt.Fprintf(&b, " (%s)", s.spec.LogPath)
	}
	b.WriteString(":")
	for _, l := range lines {
		b.WriteString("\n  | ")
		b.WriteString(l)
	}
	return b.String()
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}

// Model is the model the readiness probe used (Spec.Model, or the first one
// /v1/models listed); empty until WaitReady has passed that phase.
func (s *Server) Model() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.model
}
