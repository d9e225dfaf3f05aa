package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/servebench/servebench/engine/tok"
)

// Prompt tokenization shared by the generate endpoints and vLLM's
// /tokenize and /detokenize (vllm/entrypoints/openai/protocol.py:
// TokenizeCompletionRequest, TokenizeChatRequest, TokenizeResponse,
// DetokenizeRequest, DetokenizeResponse).

// chatOptions are vLLM's chat-template request parameters.
type chatOptions struct {
	AddGenerationPrompt  *bool `json:"add_generation_prompt"`  // default true
	ContinueFinalMessage bool  `json:"continue_final_message"` // default false
	AddSpecialTokens     *bool `json:"add_special_tokens"`     // default false for chats, true for prompts
}

// addSpecial is add_special_tokens, def when the request leaves it out.
func (o chatOptions) addSpecial(def bool) bool {
	if o.AddSpecialTokens == nil {
		return def
	}
	return *o.AddSpecialTokens
}

// chatIDs renders messages with the model's chat template and tokenizes
// the result; text is the messages' roles and contents, which seed the
// answer.
func (e *Engine) chatIDs(msgs []chatMessage, o chatOptions) (ids []uint32, text string, rerr *reqError) {
	if len(msgs) == 0 {
		return nil, "", badRequest("messages", "messages: want at least one message")
	}
	addGen := o.AddGenerationPrompt == nil || *o.AddGenerationPrompt
	if o.ContinueFinalMessage && addGen {
		return nil, "", badRequest("continue_final_message", "Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
	}
	tm := make([]tok.Message, len(msgs))
	var b strings.Builder
	for i, m := range msgs {
		t, err := m.text()
		if err != nil {
			return nil, "", badRequest("messages", "messages.%d.content: %v", i, err)
		}
		tm[i] = tok.Message{Role: m.Role, Content: t}
		b.WriteString(m.Role)
		b.WriteString(t)
	}
	rendered := e.tok.ApplyChatTemplate(tm, addGen)
	if o.ContinueFinalMessage {
		// As Hugging Face does: cut the rendering after the last message's
		// content, leaving that message open.
		last := tm[len(tm)-1].Content
		if k := strings.LastIndex(rendered, strings.TrimSpace(last)); k >= 0 && last != "" {
			rendered = rendered[:k+len(strings.TrimSpace(last))]
		}
	}
	return e.encode(rendered, o.addSpecial(false)), b.String(), nil
}

// encode tokenizes text, with the model's BOS first when addSpecial is set
// (as Hugging Face's add_special_tokens does; Qwen2.5 has none).
func (e *Engine) encode(text string, addSpecial bool) []uint32 {
	ids := make([]uint32, 0, len(text)/4+2)
	if bos, ok := e.tok.BOS(); ok && addSpecial {
		ids = append(ids, bos)
	}
	return e.tok.AppendEncode(ids, text)
}

// promptIn is one prompt of a request: its token ids and the text that
// seeds its answer.
type promptIn struct {
	ids  []uint32
	text string
	raw  bool // given as token IDs: text is their JSON
}

// promptList tokenizes a completions prompt as vLLM's CompletionRequest
// takes it: a string, a list of strings, token IDs (taken as they are) or
// a list of token-ID lists; each list entry is a prompt of its own.
func (e *Engine) promptList(raw json.RawMessage, addSpecial bool) ([]promptIn, error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("prompt is required")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []promptIn{{e.encode(s, addSpecial), s, false}}, nil
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil && len(ss) > 0 {
		ins := make([]promptIn, len(ss))
		for i, s := range ss {
			ins[i] = promptIn{e.encode(s, addSpecial), s, false}
		}
		return ins, nil
	}
	var ids []uint32
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return []promptIn{{ids, string(raw), true}}, nil
	}
	var lists []json.RawMessage
	if json.Unmarshal(raw, &lists) == nil && len(lists) > 0 {
		ins := make([]promptIn, len(lists))
		for i, l := range lists {
			if json.Unmarshal(l, &ids) != nil || len(ids) == 0 {
				return nil, fmt.Errorf("prompt[%d]: want a non-empty list of token IDs", i)
			}
			ins[i] = promptIn{ids, string(l), true}
		}
		return ins, nil
	}
	return nil, errors.New("prompt must be a string, a list of strings, a list of token IDs or a list of such lists")
}

// echoText is the text a prompt echoes: its own, or its token IDs'.
func (e *Engine) echoText(in promptIn) string {
	if !in.raw {
		return in.text
	}
	s, _ := e.tok.Decode(in.ids)
	return s
}

// tokenizeRequest is either of vLLM's tokenize bodies: prompt
// (TokenizeCompletionRequest) or messages (TokenizeChatRequest).
type tokenizeRequest struct {
	Model    string          `json:"model"`
	Prompt   json.RawMessage `json:"prompt"`
	Messages []chatMessage   `json:"messages"`
	chatOptions
	ReturnTokenStrs bool `json:"return_token_strs"`
}

// tokenizeResponse is vLLM's TokenizeResponse, fields in its order.
type tokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []uint32 `json:"tokens"`
	TokenStrs   []string `json:"token_strs"` // null unless return_token_strs
}

// handleTokenize serves POST /tokenize: the ids the engine would count as
// usage.prompt_tokens for the same prompt or messages.
func (e *Engine) handleTokenize(w http.ResponseWriter, hr *http.Request) {
	var req tokenizeRequest
	rerr := decodeJSON(w, hr, &req)
	if rerr == nil {
		rerr = e.checkModel(req.Model)
	}
	if rerr != nil {
		rerr.write(w)
		return
	}
	var ids []uint32
	switch {
	case req.Messages != nil:
		ids, _, rerr = e.chatIDs(req.Messages, req.chatOptions)
	case len(req.Prompt) > 0:
		var s string
		if err := json.Unmarshal(req.Prompt, &s); err != nil {
			rerr = badRequest("prompt", "prompt must be a string")
			break
		}
		ids = e.encode(s, req.addSpecial(true))
	default:
		rerr = badRequest("", "body must have either prompt (a string) or messages")
	}
	if rerr != nil {
		rerr.write(w)
		return
	}
	resp := tokenizeResponse{Count: len(ids), MaxModelLen: e.opts.MaxModelLen, Tokens: ids}
	if req.ReturnTokenStrs {
		resp.TokenStrs = make([]string, len(ids))
		for i, id := range ids {
			resp.TokenStrs[i], _ = e.tok.TokenString(id)
		}
	}
	writeJSON(w, http.StatusOK, &resp)
}

// detokenizeRequest and detokenizeResponse are vLLM's DetokenizeRequest
// and DetokenizeResponse.
type detokenizeRequest struct {
	Model  string   `json:"model"`
	Tokens []uint32 `json:"tokens"`
}

type detokenizeResponse struct {
	Prompt string `json:"prompt"`
}

// handleDetokenize serves POST /detokenize: the text of token ids.
func (e *Engine) handleDetokenize(w http.ResponseWriter, hr *http.Request) {
	var req detokenizeRequest
	rerr := decodeJSON(w, hr, &req)
	if rerr == nil {
		rerr = e.checkModel(req.Model)
	}
	if rerr == nil && req.Tokens == nil {
		rerr = badRequest("tokens", "tokens: want a list of token ids")
	}
	var text string
	if rerr == nil {
		var err error
		if text, err = e.tok.Decode(req.Tokens); err != nil {
			rerr = badRequest("tokens", "%v", err)
		}
	}
	if rerr != nil {
		rerr.write(w)
		return
	}
	writeJSON(w, http.StatusOK, &detokenizeResponse{Prompt: text})
}
