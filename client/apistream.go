package client

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Endpoints beyond chat and completions: the APIs agents use.
const (
	// EndpointMessages is Anthropic's Messages API (POST /v1/messages), as
	// vLLM and SGLang serve it.
	EndpointMessages = "messages"
	// EndpointResponses is OpenAI's Responses API (POST /v1/responses).
	EndpointResponses = "responses"
)

// AnthropicVersion is the anthropic-version header sent on Messages
// requests: the API version Anthropic's SDKs send.
const AnthropicVersion = "2023-06-01"

// isAPIEndpoint reports whether endpoint streams typed events
// (APIEventDecoder) rather than chat or completions chunks.
func isAPIEndpoint(endpoint string) bool {
	return endpoint == EndpointMessages || endpoint == EndpointResponses
}

// messagesWire is the body of POST /v1/messages. ignore_eos and min_tokens
// are vLLM's sampling extensions: the bundled engine honours them for an
// exact length; vLLM's Anthropic request model drops fields it does not
// know, so there usage says what was generated.
type messagesWire struct {
	Model     string    `json:"model"`
	System    string    `json:"system,omitempty"`
	Messages  []Message `json:"messages"`
	MaxTokens int       `json:"max_tokens"`
	Stream    bool      `json:"stream"`
	IgnoreEOS bool      `json:"ignore_eos,omitempty"`
	MinTokens int       `json:"min_tokens,omitempty"`
}

// responsesWire is the body of POST /v1/responses: the conversation as
// input messages (system messages among them, as EasyInputMessage allows).
// store false: a benchmark keeps no responses on the server.
type responsesWire struct {
	Model           string    `json:"model"`
	Input           []Message `json:"input"`
	MaxOutputTokens int       `json:"max_output_tokens,omitempty"`
	Stream          bool      `json:"stream"`
	Store           bool      `json:"store"`
	IgnoreEOS       bool      `json:"ignore_eos,omitempty"`
	MinTokens       int       `json:"min_tokens,omitempty"`
}

// apiBody builds the body of a Messages or Responses request.
func (req *Request) apiBody() ([]byte, error) {
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("%s request has no messages: expected at least one", req.Endpoint)
	}
	ignoreEOS, minTokens := false, 0
	if req.ExactLength {
		if req.MaxTokens <= 0 {
			return nil, fmt.Errorf("exact length needs max tokens > 0, got %d", req.MaxTokens)
		}
		ignoreEOS, minTokens = true, req.MaxTokens
	}
	if req.Endpoint == EndpointResponses {
		return json.Marshal(&responsesWire{Model: req.Model, Input: req.Messages, MaxOutputTokens: req.MaxTokens,
			Stream: req.Stream, IgnoreEOS: ignoreEOS, MinTokens: minTokens})
	}
	if req.MaxTokens <= 0 {
		return nil, fmt.Errorf("a messages request needs max tokens > 0 (the API requires max_tokens), got %d", req.MaxTokens)
	}
	w := messagesWire{Model: req.Model, MaxTokens: req.MaxTokens, Stream: req.Stream, IgnoreEOS: ignoreEOS, MinTokens: minTokens}
	for _, m := range req.Messages {
		// Anthropic takes the system prompt apart; vLLM joins system
		// messages the same way.
		if m.Role == "system" {
			w.System += m.Content
			continue
		}
		w.Messages = append(w.Messages, m)
	}
	return json.Marshal(&w)
}

// apiHeaders are the headers an endpoint needs beyond the common ones:
// Anthropic's x-api-key (beside Authorization, which vLLM's --api-key
// checks) and anthropic-version. Names as net/http canonicalizes them.
func apiHeaders(endpoint, apiKey string) [][2]string {
	if endpoint != EndpointMessages {
		return nil
	}
	h := [][2]string{{"Anthropic-Version", AnthropicVersion}}
	if apiKey != "" {
		h = append(h, [2]string{"X-Api-Key", apiKey})
	}
	return h
}

