package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/scrape"
)

// defaultCancelTokens is what the cancel probe asks for: long enough that a
// server which keeps generating for nobody shows it plainly.
const defaultCancelTokens = 512

// cancel opens a stream, reads After tokens, disconnects, and watches
// /metrics until the generated-token counter has been still for Settle with
// the running count back where it was, or Watch passes.
func (e *env) cancel(ctx context.Context) *Result {
	r := &Result{Probe: "cancel"}
	maxTokens := e.o.MaxTokens
	if maxTokens == 0 {
		maxTokens = defaultCancelTokens
	}
	if e.o.After >= maxTokens {
		r.Verdict, r.Summary = Inconclusive, fmt.Sprintf("--after %d must be below the %d tokens asked for", e.o.After, maxTokens)
		return r
	}
	w, err := e.watch(ctx)
	if err != nil && e.isOllama(ctx) {
		return e.cancelBySlot(ctx, r, maxTokens)
	}
	if err != nil {
		r.Verdict, r.Summary = Inconclusive, "cannot watch the engine: "+err.Error()
		return r
	}
	runBefore, _ := w.runningBefore()
	if runBefore > 0 {
		r.warn("%.0f requests were already running: their tokens count too; probe an idle server", runBefore)
	}
	r.add("max_tokens", maxTokens, fmt.Sprintf("%d (exact length)", maxTokens))
	ls := e.streamThenLeave(ctx, probePrompt, maxTokens, true, e.o.After)
	left := time.Now()
	read, ended, err := ls.read, ls.ended, ls.err
	r.add("tokens_read", read, fmt.Sprintf("%d before disconnecting", read))
	if err != nil || ended {
		why := "the stream ended before the disconnect"
		if err != nil {
			why = err.Error()
		}
		r.Verdict, r.Summary = Inconclusive, fmt.Sprintf("could not disconnect mid-stream after %d tokens: %s", read, why)
		return r
	}
	return e.watchAfterLeave(ctx, r, w, left, read, maxTokens, runBefore)
}

// watchAfterLeave polls /metrics after the disconnect and gives the verdict.
func (e *env) watchAfterLeave(ctx context.Context, r *Result, w *watcher, left time.Time, read, maxTokens int, runBefore float64) *Result {
	lw, why := e.watchMetrics(ctx, w, left, maxTokens, runBefore)
	if why != "" {
		r.Verdict, r.Summary = Inconclusive, why
		return r
	}
	wasted := lw.report(r, left, read, runBefore)
	watched := lw.last.at.Sub(left)
	switch {
	case lw.finished:
		r.Verdict, r.Summary = Fail, fmt.Sprintf("keeps generating, %d tokens wasted (the request ran to its %d tokens after the client left)", wasted, maxTokens)
	case lw.last.at.Sub(lw.lastChange) < e.o.Settle:
		r.Verdict, r.Summary = Fail, fmt.Sprintf("keeps generating, %d tokens wasted so far (still running %s after the disconnect)", wasted, ms(watched))
	case lw.last.runningOK && lw.last.running > runBefore:
		// Tokens stopped, but the request still holds its place in the batch.
		r.Verdict, r.Summary = Fail, fmt.Sprintf("stops generating after %d tokens but still counts %.0f running request(s) %s after the disconnect (slot not freed)",
			wasted, lw.last.running-runBefore, ms(watched))
	default:
		r.Verdict, r.Summary = Pass, fmt.Sprintf("stops generating (%d tokens generated after the disconnect, of %d asked)", wasted, maxTokens-read)
	}
	return r
}

// leaveWatch is what /metrics showed after the disconnect.
type leaveWatch struct {
	last       reading
	lastChange time.Time     // when the generated-token count last moved
	dropped    time.Duration // when the running count fell after the disconnect; -1: not seen
	finished   bool          // the request ran to its maxTokens and left the batch
}

