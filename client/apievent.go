package client

import (
	"encoding/json"
	"fmt"
)

// APIEvent holds what the client reads from one event of an Anthropic
// Messages stream or an OpenAI Responses stream. Both name the event in its
// data's "type" (the SSE "event:" line repeats it; the reader ignores it).
// A field that is absent or JSON null is nil (slices) or zero (counts).
//
// Which event fills which field:
//   - Text: content_block_delta's delta.text (text_delta);
//     response.output_text.delta's delta
//   - Reasoning: content_block_delta's delta.thinking (thinking_delta);
//     response.reasoning_text.delta's and
//     response.reasoning_summary_text.delta's delta
//   - ToolArgs: content_block_delta's delta.partial_json (input_json_delta);
//     response.function_call_arguments.delta's delta
//   - StopReason: message_delta's delta.stop_reason; a final response's
//     incomplete_details.reason
//   - usage: message_start's message.usage, message_delta's usage, a final
//     response's response.usage
//   - errors: a top-level "error" (Anthropic's error event, vLLM's mid-stream
//     error), an OpenAI error event's top-level "message", response.error
//
// The slices point into the decoded input or into the decoder's own
// buffer: they are valid until the next Decode and until the input changes.
type APIEvent struct {
	Type       []byte
	Text       []byte
	Reasoning  []byte
	ToolArgs   []byte
	StopReason []byte
	Status     []byte // a final response's status (completed, incomplete, failed)
	HasUsage   bool
	// InputTokens, OutputTokens: usage's input_tokens and output_tokens;
	// CachedTokens: cache_read_input_tokens (Anthropic) or
	// input_tokens_details.cached_tokens (Responses); ReasoningTokens:
	// output_tokens_details.reasoning_tokens (Responses).
	InputTokens, OutputTokens, CachedTokens, ReasoningTokens int
	HasError                                                 bool
	ErrorMessage                                             []byte
}

// Event types the client acts on.
const (
	evMessageStart      = "message_start"
	evBlockDelta        = "content_block_delta"
	evMessageDelta      = "message_delta"
	evMessageStop       = "message_stop"
	evError             = "error"
	evTextDelta         = "response.output_text.delta"
	evReasoningDelta    = "response.reasoning_text.delta"
	evReasoningSumDelta = "response.reasoning_summary_text.delta"
	evArgsDelta         = "response.function_call_arguments.delta"
	evCompleted         = "response.completed"
	evIncomplete        = "response.incomplete"
	evFailed            = "response.failed"
)

// Final reports whether the event ends its stream: message_stop, or a
// response that completed, stopped short or failed. Neither API sends
// [DONE].
func (ev *APIEvent) Final() bool {
	switch string(ev.Type) {
	case evMessageStop, evCompleted, evIncomplete, evFailed:
		return true
	}
	return false
}

// APIEventDecoder decodes Messages and Responses events as ChunkDecoder
// decodes chat chunks: the allocation-free scanner, with encoding/json as
// the reference whenever the scanner is unsure (FuzzAPIEventDecode checks
// them against each other). Not safe for concurrent use.
type APIEventDecoder struct {
	scratch []byte
	ev      APIEvent
}

// trim drops the last event (it points into a pooled buffer) and a scratch
// buffer grown by one huge event.
func (d *APIEventDecoder) trim() {
	d.ev = APIEvent{}
	if cap(d.scratch) > 1<<20 {
		d.scratch = nil
	}
}

// Decode decodes one event's data. The returned event is owned by d and
// valid until the next Decode. The error is encoding/json's when data is
// not valid JSON or a field has the wrong type.
func (d *APIEventDecoder) Decode(data []byte) (*APIEvent, error) {
	if cap(d.scratch) < len(data) {
		d.scratch = make([]byte, 0, len(data)+len(data)/2)
	}
	var p apiParts
	s := scanner{b: data, out: d.scratch[:0]}
	if s.apiTop(&p) == nil {
		p.fill(&d.ev)
		return &d.ev, nil
	}
	p = apiParts{}
	if err := p.decodeSlow(data); err != nil {
		d.ev = APIEvent{}
		return nil, fmt.Errorf("decoding event: %w", err)
	}
	p.fill(&d.ev)
	return &d.ev, nil
}

// apiParts keeps every candidate field apart, so that the scanner and
// encoding/json feed the same precedence rules (fill).
type apiParts struct {
	typ        []byte
	deltaStr   []byte // "delta" as a string (Responses)
	delta      apiDelta
	msgUsage   apiUsage // message.usage (message_start)
	usage      apiUsage // top-level usage (message_delta)
	resp       apiResponse
	hasError   bool
	errMsg     []byte
	topMessage []byte // "message" as a string (an OpenAI error event's)
}

// apiDelta is "delta" as an object (Anthropic).
type apiDelta struct {
	text, thinking, partialJSON, stopReason []byte
}

type apiUsage struct {
	has                                     bool
	input, output, cacheRead, cached, reasn int
}

// apiResponse is a Responses event's "response" object.
type apiResponse struct {
	status, reason []byte
	usage          apiUsage
	hasError       bool
	errMsg         []byte
}

