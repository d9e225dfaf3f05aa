package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// OpenAI's Responses API as vLLM serves it without a harmony model
// (vllm/entrypoints/openai/responses: protocol.py's ResponsesRequest and
// ResponsesResponse, serving.py, simple_streaming_events.py):
//
//   - instructions and the input (a string, or message items whose content
//     is a string or input_text/output_text parts; function_call_output
//     items as "tool" messages) render through the chat template, as chat;
//     max_output_tokens is the cap (default: the room left in
//     --max-model-len);
//   - a streaming answer is response.created and response.in_progress at
//     once, then per output item (a reasoning item for the thinking, a
//     message item for the answer) output_item.added, content_part.added,
//     the deltas (response.reasoning_text.delta, response.output_text.delta),
//     their .done, content_part.done, output_item.done, and last
//     response.completed with the whole response and its usage; each event
//     with its "event:" line and a sequence_number; no [DONE];
//   - a request cut by its token cap is status "incomplete" with
//     incomplete_details.reason "max_output_tokens";
//   - errors are chat's OpenAI-style bodies.
//
// Not served (docs/engine.md): store, background, previous_response_id,
// GET /v1/responses/{id} and /cancel (a benchmark stores nothing), tools.

// responsesRequest is the part of ResponsesRequest the engine reads.
type responsesRequest struct {
	Model              *string         `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Stream             bool            `json:"stream"`
	Background         bool            `json:"background"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	IgnoreEOS          bool            `json:"ignore_eos"`
	MinTokens          int             `json:"min_tokens"`
	reasoningParams
}

// respItem is an input item: a message, or a function call's output.
type respItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Output  json.RawMessage `json:"output"`
}

// respContent reads an input message's content: a string, or parts whose
// text it joins.
func respContent(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("Input should be a valid string or a list of content parts")
	}
	var b []byte
	for _, p := range parts {
		b = append(b, p.Text...)
	}
	return string(b), nil
}

// chat translates the body into the chat request it renders as, or says
// what is refused.
func (rr *responsesRequest) chat() (*genRequest, *reqError) {
	switch {
	case rr.Input == nil:
		return nil, invalidRequest("input", "Field required")
	case rr.Background:
		return nil, badRequest("background", "background responses are not served by the bundled engine (it stores no responses)")
	case rr.PreviousResponseID != nil:
		return nil, &reqError{status: http.StatusNotFound, param: "previous_response_id",
			msg: "Response with id '" + *rr.PreviousResponseID + "' not found."}
	}
	var msgs []chatMessage
	if rr.Instructions != nil {
		msgs = append(msgs, textMessage("system", *rr.Instructions))
	}
	in := bytes.TrimSpace(rr.Input)
	if len(in) > 0 && in[0] == '"' {
		var s string
		if err := json.Unmarshal(in, &s); err != nil {
			return nil, invalidRequest("input", "%v", err)
		}
		msgs = append(msgs, textMessage("user", s))
	} else {
		var items []respItem
		if err := json.Unmarshal(in, &items); err != nil {
			return nil, invalidRequest("input", "Input should be a valid string or a list of items")
		}
		for i, it := range items {
			m, ok, err := it.message()
			if err != nil {
				return nil, invalidRequest("input", "input.%d: %v", i, err)
			}
			if ok {
				msgs = append(msgs, m)
			}
		}
	}
	model := ""
	if rr.Model != nil {
		model = *rr.Model
	}
	return &genRequest{Model: model, Messages: msgs, MaxCompletionTokens: rr.MaxOutputTokens, Stream: rr.Stream,
		MinTokens: rr.MinTokens, IgnoreEOS: rr.IgnoreEOS, Temperature: rr.Temperature, reasoningParams: rr.reasoningParams}, nil
}

// message is the chat message an input item renders as; false for items
// that add nothing to the prompt (reasoning, the model's own calls).
func (it respItem) message() (chatMessage, bool, error) {
	switch it.Type {
	case "", "message":
		t, err := respContent(it.Content)
		role := it.Role
		if role == "developer" {
			role = "system"
		}
		return textMessage(role, t), err == nil, err
	case "function_call_output":
		t, err := respContent(it.Output)
		return textMessage("tool", t), err == nil, err
	}
	return chatMessage{}, false, nil
}

// handleResponses serves POST /v1/responses.
func (e *Engine) handleResponses(w http.ResponseWriter, hr *http.Request) {
	if !e.requestFaults(w) {
		return
	}
	rr := new(responsesRequest)
	rerr := decodeJSON(w, hr, rr)
	var req *genRequest
	if rerr == nil {
		req, rerr = rr.chat()
	}
	var g *generation
	if rerr == nil {
		g, rerr = e.generation(hr, req, true)
	}
	if rerr != nil {
		rerr.write(w)
		return
	}
	if !e.admit(hr, g) {
		return
	}
	r := g.rs[0]
	resp := e.newResponse(g, rr, time.Now().Unix())
	if req.Stream {
		e.apiStream(w, hr, r, &responsesFramer{resp: resp, r: r})
		return
	}
	if !e.awaitDone(hr, g.rs) {
		return
	}
	resp.finish(r)
	writeJSON(w, http.StatusOK, resp)
	e.logRequestEnd(r, false)
	e.requestFinished(hr)
}