// readAPIStream reads a Messages or Responses event stream until its final
// event (message_stop, response.completed/incomplete/failed) or a failure,
// filling the trace as readStream does for chat: a text delta is visible
// output, a thinking or reasoning delta is a token event that is not, and
// the usage of the stream's end scales the events' text estimates to the
// server's count. It reports whether the stream ended cleanly.
func (x *exchange) readAPIStream(body io.Reader, maxTokens int) bool {
	tr := &x.tr
	rd := readerPool.Get().(*readers)
	defer rd.release()
	rd.sse.Reset(body)
	tr.Events.reserve(maxTokens)
	var st apiTally
	done := x.readAPIEvents(rd, &st)
	if st.reasoning > 0 {
		tr.ReasoningTokens = st.reasoning // the server's own count (Responses)
	}
	if x.keepText {
		tr.Text = string(st.text)
	}
	if st.usageSeen {
		tr.TokensFrom = TokensFromUsage
		if tr.EventsDropped == 0 {
			apportion(tr.Events.pairs, tr.OutputTokens)
		}
	} else {
		tr.OutputTokens, tr.TokensFrom = st.counted, TokensFromEvents
	}
	return done
}

// apiTally is readAPIStream's count so far: chat's, and the reasoning
// tokens the server counted (usage.output_tokens_details, Responses).
type apiTally struct {
	streamTally
	reasoning int
}

func (x *exchange) readAPIEvents(rd *readers, st *apiTally) bool {
	for {
		// [DONE] is in neither API; a proxy may add it.
		data, now, done, ok := x.nextData(rd, st.counted)
		if done || !ok {
			return ok
		}
		ev, err := rd.api.Decode(data)
		if x.badEvent(data, err, ev != nil && ev.HasError, func() []byte { return ev.ErrorMessage }) {
			return false
		}
		x.apiEvent(st, ev, now)
		if ev.Final() {
			x.tr.Done = now
			return true
		}
	}
}

// apiEvent takes one decoded event that arrived at now.
func (x *exchange) apiEvent(st *apiTally, ev *APIEvent, now time.Duration) {
	tr := &x.tr
	if ev.HasUsage {
		st.reasoning = max(st.reasoning, ev.ReasoningTokens)
		// message_start has the input only; message_delta and the final
		// response both.
		if ev.InputTokens > 0 || tr.PromptTokens == 0 {
			tr.PromptTokens = ev.InputTokens
		}
		if ev.OutputTokens > 0 || st.usageSeen {
			tr.OutputTokens, st.usageSeen = ev.OutputTokens, true
		}
		tr.CachedTokens = max(tr.CachedTokens, ev.CachedTokens)
	}
	if r := finishReason(ev.StopReason, ev.Status); r != "" {
		tr.FinishReason = r
	}
	if len(ev.Text) == 0 && len(ev.Reasoning) == 0 {
		return
	}
	tokens := max(textPieces(ev.Text)+textPieces(ev.Reasoning), 1)
	x.tokenEvent(now, tokens, len(ev.Text) > 0)
	if len(ev.Reasoning) > 0 {
		x.reasoningEvent(now, tokens, ev.Reasoning, ev.Text)
	}
	st.counted += tokens
	if x.keepText {
		st.text = append(st.text, ev.Text...)
	}
}

// finishReason maps an Anthropic stop_reason or a response's end onto
// the chat API's finish_reason, so reports compare endpoints: end_turn and
// stop_sequence are "stop", max_tokens (and a response incomplete for
// max_output_tokens) "length", tool_use "tool_calls"; a completed response
// "stop". "" when the event says nothing.
func finishReason(stop, status []byte) string {
	switch string(stop) {
	case "":
	case "end_turn", "stop_sequence":
		return "stop"
	case "max_tokens", "max_output_tokens":
		return "length"
	case "tool_use":
		return "tool_calls"
	default:
		return string(stop)
	}
	if string(status) == "completed" {
		return "stop"
	}
	return ""
}

// Non-streaming bodies, decoded with encoding/json: one per request, off
// the per-event hot path.
type messagesBody struct {
	Type    string `json:"type"`
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	} `json:"content"`
	StopReason *string         `json:"stop_reason"`
	Usage      json.RawMessage `json:"usage"`
	Error      json.RawMessage `json:"error"`
}

