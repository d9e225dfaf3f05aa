package probe

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/servebench/servebench/client"
)

// defaultMidstreamTokens is the plain streaming request's length.
const defaultMidstreamTokens = 64

// Delivery names how a server reported (or did not report) an error.
type Delivery string

// Deliveries, from the client's side of one streaming request.
const (
	DeliveredStatus    Delivery = "http_status" // non-2xx status before any event
	DeliveredEvent     Delivery = "error_event" // `data: {"error":...}` inside an HTTP 200 stream
	DeliveredTruncated Delivery = "truncated"   // stream cut without [DONE] or an error event
	DeliveredMalformed Delivery = "malformed"   // an event that does not parse
	DeliveredStalled   Delivery = "stalled"     // no event until the request timeout
	DeliveredNone      Delivery = "no_error"    // the request succeeded
	DeliveredOther     Delivery = "other"       // connection refused and the like
)

// Classify says how trace's error reached the client.
func Classify(tr *client.Trace) Delivery {
	switch tr.Error {
	case client.ErrNone:
		return DeliveredNone
	case client.ErrHTTPStatus:
		return DeliveredStatus
	case client.ErrStreamError:
		if tr.Status/100 == 2 {
			return DeliveredEvent
		}
		return DeliveredStatus
	case client.ErrTruncated:
		return DeliveredTruncated
	case client.ErrMalformed:
		return DeliveredMalformed
	case client.ErrTimeout:
		return DeliveredStalled
	}
	return DeliveredOther
}

// describe is one trigger's outcome in words.
func describe(d Delivery, tr *client.Trace) string {
	n := tokensSeen(tr)
	switch d {
	case DeliveredStatus:
		return fmt.Sprintf("HTTP %d before the stream began: %s", tr.Status, tr.ErrorText)
	case DeliveredEvent:
		return fmt.Sprintf("error event inside an HTTP %d stream after %d tokens: %s", tr.Status, n, tr.ErrorText)
	case DeliveredTruncated:
		return fmt.Sprintf("stream cut after %d tokens with no error event and no [DONE] (HTTP %d): %s", n, tr.Status, tr.ErrorText)
	case DeliveredMalformed:
		return fmt.Sprintf("malformed event after %d tokens (HTTP %d): %s", n, tr.Status, tr.ErrorText)
	case DeliveredStalled:
		return fmt.Sprintf("no event until the timeout after %d tokens: %s", n, tr.ErrorText)
	case DeliveredNone:
		return fmt.Sprintf("no error: HTTP %d, %d tokens, finish_reason %q", tr.Status, tr.OutputTokens, tr.FinishReason)
	}
	return fmt.Sprintf("%s: %s", tr.Error, tr.ErrorText)
}

// tokensSeen counts the tokens the client received before the end.
func tokensSeen(tr *client.Trace) int {
	n := tr.EventsDropped
	for _, ev := range tr.Events.All() {
		n += ev.Tokens
	}
	return n
}

// midstream sends two streaming requests that may fail: a prompt over the
// context limit (vLLM rejects it before streaming, with 400) and a plain
// one (a server, proxy or fault that breaks streams shows here), and
// reports how each failure reached the client.
func (e *env) midstream(ctx context.Context) *Result {
	r := &Result{Probe: "midstream-error"}
	type trigger struct {
		name string
		req  *client.Request
	}
	var triggers []trigger
	if e.maxLen > 0 {
		triggers = append(triggers, trigger{"over_limit", e.request(overLongPrompt(e.maxLen), 16, false, true)})
	} else {
		r.warn("the server does not say max_model_len (pass --max-model-len): the over-limit trigger was skipped")
	}
	n := e.o.MaxTokens
	if n == 0 {
		n = defaultMidstreamTokens
	}
	triggers = append(triggers, trigger{"plain_stream", e.request(probePrompt, n, true, true)})
	var errs, silent []string
	for _, t := range triggers {
		tr := e.c.Do(ctx, t.req)
		d := Classify(&tr)
		r.add(t.name, string(d), describe(d, &tr))
		switch d {
		case DeliveredNone:
		case DeliveredStatus, DeliveredEvent:
			errs = append(errs, describe(d, &tr))
		default:
			silent = append(silent, fmt.Sprintf("%s: %s", t.name, describe(d, &tr)))
		}
	}
	switch {
	case len(silent) > 0:
		r.Verdict, r.Summary = Fail, "error not reported: "+strings.Join(silent, "; ")
	case len(errs) == 0:
		r.Verdict, r.Summary = Inconclusive, "no error could be triggered (both requests succeeded)"
	default:
		r.Verdict, r.Summary = Pass, "errors reported: "+strings.Join(shortDescs(r), "; ")
	}
	return r
}

// shortDescs names each trigger's delivery for the summary line.
func shortDescs(r *Result) []string {
	var out []string
	for _, it := range r.Evidence {
		switch Delivery(fmt.Sprint(it.Value)) {
		case DeliveredStatus:
			out = append(out, it.Key+" -> HTTP status before the stream")
		case DeliveredEvent:
			out = append(out, it.Key+" -> error event inside an HTTP 200 stream")
		}
	}
	return out
}

// overLongPrompt is a prompt well over maxLen tokens on any tokenizer: two
// words per allowed token, each word at least one token.
func overLongPrompt(maxLen int) string {
	return strings.Repeat(" hello", 2*maxLen+64)
}

// limits sends a prompt well over max_model_len (non-streaming, one output
// token) and expects HTTP 400. A short control request shows the server
// works at all, and a short prompt asking for max_model_len output tokens
// (streamed, dropped after one) shows whether the output budget is checked
// too (evidence only).
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

	// Streamed and dropped after one token: a server that accepts it would
	// otherwise make the probe wait for max_model_len tokens.
	budget := e.streamThenLeave(ctx, probePrompt, e.maxLen, false, 1)
	what := fmt.Sprintf("a short prompt asking %d output tokens", e.maxLen)
	switch {
	case budget.status/100 == 2:
		r.add("output_budget_status", budget.status, fmt.Sprintf("HTTP %d accepted (%s; left after the first token)", budget.status, what))
		r.warn("a request for max_model_len output tokens on top of a prompt was accepted (vLLM rejects it with 400)")
	case budget.status > 0:
		r.add("output_budget_status", budget.status, fmt.Sprintf("HTTP %d (%s): %s", budget.status, what, budget.text))
	default:
		r.add("output_budget_status", 0, fmt.Sprintf("no answer (%s): %v", what, budget.err))
	}

	switch {
	case tr.Status == http.StatusBadRequest:
		r.Verdict, r.Summary = Pass, fmt.Sprintf("rejected with 400: %s", tr.ErrorText)
	case tr.OK() && tr.PromptTokens > 0 && tr.PromptTokens <= e.maxLen:
		// Ollama keeps the prompt's end within num_ctx and serves the rest.
		r.Verdict, r.Summary = Fail, fmt.Sprintf("accepted and truncated: a prompt over max_model_len %d was served cut to %d tokens (HTTP %d): the server drops the prompt's start instead of refusing it",
			e.maxLen, tr.PromptTokens, tr.Status)
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