// responseObject is ResponsesResponse, fields in vLLM's order, as
// model_dump writes it (nulls included).
type responseObject struct {
	ID                string             `json:"id"`
	CreatedAt         int64              `json:"created_at"`
	IncompleteDetails *incompleteDetails `json:"incomplete_details"`
	Instructions      *string            `json:"instructions"`
	Metadata          *struct{}          `json:"metadata"`
	Model             string             `json:"model"`
	Object            string             `json:"object"`
	Output            []json.RawMessage  `json:"output"`
	ParallelToolCalls bool               `json:"parallel_tool_calls"`
	Temperature       float64            `json:"temperature"`
	ToolChoice        string             `json:"tool_choice"`
	Tools             []struct{}         `json:"tools"`
	TopP              float64            `json:"top_p"`
	Background        bool               `json:"background"`
	MaxOutputTokens   int                `json:"max_output_tokens"`
	MaxToolCalls      *int               `json:"max_tool_calls"`
	PreviousResponse  *string            `json:"previous_response_id"`
	Prompt            *struct{}          `json:"prompt"`
	Reasoning         *struct{}          `json:"reasoning"`
	ServiceTier       string             `json:"service_tier"`
	Status            string             `json:"status"`
	Text              *struct{}          `json:"text"`
	TopLogprobs       *int               `json:"top_logprobs"`
	Truncation        string             `json:"truncation"`
	Usage             *responseUsage     `json:"usage"`
	User              *string            `json:"user"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

type responseUsage struct {
	InputTokens         int                  `json:"input_tokens"`
	InputTokensDetails  promptDetails        `json:"input_tokens_details"`
	OutputTokens        int                  `json:"output_tokens"`
	OutputTokensDetails reasoningTokenDetail `json:"output_tokens_details"`
	TotalTokens         int                  `json:"total_tokens"`
}

type reasoningTokenDetail struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// newResponse is the response object as response.created shows it:
// in progress, no output yet.
func (e *Engine) newResponse(g *generation, rr *responsesRequest, created int64) *responseObject {
	r := g.rs[0]
	temp, topP := 1.0, 1.0
	if rr.Temperature != nil {
		temp = *rr.Temperature
	}
	if rr.TopP != nil {
		topP = *rr.TopP
	}
	return &responseObject{ID: "resp_" + hex32(r.key^0x7265, splitmix64(r.key+uint64(r.arrival))), CreatedAt: created,
		Instructions: rr.Instructions, Model: e.served, Object: "response", Output: []json.RawMessage{},
		ParallelToolCalls: true, Temperature: temp, ToolChoice: "auto", Tools: []struct{}{}, TopP: topP,
		MaxOutputTokens: r.maxTokens, ServiceTier: "auto", Status: "in_progress", Truncation: "disabled"}
}

// itemIDs are the ids of r's reasoning and message items.
func itemIDs(r *request) (reasoning, message string) {
	return "rs_" + hex32(r.key^0x7273, r.key), "msg_" + hex32(r.key^0x6d73, r.key)
}

// finish fills the response once r is done: its output items, status,
// usage.
func (o *responseObject) finish(r *request) {
	reason, answer := apiTexts(r)
	rid, mid := itemIDs(r)
	if len(reason) > 0 {
		o.Output = append(o.Output, reasoningItem(rid, reason, "completed"))
	}
	if len(answer) > 0 || len(reason) == 0 {
		o.Output = append(o.Output, messageItem(mid, answer, "completed"))
	}
	o.Status = "completed"
	if r.finishReason() == "length" {
		o.Status, o.IncompleteDetails = "incomplete", &incompleteDetails{Reason: "max_output_tokens"}
	}
	o.Usage = &responseUsage{InputTokens: r.usagePrompt, OutputTokens: r.target, TotalTokens: r.usagePrompt + r.target,
		OutputTokensDetails: reasoningTokenDetail{r.thinking.reasoningTokens(r.target)}}
	if r.cached > 0 {
		o.Usage.InputTokensDetails.CachedTokens = r.cached
	}
}

// reasoningItem is a reasoning output item holding text (escaped).
// An item just added has no content yet.
func reasoningItem(id string, text []byte, status string) json.RawMessage {
	b := append([]byte(`{"id":`), quoted([]byte(id))...)
	if status == "in_progress" {
		return append(b, `,"summary":[],"type":"reasoning","content":null,"encrypted_content":null,"status":"in_progress"}`...)
	}
	b = append(b, `,"summary":[],"type":"reasoning","content":[{"text":"`...)
	b = append(b, text...)
	return append(b, `","type":"reasoning_text"}],"encrypted_content":null,"status":"`+status+`"}`...)
}

// messageItem is a message output item holding text (escaped).
func messageItem(id string, text []byte, status string) json.RawMessage {
	b := append([]byte(`{"id":`), quoted([]byte(id))...)
	if status == "in_progress" {
		return append(b, `,"content":[],"role":"assistant","status":"in_progress","type":"message"}`...)
	}
	b = append(b, `,"content":[{"annotations":[],"text":"`...)
	b = append(b, text...)
	return append(b, `","type":"output_text","logprobs":null}],"role":"assistant","status":"`+status+`","type":"message"}`...)
}

// responsesFramer writes one Responses stream's events.
type responsesFramer struct {
	resp    *responseObject
	r       *request
	seq     int
	item    string // the open item's kind: "", "reasoning", "message"
	index   int    // the open (or next) item's output_index
	textBuf []byte // the open item's text so far (escaped), for its .done events
}

// event appends an event of typ whose data is body (a JSON object
// without its closing brace) plus sequence_number and type.
func (f *responsesFramer) event(b []byte, typ string, body []byte) []byte {
	b = sseEvent(b, typ)
	b = append(b, body...)
	b = append(b, `,"sequence_number":`...)
	b = appendInt(b, f.seq)
	f.seq++
	return endEvent(append(b, `,"type":"`+typ+`"}`...))
}

func (f *responsesFramer) withResponse(b []byte, typ string) []byte {
	body, _ := json.Marshal(f.resp)
	return f.event(b, typ, append([]byte(`{"response":`), body...))
}

func (f *responsesFramer) start(b []byte) []byte {
	b = f.withResponse(b, "response.created")
	return f.withResponse(b, "response.in_progress")
}

func (f *responsesFramer) first(b []byte) []byte { return b }

func (f *responsesFramer) reasoning(b, text []byte) []byte {
	return f.delta(f.open(b, "reasoning"), "response.reasoning_text.delta", text)
}

func (f *responsesFramer) text(b, text []byte) []byte {
	return f.delta(f.open(b, "message"), "response.output_text.delta", text)
}

// ids are the open item's id and where it sits, as the events carry them.
func (f *responsesFramer) ids(b []byte) []byte {
	rid, mid := itemIDs(f.r)
	id := mid
	if f.item == "reasoning" {
		id = rid
	}
	b = append(b, `,"item_id":`...)
	b = appendQuoted(b, id)
	b = append(b, `,"output_index":`...)
	return appendInt(b, f.index)
}

// open closes the open item unless it is kind's and adds one of kind.
func (f *responsesFramer) open(b []byte, kind string) []byte {
	if f.item == kind {
		return b
	}
	b = f.stop(b)
	f.item, f.textBuf = kind, f.textBuf[:0]
	rid, mid := itemIDs(f.r)
	item, part := reasoningItem(rid, nil, "in_progress"), []byte(`{"type":"reasoning_text","text":""}`)
	if kind == "message" {
		item = messageItem(mid, nil, "in_progress")
		part = []byte(`{"annotations":[],"text":"","type":"output_text","logprobs":[]}`)
	}
	body := append([]byte(`{"item":`), item...)
	body = append(body, `,"output_index":`...)
	b = f.event(b, "response.output_item.added", appendInt(body, f.index))
	body = append(f.ids([]byte(`{"content_index":0`)), `,"part":`...)
	return f.event(b, "response.content_part.added", append(body, part...))
}

func (f *responsesFramer) delta(b []byte, typ string, text []byte) []byte {
	f.textBuf = append(f.textBuf, text...)
	body := append([]byte(`{"content_index":0,"delta":"`), text...)
	body = append(body, '"')
	body = f.ids(body)
	if typ == "response.output_text.delta" {
		body = append(body, `,"logprobs":[]`...)
	}
	return f.event(b, typ, body)
}

// stop closes the open item: its text's .done, content_part.done,
// output_item.done.
func (f *responsesFramer) stop(b []byte) []byte {
	if f.item == "" {
		return b
	}
	rid, mid := itemIDs(f.r)
	done, item := "response.output_text.done", messageItem(mid, f.textBuf, "completed")
	part := append(append([]byte(`{"annotations":[],"text":"`), f.textBuf...), `","type":"output_text","logprobs":null}`...)
	if f.item == "reasoning" {
		done, item = "response.reasoning_text.done", reasoningItem(rid, f.textBuf, "completed")
		part = append(append([]byte(`{"text":"`), f.textBuf...), `","type":"reasoning_text"}`...)
	}
	body := append(f.ids([]byte(`{"content_index":0`)), `,"text":"`...)
	b = f.event(b, done, append(append(body, f.textBuf...), '"'))
	body = append(f.ids([]byte(`{"content_index":0`)), `,"part":`...)
	b = f.event(b, "response.content_part.done", append(body, part...))
	body = append(append([]byte(`{"item":`), item...), `,"output_index":`...)
	b = f.event(b, "response.output_item.done", appendInt(body, f.index))
	f.item = ""
	f.index++
	return b
}

func (f *responsesFramer) closing(b []byte, r *request) []byte {
	b = f.stop(b)
	f.resp.finish(r)
	return f.withResponse(b, "response.completed")
}