type responsesBody struct {
	Object string `json:"object"`
	Status string `json:"status"`
	Output []struct {
		Type    string `json:"type"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Summary []struct {
			Text string `json:"text"`
		} `json:"summary"`
	} `json:"output"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Usage json.RawMessage `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// apiAnswer is what a non-streaming body says, either API.
type apiAnswer struct {
	text, reasoning []byte
	stop, status    string
	usage           apiUsage
	errMsg          []byte
	hasError, ok    bool // ok: the body is the API's answer object
}

func decodeMessagesBody(body []byte) (apiAnswer, error) {
	var j messagesBody
	if err := json.Unmarshal(body, &j); err != nil {
		return apiAnswer{}, err
	}
	a := apiAnswer{ok: j.Type == "message"}
	for _, c := range j.Content {
		switch c.Type {
		case "text":
			a.text = append(a.text, c.Text...)
		case "thinking":
			a.reasoning = append(a.reasoning, c.Thinking...)
		}
	}
	if j.StopReason != nil {
		a.stop = *j.StopReason
	}
	return a, a.finish(j.Usage, j.Error)
}

func decodeResponsesBody(body []byte) (apiAnswer, error) {
	var j responsesBody
	if err := json.Unmarshal(body, &j); err != nil {
		return apiAnswer{}, err
	}
	a := apiAnswer{ok: j.Object == "response", status: j.Status}
	for _, o := range j.Output {
		switch o.Type {
		case "message":
			for _, c := range o.Content {
				if c.Type == "output_text" {
					a.text = append(a.text, c.Text...)
				}
			}
		case "reasoning":
			for _, c := range o.Content {
				a.reasoning = append(a.reasoning, c.Text...)
			}
			for _, s := range o.Summary {
				a.reasoning = append(a.reasoning, s.Text...)
			}
		}
	}
	if j.IncompleteDetails != nil {
		a.stop = j.IncompleteDetails.Reason
	}
	return a, a.finish(j.Usage, j.Error)
}

// finish reads the usage and error shared by both bodies.
func (a *apiAnswer) finish(usage, errRaw json.RawMessage) error {
	if err := a.usage.decodeSlow(usage); err != nil {
		return err
	}
	if len(errRaw) > 0 && string(errRaw) != "null" {
		a.hasError, a.errMsg = true, errorMessage(errRaw)
	}
	return nil
}

// readAPIBody reads a non-streaming Messages or Responses answer: as
// readBody, every moment is the whole body's.
func (x *exchange) readAPIBody(r io.Reader, endpoint string) {
	tr := &x.tr
	body, ok := x.readWholeBody(r)
	if !ok {
		return
	}
	decode := decodeMessagesBody
	if endpoint == EndpointResponses {
		decode = decodeResponsesBody
	}
	a, err := decode(body)
	switch {
	case err != nil:
		x.fail(ErrMalformed, fmt.Sprintf("malformed body %s: %v", x.clip(body), err))
		return
	case a.hasError:
		x.fail(ErrStreamError, "error in a 2xx body: "+string(a.errMsg))
		return
	case !a.ok:
		x.fail(ErrMalformed, fmt.Sprintf("body is not a %s answer: %s", endpoint, x.clip(body)))
		return
	}
	now := x.since()
	tr.FirstToken, tr.FirstVisible, tr.Done = now, now, now
	tr.FinishReason = finishReason([]byte(a.stop), []byte(a.status))
	if a.usage.has {
		tr.PromptTokens, tr.OutputTokens, tr.TokensFrom = a.usage.input, a.usage.output, TokensFromUsage
		tr.CachedTokens = max(a.usage.cacheRead, a.usage.cached)
	}
	if len(a.reasoning) > 0 {
		tr.ReasoningTokens = max(textPieces(a.reasoning), 1)
	}
	if a.usage.reasn > 0 {
		tr.ReasoningTokens = a.usage.reasn // the server's own count (Responses)
	}
	if x.keepText {
		tr.Text = string(a.text)
	}
}
