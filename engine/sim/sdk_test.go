package sim_test

import (
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// sdkEngine is a bundled engine with an API key and a reasoning parser, so
// the SDKs meet both the key check and thinking output.
func sdkEngine(t *testing.T) *sim.Engine {
	return simtest.Start(t, func(o *sim.Options) {
		o.APIKey = "k"
		o.ReasoningParser, o.ReasoningTokens = sim.ParserQwen3, "4"
	})
}

// TestAnthropicSDK: Anthropic's official Go SDK drives /v1/messages,
// streaming (its Accumulate checks the block order and indices) and not,
// and count_tokens, and parses every answer without error; the streamed
// message equals the whole one.
func TestAnthropicSDK(t *testing.T) {
	e := sdkEngine(t)
	c := anthropic.NewClient(aoption.WithBaseURL(e.BaseURL()), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(servedModel),
		MaxTokens: 16,
		System:    []anthropic.TextBlockParam{{Text: "be brief"}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("tell me"))},
	}
	whole, err := c.Messages.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	stream := c.Messages.NewStreaming(t.Context(), params)
	var acc anthropic.Message
	texts := 0
	for stream.Next() {
		ev := stream.Current()
		if err := acc.Accumulate(ev); err != nil {
			t.Fatalf("accumulating %s: %v", ev.Type, err)
		}
		if d, ok := ev.AsAny().(anthropic.ContentBlockDeltaEvent); ok && d.Delta.Type == "text_delta" {
			texts++
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	blocks := func(m *anthropic.Message) (thinking, text string) {
		for _, b := range m.Content {
			switch v := b.AsAny().(type) {
			case anthropic.ThinkingBlock:
				thinking += v.Thinking
			case anthropic.TextBlock:
				text += v.Text
			}
		}
		return thinking, text
	}
	wt, wx := blocks(whole)
	st, sx := blocks(&acc)
	if wt == "" || wx == "" || st != wt || sx != wx || texts == 0 || acc.StopReason != whole.StopReason ||
		acc.Usage.OutputTokens != whole.Usage.OutputTokens || whole.Usage.InputTokens == 0 {
		t.Errorf("whole: thinking %q text %q stop %s usage %+v\nstreamed: thinking %q text %q stop %s usage %+v",
			wt, wx, whole.StopReason, whole.Usage, st, sx, acc.StopReason, acc.Usage)
	}
	n, err := c.Messages.CountTokens(t.Context(), anthropic.MessageCountTokensParams{Model: params.Model,
		Messages: params.Messages, System: anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: params.System}})
	if err != nil {
		t.Fatal(err)
	}
	if n.InputTokens != whole.Usage.InputTokens {
		t.Errorf("count_tokens %d, the request's input_tokens %d", n.InputTokens, whole.Usage.InputTokens)
	}
	bad := params
	bad.Model = "nope"
	if _, err := c.Messages.New(t.Context(), bad); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown model: error %v, want the SDK's 404", err)
	}
}

// TestOpenAIResponsesSDK: OpenAI's official Go SDK drives /v1/responses,
// streaming and not, and /v1/chat/completions, and parses every answer
// without error; the streamed text equals the whole answer's.
func TestOpenAIResponsesSDK(t *testing.T) {
	e := sdkEngine(t)
	c := openai.NewClient(ooption.WithBaseURL(e.BaseURL()+"/v1/"), ooption.WithAPIKey("k"), ooption.WithMaxRetries(0))
	params := responses.ResponseNewParams{
		Model:           servedModel,
		Instructions:    openai.String("be brief"),
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("tell me")},
		MaxOutputTokens: openai.Int(16),
	}
	whole, err := c.Responses.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	stream := c.Responses.NewStreaming(t.Context(), params)
	var text, reasoning strings.Builder
	var final responses.Response
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.AsResponseOutputTextDelta().Delta)
		case "response.reasoning_text.delta":
			reasoning.WriteString(ev.AsResponseReasoningTextDelta().Delta)
		case "response.completed":
			final = ev.AsResponseCompleted().Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if whole.OutputText() == "" || text.String() != whole.OutputText() || final.OutputText() != whole.OutputText() ||
		reasoning.Len() == 0 || final.Usage.OutputTokens != 16 || whole.Usage.OutputTokensDetails.ReasoningTokens != 4 ||
		whole.Status != "incomplete" {
		t.Errorf("whole %q (status %s, usage %+v); streamed %q, final %q, reasoning %q", whole.OutputText(), whole.Status,
			whole.Usage, text.String(), final.OutputText(), reasoning.String())
	}
	cc, err := c.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: servedModel, MaxTokens: openai.Int(8),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("tell me")}})
	if err != nil || len(cc.Choices) != 1 || cc.Usage.CompletionTokens != 8 {
		t.Errorf("chat: %v, %+v", err, cc)
	}
	cs := c.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{Model: servedModel, MaxTokens: openai.Int(8),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("tell me")}})
	chunks := 0
	for cs.Next() {
		chunks++
	}
	if err := cs.Err(); err != nil || chunks == 0 {
		t.Errorf("chat stream: %d chunks, %v", chunks, err)
	}
}
