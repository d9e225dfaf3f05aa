package probe

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/servebench/servebench/client"
)

// isOllama reports whether the server answers Ollama's GET /api/version.
func (e *env) isOllama(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.o.BaseURL+"/api/version", nil)
	if err != nil {
		return false
	}
	resp, err := e.o.HTTP.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// cancelBySlot is the cancel probe where there is no /metrics to watch
// (Ollama): it leaves a stream after After tokens and at once sends a
// 1-token request (Ollama's /api/chat, whose answer carries the engine's
// timings). Had the abandoned request kept generating, that request would
// wait for its remaining tokens wherever the server has a single slot
// (OLLAMA_NUM_PARALLEL=1); a fast answer shows the slot was freed.
func (e *env) cancelBySlot(ctx context.Context, r *Result, maxTokens int) *Result {
	r.add("max_tokens", maxTokens, fmt.Sprintf("%d (exact length)", maxTokens))
	t0 := time.Now()
	ls := e.streamThenLeave(ctx, probePrompt, maxTokens, true, e.o.After)
	streamed := time.Since(t0)
	r.add("tokens_read", ls.read, fmt.Sprintf("%d before disconnecting", ls.read))
	if ls.err != nil || ls.ended || ls.read == 0 {
		r.Verdict, r.Summary = Inconclusive, fmt.Sprintf("could not disconnect mid-stream after %d tokens: %v", ls.read, ls.err)
		return r
	}
	perToken := streamed / time.Duration(ls.read)
	remaining := time.Duration(maxTokens-ls.read) * perToken
	r.addDuration("remaining_if_kept_s", remaining, fmt.Sprintf(": the %d tokens left at the %s per token read", maxTokens-ls.read, ms(perToken)))
	next := &client.Request{Endpoint: client.EndpointOllamaChat, Model: e.model, MaxTokens: 1,
		Messages: []client.Message{{Role: "user", Content: "Hello"}}}
	tr := e.c.Do(ctx, next)
	if tr.Error == client.ErrTimeout {
		// Seen on Ollama 0.17.4 under heavy load: the freed request's slot
		// was not given to the next one for minutes.
		r.Verdict, r.Summary = Fail, fmt.Sprintf("slot not freed: a 1-token request sent right after the disconnect had no answer in %s (%s), where the abandoned request's %d remaining tokens take %s",
			ms(tr.Done), tr.ErrorText, maxTokens-ls.read, ms(remaining))
		return r
	}
	if !tr.OK() {
		r.Verdict, r.Summary = Inconclusive, fmt.Sprintf("the follow-up request failed (%s): %s", tr.Error, tr.ErrorText)
		return r
	}
	wait := tr.Done
	r.addDuration("next_request_e2e_s", wait, " for a 1-token request sent right after the disconnect")
	if tr.HasEngine {
		q := tr.Engine.Total - tr.Engine.Load - tr.Engine.PromptEval - tr.Engine.Eval
		r.addDuration("next_request_engine_queue_s", q, " of it beyond load, prompt eval and eval (Ollama's timings)")
	}
	if wait >= remaining/2 {
		r.Verdict, r.Summary = Fail, fmt.Sprintf("keeps generating: the next request waited %s, about what the abandoned request's %d remaining tokens take (%s)", ms(wait), maxTokens-ls.read, ms(remaining))
		return r
	}
	r.Verdict, r.Summary = Pass, fmt.Sprintf("stops generating: the next request was served in %s, not after the abandoned request's %d remaining tokens (%s)", ms(wait), maxTokens-ls.read, ms(remaining))
	r.warn("no /metrics: judged from a follow-up request's wait, which shows a freed slot only when the server has one (OLLAMA_NUM_PARALLEL=1)")
	return r
}
