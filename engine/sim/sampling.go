package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// vLLM's sampling and request parameters beyond length (stop, stop_token_ids,
// include_stop_str_in_output, seed, echo, tools, response_format), as
// vllm/entrypoints/openai/protocol.py (ChatCompletionRequest,
// CompletionRequest) declares them and its validators check them, and as
// vLLM V1 applies them (vllm/v1/core/sched/utils.py check_stop: stop token
// ids count from min_tokens on, with or without ignore_eos;
// vllm/v1/engine/detokenizer.py: stop strings are looked for once the
// output is longer than min_tokens, the text is cut where the first one
// starts, or after it with include_stop_str_in_output, and a stop token's
// own text is left out unless include_stop_str_in_output).

// apiParams are the request fields this file and its neighbours
// (structured.go, tools.go) honour.
type apiParams struct {
	Seed           *int64          `json:"seed"`
	Stop           json.RawMessage `json:"stop"` // a string or a list of strings
	StopTokenIDs   []int64         `json:"stop_token_ids"`
	IncludeStopStr bool            `json:"include_stop_str_in_output"`
	Echo           bool            `json:"echo"`
	Tools          []toolParam     `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	ResponseFormat *responseFormat `json:"response_format"`
}

// streamOptions is stream_options, include_usage true unless said
// otherwise (vLLM's default). set records a non-empty object: vLLM refuses
// one without stream=true only when it is truthy in Python.
type streamOptions struct {
	IncludeUsage         bool `json:"include_usage"`
	ContinuousUsageStats bool `json:"continuous_usage_stats"` // usage on every chunk too (needs include_usage)
	set                  bool
}

func (so *streamOptions) UnmarshalJSON(b []byte) error {
	type plain streamOptions
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	so.IncludeUsage = true // vLLM's StreamOptions default: usage unless include_usage is false
	if err := json.Unmarshal(b, (*plain)(so)); err != nil {
		return err
	}
	so.set = len(m) > 0
	return nil
}

// completionsDefaultMaxTokens is vLLM's CompletionRequest.max_tokens
// default (chat's is the room left in the context).
const completionsDefaultMaxTokens = 16

// sampling is a request's parsed stop conditions.
type sampling struct {
	stops      []string
	stopIDs    []int64
	includeStr bool
}

// answerText is a request's answer where it is not the plain word stream
// (nil on request.out for that): pieces[i] is the text output token i adds
// (the text of a stop string left out, structured output's JSON, "" for
// the end-of-turn token or a tool call's wrapper); stopReason is the stop
// string or token id that ended it (vLLM's stop_reason), nil otherwise.
type answerText struct {
	pieces     []string
	stopReason any
	prefix     string    // echo: sent before the first token's text
	tool       *toolCall // the answer is this tool call's arguments
	guided     bool      // structured output: each step pays guidedMaskCost
}

// checkParams applies vLLM's request validators that precede everything
// else (pydantic's model validators), each a 400 naming the field.
func (req *genRequest) checkParams(chat bool) *reqError {
	if req.StreamOptions != nil && req.StreamOptions.set && !req.Stream {
		return invalidRequest("stream_options", "Stream options can only be defined when `stream=True`.")
	}
	if len(req.Stop) > 0 {
		if _, err := req.stopStrings(); err != nil {
			return invalidRequest("stop", "stop: %v", err)
		}
	}
	if chat { // completions has no tools: vLLM ignores them there, as any unknown field
		if rerr := req.checkTools(); rerr != nil {
			return rerr
		}
	}
	return req.checkResponseFormat()
}

// stopStrings is stop as a list: a string, a list of strings or null.
func (req *genRequest) stopStrings() ([]string, error) {
	raw := bytes.TrimSpace(req.Stop)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, nil
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		return ss, nil
	}
	return nil, fmt.Errorf("Input should be a valid string or a list of strings")
}

// sampling returns the request's stop conditions (nil: none).
func (req *genRequest) sampling() *sampling {
	stops, _ := req.stopStrings() // checked by checkParams
	stops = slices.DeleteFunc(stops, func(s string) bool { return s == "" })
	if len(stops) == 0 && len(req.StopTokenIDs) == 0 {
		return nil
	}
	return &sampling{stops: stops, stopIDs: req.StopTokenIDs, includeStr: req.IncludeStopStr}
}

// reseed makes the request's text and length follow its seed: the same
// seed gives the same answer to the same prompt, another seed another
// answer (vLLM seeds the request's own sampler with it).
func (e *Engine) reseed(r *request, seed int64, minTokens int, ignoreEOS bool) {
	r.key = splitmix64(r.key ^ splitmix64(uint64(seed)^0x73656564))
	e.setLength(r, minTokens, ignoreEOS)
}

// applyStops ends r's plain word stream at its first stop token id or
// stop string, as vLLM does, leaving target and the text shorter.
func (e *Engine) applyStops(r *request, sp *sampling, minTokens int) {
	if sp == nil || r.out != nil {
		return
	}
	words := r.target
	if r.natural == "stop" {
		words-- // the end-of-turn token: no text, no id among stop_token_ids
	}
	var text strings.Builder
	for i := 0; i < words; i++ {
		w := tokenIndex(r.key, i)
		if i+1 >= minTokens && slices.Contains(sp.stopIDs, int64(e.sched.vocabIDs[w])) {
			end := text.Len()
			if sp.includeStr {
				end += len(vocab[w])
			}
			text.WriteString(vocab[w])
			r.stopAt(i+1, text.String()[:end], int64(e.sched.vocabIDs[w]))
			return
		}
		prev := text.Len()
		text.WriteString(vocab[w])
		if i+1 <= minTokens {
			continue
		}
		s := text.String()
		for _, stop := range sp.stops {
			from := max(0, prev-len(stop)+1)
			if k := strings.Index(s[from:], stop); k >= 0 {
				end := from + k
				if sp.includeStr {
					end += len(stop)
				}
				r.stopAt(i+1, s[:end], stop)
				return
			}
		}
	}
}

// stopAt ends r after n plain tokens with text (a prefix of theirs) and the
// stop reason: each token's piece is its share of text.
func (r *request) stopAt(n int, text string, reason any) {
	out := &answerText{pieces: make([]string, n), stopReason: reason}
	at := 0
	for i := range n {
		w := vocab[tokenIndex(r.key, i)]
		end := min(at+len(w), len(text))
		out.pieces[i] = text[min(at, end):end]
		at += len(w)
	}
	r.out = out
	r.target, r.natural = n, "stop"
	if r.emitAt != nil {
		r.emitAt = r.emitAt[:n]
	}
}

// piece is the text output token i adds to r's answer.
func (r *request) piece(i int) string {
	if r.out != nil && r.out.pieces != nil {
		return r.out.pieces[i]
	}
	if i == r.target-1 && r.natural == "stop" {
		return "" // the end-of-turn token
	}
	return tokenText(r.key, i)
}

// endsWithEOS reports whether r's last token is the end-of-turn token.
func (r *request) endsWithEOS() bool {
	return r.natural == "stop" && (r.out == nil || r.out.stopReason == nil)
}

// stopReason is r's stop_reason as JSON: the stop string or token id, or
// null.
func (r *request) stopReasonJSON() json.RawMessage {
	if r.out == nil || r.out.stopReason == nil {
		return nil
	}
	b, _ := json.Marshal(r.out.stopReason)
	return b
}

// typeErrorMessage renders a JSON type mismatch in the request body as
// pydantic does, naming the field, not the Go type.
func typeErrorMessage(field, got string, want reflect.Type) string {
	kind := "a valid value"
	for want.Kind() == reflect.Pointer {
		want = want.Elem()
	}
	switch want.Kind() {
	case reflect.Slice, reflect.Array:
		kind = "a valid list"
	case reflect.Struct, reflect.Map:
		kind = "a valid dictionary"
	case reflect.String:
		kind = "a valid string"
	case reflect.Bool:
		kind = "a valid boolean"
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64:
		kind = "a valid integer"
	case reflect.Float32, reflect.Float64:
		kind = "a valid number"
	}
	if field == "" {
		field = "body"
	}
	return fmt.Sprintf("%s: Input should be %s, got %s", field, kind, got)
}