func (p *apiParts) fill(ev *APIEvent) {
	*ev = APIEvent{Type: p.typ}
	switch string(p.typ) {
	case evBlockDelta:
		ev.Text, ev.Reasoning, ev.ToolArgs = p.delta.text, p.delta.thinking, p.delta.partialJSON
	case evMessageDelta:
		ev.StopReason = p.delta.stopReason
	case evTextDelta:
		ev.Text = p.deltaStr
	case evReasoningDelta, evReasoningSumDelta:
		ev.Reasoning = p.deltaStr
	case evArgsDelta:
		ev.ToolArgs = p.deltaStr
	}
	u := p.usage
	switch {
	case p.resp.usage.has:
		u = p.resp.usage
	case p.msgUsage.has:
		u = p.msgUsage
	}
	if u.has {
		ev.HasUsage = true
		ev.InputTokens, ev.OutputTokens, ev.ReasoningTokens = u.input, u.output, u.reasn
		ev.CachedTokens = max(u.cacheRead, u.cached)
	}
	ev.Status = p.resp.status
	if ev.StopReason == nil {
		ev.StopReason = p.resp.reason
	}
	switch {
	case p.hasError:
		ev.HasError, ev.ErrorMessage = true, p.errMsg
	case p.resp.hasError:
		ev.HasError, ev.ErrorMessage = true, p.resp.errMsg
	case string(p.typ) == evError || string(p.typ) == evFailed:
		ev.HasError, ev.ErrorMessage = true, p.topMessage
	}
}

// Interesting keys per level of an event.
var (
	apiTopKeys      = []string{"type", "delta", "message", "usage", "error", "response"}
	apiDeltaKeys    = []string{"text", "thinking", "partial_json", "stop_reason"}
	apiMessageKeys  = []string{"usage"}
	apiUsageKeys    = []string{"input_tokens", "output_tokens", "cache_read_input_tokens", "input_tokens_details", "output_tokens_details"}
	apiCachedKeys   = []string{"cached_tokens"}
	apiReasnKeys    = []string{"reasoning_tokens"}
	apiResponseKeys = []string{"status", "usage", "incomplete_details", "error"}
	apiReasonKeys   = []string{"reason"}
)

// apiTop parses the whole input as one event object.
func (s *scanner) apiTop(p *apiParts) error {
	s.ws()
	err := s.object(apiTopKeys, func(k int) error {
		var err error
		switch k {
		case 0:
			p.typ, _, err = s.stringValue()
		case 1:
			err = s.apiDelta(p)
		case 2:
			err = s.apiMessage(p)
		case 3:
			err = s.apiUsage(&p.usage)
		case 4:
			var c chunkParts
			err = s.errorValue(&c)
			p.hasError, p.errMsg = c.hasError, c.errMsg
		default:
			err = s.apiResponse(&p.resp)
		}
		return err
	})
	if err != nil {
		return err
	}
	if s.ws(); s.i != len(s.b) {
		return errDecline
	}
	return nil
}

// at reports the next byte, 0 at the end.
func (s *scanner) at() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// apiDelta reads "delta": a string (Responses), an object (Anthropic);
// anything else carries nothing.
func (s *scanner) apiDelta(p *apiParts) error {
	switch s.at() {
	case '"':
		var err error
		p.deltaStr, _, err = s.stringValue()
		return err
	case '{':
		d := &p.delta
		return s.object(apiDeltaKeys, func(k int) error {
			var err error
			switch k {
			case 0:
				d.text, _, err = s.stringValue()
			case 1:
				d.thinking, _, err = s.stringValue()
			case 2:
				d.partialJSON, _, err = s.stringValue()
			default:
				d.stopReason, _, err = s.stringValue()
			}
			return err
		})
	}
	return s.skip(0)
}

// apiMessage reads "message": message_start's message (its usage), or an
// OpenAI error event's text.
func (s *scanner) apiMessage(p *apiParts) error {
	switch s.at() {
	case '"':
		var err error
		p.topMessage, _, err = s.stringValue()
		return err
	case '{':
		return s.object(apiMessageKeys, func(int) error { return s.apiUsage(&p.msgUsage) })
	}
	return s.skip(0)
}

// apiUsage reads a usage object of either API; null or another type is
// no usage.
func (s *scanner) apiUsage(u *apiUsage) error {
	if s.at() != '{' {
		return s.skip(0)
	}
	u.has = true
	return s.object(apiUsageKeys, func(k int) error {
		var err error
		switch k {
		case 0:
			u.input, err = s.intValue()
		case 1:
			u.output, err = s.intValue()
		case 2:
			u.cacheRead, err = s.intValue()
		case 3:
			err = s.apiCount(apiCachedKeys, &u.cached)
		default:
			err = s.apiCount(apiReasnKeys, &u.reasn)
		}
		return err
	})
}

// apiCount reads an object holding one count (input_tokens_details,
// output_tokens_details); null or another type leaves it 0.
func (s *scanner) apiCount(keys []string, v *int) error {
	if s.at() != '{' {
		return s.skip(0)
	}
	return s.object(keys, func(int) error {
		var err error
		*v, err = s.intValue()
		return err
	})
}