// watchMetrics reads /metrics every Poll after the disconnect at left
// until the request finished, the engine settled (not running, the
// generated count still for Settle) or Watch passed; why says why there
// is no verdict ("" when there is one).
func (e *env) watchMetrics(ctx context.Context, w *watcher, left time.Time, maxTokens int, runBefore float64) (lw leaveWatch, why string) {
	lastGen := -1.0
	lw.lastChange, lw.dropped = left, -1
	for {
		rd, err := w.read(ctx)
		if err != nil {
			return lw, "reading /metrics after the disconnect: " + err.Error()
		}
		if !rd.genOK {
			return lw, "the server exports no generated-token counter: cannot tell whether it stopped"
		}
		lw.last = rd
		if rd.gen != lastGen {
			lastGen, lw.lastChange = rd.gen, rd.at
		}
		down := !rd.runningOK || rd.running <= runBefore
		if down && lw.dropped < 0 && rd.runningOK {
			lw.dropped = rd.at.Sub(left)
		}
		lw.finished = rd.gen >= float64(maxTokens) && down
		if lw.finished || (down && rd.at.Sub(lw.lastChange) >= e.o.Settle) || rd.at.Sub(left) >= e.o.Watch {
			return lw, ""
		}
		select {
		case <-ctx.Done():
			return lw, "interrupted while watching /metrics"
		case <-time.After(e.o.Poll):
		}
	}
}

// report adds the figures watched to r and returns the tokens generated
// and never read.
func (lw *leaveWatch) report(r *Result, left time.Time, read int, runBefore float64) (wasted int) {
	last := lw.last
	r.Warnings = append(r.Warnings, last.resetWarned...)
	wasted = max(int(last.gen)-read, 0)
	r.add("generation_tokens_delta", last.gen, fmt.Sprintf("%.0f generated for this request (engine counter)", last.gen))
	r.add("tokens_wasted", wasted, fmt.Sprintf("%d generated and never read", wasted))
	if last.runningOK {
		r.add("running_before", runBefore, fmt.Sprintf("%.0f", runBefore))
		r.add("running_after", last.running, fmt.Sprintf("%.0f", last.running))
	}
	if lw.dropped >= 0 {
		r.addDuration("running_dropped_after_s", lw.dropped, " after the disconnect (first scrape that saw it)")
	}
	r.addDuration("generation_stopped_by_s", lw.lastChange.Sub(left), " after the disconnect (first scrape showing the final count)")
	if last.finishedOK {
		r.add("finished_requests_delta", last.finished, fmt.Sprintf("%.0f", last.finished))
		if last.finished > 1 {
			r.warn("the engine finished %.0f requests while the probe watched: other traffic mixes into the token counts", last.finished)
		}
	}
	watched := last.at.Sub(left)
	r.addDuration("watched_s", watched, "")
	return wasted
}

// wireRequest is the JSON body of a request the probe drops mid-stream. The
// probe sends it itself, because it must drop the connection after exactly
// K tokens, which client.Do (one whole exchange per call) cannot; the
// events are still read with client's SSE reader and chunk decoder.
type wireRequest struct {
	Model         string           `json:"model"`
	Messages      []client.Message `json:"messages,omitempty"`
	Prompt        string           `json:"prompt,omitempty"`
	MaxTokens     int              `json:"max_tokens"`
	MinTokens     int              `json:"min_tokens"`
	IgnoreEOS     bool             `json:"ignore_eos"`
	Stream        bool             `json:"stream"`
	StreamOptions map[string]bool  `json:"stream_options"`
}

// leftStream is what streamThenLeave saw before it left.
type leftStream struct {
	status int    // HTTP status; 0 when none came
	read   int    // tokens read
	ended  bool   // the stream finished before the probe left
	text   string // error body of a non-2xx answer
	err    error  // transport or stream failure
}

