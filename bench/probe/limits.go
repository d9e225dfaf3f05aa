package probe

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/servebench/servebench/client"
)

// limits sends a prompt well over max_model_len (non-streaming, one output
// token) and expects HTTP 400. A short control request shows the server
// works at all, and a short prompt asking for max_model_len output tokens
// shows whether the output budget is checked too (evidence only).
func (e *env) limits(ctx context.Context) *Result {
	r := &Result{Probe: "limits"}
	if e.maxLen <= 0 {
		r.Verdict, r.Summary = Inconclusive, "the server does not say its max_model_len in /v1/models: pass --max-model-len"
		return r
	}
	r.add("max_model_len", e.maxLen, fmt.Sprintf("%d tokens (%s)", e.maxLen, lenSource(e.o.MaxModelLen)))

	ctl := e.c.Do(ctx, e.request(probePrompt, 1, false, false))
	r.add("control_status", ctl.Status, statusText(&ctl, "a short prompt, 1 output token"))
	if !ctl.OK() {
		r.warn("even a short request failed (%s): the verdict may not be about length", ctl.ErrorText)
	}

	over := overLongPrompt(e.maxLen)
	tr := e.c.Do(ctx, e.request(over, 1, false, false))
	r.add("over_limit_status", tr.Status, statusText(&tr, fmt.Sprintf("a prompt of %d words, over %d tokens", strings.Count(over, " "), e.maxLen)))
	if tr.PromptTokens > 0 {
		r.add("over_limit_prompt_tokens", tr.PromptTokens, fmt.Sprintf("%d (server's count)", tr.PromptTokens))
	}

	budget := e.c.Do(ctx, e.request(probePrompt, e.maxLen, false, false))
	r.add("output_budget_status", budget.Status, statusText(&budget, fmt.Sprintf("a short prompt asking %d output tokens", e.maxLen)))
	if budget.OK() {
		r.warn("a request for max_model_len output tokens on top of a prompt was accepted (vLLM rejects it with 400)")
	}

	switch {
	case tr.Status == http.StatusBadRequest:
		r.Verdict, r.Summary = Pass, fmt.Sprintf("rejected with 400: %s", tr.ErrorText)
	case tr.OK():
		r.Verdict, r.Summary = Fail, fmt.Sprintf("accepted: a prompt over max_model_len %d was served (HTTP %d, %d prompt tokens)", e.maxLen, tr.Status, tr.PromptTokens)
	case tr.Status >= 400:
		r.Verdict, r.Summary = Fail, fmt.Sprintf("rejected with HTTP %d, expected 400: %s", tr.Status, tr.ErrorText)
	default:
		r.Verdict, r.Summary = Fail, fmt.Sprintf("no answer (%s): %s", tr.Error, tr.ErrorText)
	}
	return r
}

func lenSource(override int) string {
	if override > 0 {
		return "from --max-model-len"
	}
	return "from /v1/models"
}

// statusText describes a request's outcome for evidence.
func statusText(tr *client.Trace, what string) string {
	switch {
	case tr.OK():
		return fmt.Sprintf("HTTP %d accepted (%s)", tr.Status, what)
	case tr.Status > 0:
		return fmt.Sprintf("HTTP %d (%s): %s", tr.Status, what, tr.ErrorText)
	}
	return fmt.Sprintf("%s (%s): %s", tr.Error, what, tr.ErrorText)
}