func (s *scanner) apiResponse(r *apiResponse) error {
	if s.at() != '{' {
		return s.skip(0)
	}
	return s.object(apiResponseKeys, func(k int) error {
		var err error
		switch k {
		case 0:
			r.status, _, err = s.stringValue()
		case 1:
			err = s.apiUsage(&r.usage)
		case 2:
			if s.at() != '{' {
				return s.skip(0)
			}
			err = s.object(apiReasonKeys, func(int) error {
				var err error
				r.reason, _, err = s.stringValue()
				return err
			})
		default:
			var c chunkParts
			err = s.errorValue(&c)
			r.hasError, r.errMsg = c.hasError, c.errMsg
		}
		return err
	})
}

// Reference shapes for encoding/json. Raw values whose type decides their
// meaning ("delta", "message") and objects that may be another type are
// decoded apart, by rawObject.
type jsonAPIEvent struct {
	Type     *string         `json:"type"`
	Delta    json.RawMessage `json:"delta"`
	Message  json.RawMessage `json:"message"`
	Usage    json.RawMessage `json:"usage"`
	Error    json.RawMessage `json:"error"`
	Response json.RawMessage `json:"response"`
}

type jsonAPIDelta struct {
	Text        *string `json:"text"`
	Thinking    *string `json:"thinking"`
	PartialJSON *string `json:"partial_json"`
	StopReason  *string `json:"stop_reason"`
}

type jsonAPIUsage struct {
	InputTokens   int             `json:"input_tokens"`
	OutputTokens  int             `json:"output_tokens"`
	CacheRead     int             `json:"cache_read_input_tokens"`
	InputDetails  json.RawMessage `json:"input_tokens_details"`
	OutputDetails json.RawMessage `json:"output_tokens_details"`
}

type jsonAPIResponse struct {
	Status            *string         `json:"status"`
	Usage             json.RawMessage `json:"usage"`
	IncompleteDetails json.RawMessage `json:"incomplete_details"`
	Error             json.RawMessage `json:"error"`
}

// rawObject decodes raw into v when it is an object; false (and no error)
// when it is absent, null or another type.
func rawObject(raw json.RawMessage, v any) (bool, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
}

// rawString is raw as a string when it is one.
func rawString(raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 || raw[0] != '"' {
		return nil, nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return []byte(s), err
}

// decodeSlow decodes with encoding/json into p.
func (p *apiParts) decodeSlow(data []byte) error {
	var j jsonAPIEvent
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	p.typ, _ = strPart(j.Type)
	var err error
	if p.deltaStr, err = rawString(j.Delta); err != nil {
		return err
	}
	var d jsonAPIDelta
	if _, err := rawObject(j.Delta, &d); err != nil {
		return err
	}
	p.delta = apiDelta{bytesOf(d.Text), bytesOf(d.Thinking), bytesOf(d.PartialJSON), bytesOf(d.StopReason)}
	if p.topMessage, err = rawString(j.Message); err != nil {
		return err
	}
	var m struct {
		Usage json.RawMessage `json:"usage"`
	}
	if _, err := rawObject(j.Message, &m); err != nil {
		return err
	}
	if err := p.msgUsage.decodeSlow(m.Usage); err != nil {
		return err
	}
	if err := p.usage.decodeSlow(j.Usage); err != nil {
		return err
	}
	if len(j.Error) > 0 && string(j.Error) != "null" {
		p.hasError, p.errMsg = true, errorMessage(j.Error)
	}
	return p.resp.decodeSlow(j.Response)
}

func bytesOf(s *string) []byte {
	b, _ := strPart(s)
	return b
}

func (u *apiUsage) decodeSlow(raw json.RawMessage) error {
	var j jsonAPIUsage
	ok, err := rawObject(raw, &j)
	if !ok || err != nil {
		return err
	}
	*u = apiUsage{has: true, input: j.InputTokens, output: j.OutputTokens, cacheRead: j.CacheRead}
	var c struct {
		V int `json:"cached_tokens"`
	}
	if _, err := rawObject(j.InputDetails, &c); err != nil {
		return err
	}
	var r struct {
		V int `json:"reasoning_tokens"`
	}
	if _, err := rawObject(j.OutputDetails, &r); err != nil {
		return err
	}
	u.cached, u.reasn = c.V, r.V
	return nil
}

func (r *apiResponse) decodeSlow(raw json.RawMessage) error {
	var j jsonAPIResponse
	ok, err := rawObject(raw, &j)
	if !ok || err != nil {
		return err
	}
	r.status, _ = strPart(j.Status)
	if err := r.usage.decodeSlow(j.Usage); err != nil {
		return err
	}
	var d struct {
		Reason *string `json:"reason"`
	}
	if _, err := rawObject(j.IncompleteDetails, &d); err != nil {
		return err
	}
	r.reason, _ = strPart(d.Reason)
	if len(j.Error) > 0 && string(j.Error) != "null" {
		r.hasError, r.errMsg = true, errorMessage(j.Error)
	}
	return nil
}