// streamThenLeave streams a request for maxTokens (exactly, if exact),
// reads after tokens and drops the connection.
func (e *env) streamThenLeave(ctx context.Context, prompt string, maxTokens int, exact bool, after int) leftStream {
	wr := wireRequest{Model: e.model, MaxTokens: maxTokens, Stream: true, StreamOptions: map[string]bool{"include_usage": true}}
	if exact {
		wr.MinTokens, wr.IgnoreEOS = maxTokens, true
	}
	path := "/v1/chat/completions"
	if e.o.Endpoint == "chat" {
		wr.Messages = []client.Message{{Role: "user", Content: prompt}}
	} else {
		wr.Prompt, path = prompt, "/v1/completions"
	}
	body, err := json.Marshal(&wr)
	if err != nil {
		return leftStream{err: err}
	}
	sctx, leave := context.WithTimeout(ctx, e.o.RequestTimeout)
	defer leave() // the disconnect: canceling the request closes its connection
	hreq, err := http.NewRequestWithContext(sctx, http.MethodPost, e.o.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return leftStream{err: err}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if e.o.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+e.o.APIKey)
	}
	// A private transport without keep-alive: the connection must really
	// close when the probe leaves, not go back to a pool.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(hreq)
	if err != nil {
		return leftStream{err: fmt.Errorf("%w: %w", ErrUnreachable, err)}
	}
	defer resp.Body.Close()
	ls := leftStream{status: resp.StatusCode}
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		ls.text = e.c.ErrorText(msg)
		ls.err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, ls.text)
		return ls
	}
	ls.read, ls.ended, ls.err = countTokens(resp.Body, after)
	return ls
}

// countTokens reads SSE events until n tokens were seen (ended false), the
// stream ended (ended true) or an error event or read error came.
func countTokens(body io.Reader, n int) (read int, ended bool, err error) {
	sse := client.NewSSEReader(body)
	var dec client.ChunkDecoder
	for read < n {
		data, err := sse.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return read, true, nil
			}
			return read, false, fmt.Errorf("reading the stream: %w", err)
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			return read, true, nil
		}
		ch, err := dec.Decode(data)
		if err != nil {
			return read, false, fmt.Errorf("malformed event: %w", err)
		}
		if ch.HasError {
			return read, false, fmt.Errorf("error event: %s", ch.ErrorMessage)
		}
		if len(ch.Content) > 0 || len(ch.Reasoning) > 0 {
			read++
		}
	}
	return read, false, nil
}

// watcher reads the engine's /metrics relative to a first snapshot.
type watcher struct {
	e       *env
	dialect *scrape.Dialect
	filter  scrape.Filter
	before  *scrape.Snapshot
}

// reading is what /metrics said at one moment, relative to the watcher's
// first snapshot.
type reading struct {
	at          time.Time
	delta       *scrape.Delta
	gen         float64 // generated tokens since the first snapshot
	genOK       bool
	finished    float64 // finished requests since the first snapshot
	finishedOK  bool
	running     float64 // requests running now
	runningOK   bool
	resetWarned []string
}

// watch takes the first snapshot and detects the server's dialect. The
// error says why /metrics cannot be used; probes then report inconclusive
// (or fall back) rather than fail.
func (e *env) watch(ctx context.Context) (*watcher, error) {
	w := &watcher{e: e}
	if e.o.Model != "" {
		w.filter.Model = e.o.Model // the user named the model: ignore other models' series
	}
	s, err := w.fetch(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := scrape.Detect(s)
	if !ok {
		return nil, errors.New("/metrics has no metric family of a known server (vLLM, SGLang, TGI, llama.cpp)")
	}
	w.dialect, w.before = d, s
	return w, nil
}

func (w *watcher) fetch(ctx context.Context) (*scrape.Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if w.e.o.Snapshot != nil {
		return w.e.o.Snapshot(ctx)
	}
	return scrape.FetchAll(ctx, w.e.o.HTTP, w.e.o.MetricsURLs)
}

// runningBefore is the running gauge in the first snapshot.
func (w *watcher) runningBefore() (float64, bool) {
	return w.before.Gauge(w.dialect, w.filter, scrape.EngineRunning)
}

// read takes a snapshot now and compares it with the first.
func (w *watcher) read(ctx context.Context) (reading, error) {
	s, err := w.fetch(ctx)
	if err != nil {
		return reading{}, err
	}
	d := scrape.Diff(w.before, s, w.dialect, w.filter)
	r := reading{at: s.At, delta: d, resetWarned: d.Warnings()}
	r.gen, r.genOK = d.Counter(scrape.EngineGenerationTokens)
	r.finished, r.finishedOK = d.Counter(scrape.EngineRequests)
	r.running, r.runningOK = s.Gauge(w.dialect, w.filter, scrape.EngineRunning)
	return r, nil
}
