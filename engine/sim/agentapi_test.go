package sim_test

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

const servedModel = "Qwen/Qwen2.5-7B-Instruct-AWQ"

// typedEvents reads an SSE body of typed events: each event's "event:"
// line must name the type its data says.
func typedEvents(t testing.TB, r io.Reader) (types []string, data []map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("event %s: %v: %s", name, err, line)
			}
			if d["type"] != name {
				t.Fatalf("event line %q, data type %v", name, d["type"])
			}
			types, data = append(types, name), append(data, d)
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return types, data
}

func messagesBody(content string, maxTokens int, stream bool) map[string]any {
	return map[string]any{"model": servedModel, "max_tokens": maxTokens, "stream": stream, "ignore_eos": true,
		"system": "be brief", "messages": []map[string]any{{"role": "user", "content": content}}}
}

func responsesBody(content string, maxTokens int, stream bool) map[string]any {
	return map[string]any{"model": servedModel, "max_output_tokens": maxTokens, "stream": stream, "ignore_eos": true,
		"instructions": "be brief", "input": []map[string]any{{"role": "user", "content": content}}}
}

// deltas joins the deltas of the events of type typ under key (a
// nested "delta.text" or a plain "delta").
func deltas(types []string, data []map[string]any, typ, key string) (string, int) {
	var b strings.Builder
	n := 0
	for i, ty := range types {
		if ty != typ {
			continue
		}
		d := data[i]
		if k, ok := strings.CutPrefix(key, "delta."); ok {
			if m, ok := d["delta"].(map[string]any); ok && m[k] != nil {
				b.WriteString(m[k].(string))
				n++
			}
			continue
		}
		b.WriteString(d[key].(string))
		n++
	}
	return b.String(), n
}

// TestMessagesStream: a streaming Messages answer as vLLM converts chat's:
// message_start, one text block with a delta per token, message_delta with
// the stop reason and usage, message_stop; the same text as the
// non-streaming answer and as chat's for the same conversation.
func TestMessagesStream(t *testing.T) {
	e := simtest.Start(t, nil)
	resp := post(t, e, "/v1/messages", messagesBody("tell me", 12, true), "X-Request-Id", "m-1")
	types, data := typedEvents(t, resp.Body)
	resp.Body.Close()
	want := []string{"message_start", "content_block_start"}
	if len(types) != 12+5 || strings.Join(types[:2], ",") != strings.Join(want, ",") ||
		strings.Join(types[14:], ",") != "content_block_stop,message_delta,message_stop" {
		t.Fatalf("event types %v", types)
	}
	text, n := deltas(types, data, "content_block_delta", "delta.text")
	md := data[15]
	usage := md["usage"].(map[string]any)
	if n != 12 || md["delta"].(map[string]any)["stop_reason"] != "max_tokens" || usage["output_tokens"] != 12.0 {
		t.Errorf("%d text deltas, message_delta %v", n, md)
	}
	if id := data[0]["message"].(map[string]any)["id"]; id != "chatcmpl-m-1" {
		t.Errorf("message id %v, want the request id's", id)
	}
	resp = post(t, e, "/v1/messages", messagesBody("tell me", 12, false))
	var whole struct {
		Type       string `json:"type"`
		StopReason string `json:"stop_reason"`
		Content    []struct{ Type, Text string }
		Usage      struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
	}
	json.NewDecoder(resp.Body).Decode(&whole)
	resp.Body.Close()
	if whole.Type != "message" || len(whole.Content) != 1 || whole.Content[0].Text != text || whole.StopReason != "max_tokens" {
		t.Errorf("non-streaming %+v; streamed text %q", whole, text)
	}
	resp = post(t, e, "/v1/messages/count_tokens", map[string]any{"model": servedModel, "system": "be brief",
		"messages": []map[string]any{{"role": "user", "content": []map[string]any{{"type": "text", "text": "tell me"}}}}})
	var count struct {
		InputTokens int `json:"input_tokens"`
	}
	json.NewDecoder(resp.Body).Decode(&count)
	resp.Body.Close()
	if count.InputTokens == 0 || count.InputTokens != whole.Usage.InputTokens {
		t.Errorf("count_tokens %d, the request's input_tokens %d", count.InputTokens, whole.Usage.InputTokens)
	}
	c := chat("tell me", 12, false)
	c["messages"] = []map[string]string{{"role": "system", "content": "be brief"}, {"role": "user", "content": "tell me"}}
	resp = post(t, e, "/v1/chat/completions", c)
	var cc struct {
		Choices []struct{ Message struct{ Content string } }
	}
	json.NewDecoder(resp.Body).Decode(&cc)
	resp.Body.Close()
	if len(cc.Choices) != 1 || cc.Choices[0].Message.Content != text {
		t.Errorf("chat's answer %+v, Messages' %q", cc, text)
	}
}

// TestResponsesStream: a streaming Responses answer: created and
// in_progress, the message item's added events, a text delta per token,
// the done events, completed (incomplete: cut by max_output_tokens) with
// usage; sequence numbers count up from 0; the text equals the
// non-streaming answer's.
func TestResponsesStream(t *testing.T) {
	e := simtest.Start(t, nil)
	resp := post(t, e, "/v1/responses", responsesBody("tell me", 10, true))
	types, data := typedEvents(t, resp.Body)
	resp.Body.Close()
	head := "response.created,response.in_progress,response.output_item.added,response.content_part.added"
	tail := "response.output_text.done,response.content_part.done,response.output_item.done,response.completed"
	if len(types) != 10+8 || strings.Join(types[:4], ",") != head || strings.Join(types[14:], ",") != tail {
		t.Fatalf("event types %v", types)
	}
	for i, d := range data {
		if d["sequence_number"] != float64(i) {
			t.Fatalf("event %d has sequence_number %v", i, d["sequence_number"])
		}
	}
	text, n := deltas(types, data, "response.output_text.delta", "delta")
	final := data[len(data)-1]["response"].(map[string]any)
	usage := final["usage"].(map[string]any)
	if n != 10 || final["status"] != "incomplete" || usage["output_tokens"] != 10.0 || data[14]["text"] != text {
		t.Errorf("%d deltas, final %v", n, final)
	}
	resp = post(t, e, "/v1/responses", responsesBody("tell me", 10, false))
	var whole struct {
		Object, Status string
		Output         []struct {
			Type    string
			Content []struct{ Type, Text string }
		}
		IncompleteDetails struct{ Reason string } `json:"incomplete_details"`
	}
	json.NewDecoder(resp.Body).Decode(&whole)
	resp.Body.Close()
	if whole.Object != "response" || whole.Status != "incomplete" || whole.IncompleteDetails.Reason != "max_output_tokens" ||
		len(whole.Output) != 1 || whole.Output[0].Content[0].Text != text {
		t.Errorf("non-streaming %+v; streamed %q", whole, text)
	}
}

// TestAPIsThinking: with a reasoning parser the thinking streams apart,
// in a thinking block (closed by its signature) and a reasoning item, and
// the answer after it; usage counts both.
func TestAPIsThinking(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.ReasoningParser, o.ReasoningTokens = sim.ParserQwen3, "5" })
	body := messagesBody("think", 12, true)
	resp := post(t, e, "/v1/messages", body)
	types, data := typedEvents(t, resp.Body)
	resp.Body.Close()
	thinking, nt := deltas(types, data, "content_block_delta", "delta.thinking")
	text, nx := deltas(types, data, "content_block_delta", "delta.text")
	_, ns := deltas(types, data, "content_block_delta", "delta.signature")
	// 12 tokens: <think>, 5 thinking, </think>, 5 answer tokens.
	if nt != 5 || nx != 5 || ns != 1 || thinking == "" || text == "" {
		t.Errorf("thinking %d deltas %q, text %d %q, signatures %d: %v", nt, thinking, nx, text, ns, types)
	}
	resp = post(t, e, "/v1/responses", responsesBody("think", 12, true))
	types, data = typedEvents(t, resp.Body)
	resp.Body.Close()
	reasoning, nr := deltas(types, data, "response.reasoning_text.delta", "delta")
	answer, na := deltas(types, data, "response.output_text.delta", "delta")
	usage := data[len(data)-1]["response"].(map[string]any)["usage"].(map[string]any)
	details := usage["output_tokens_details"].(map[string]any)
	if nr != 5 || na != 5 || reasoning != thinking || answer != text || details["reasoning_tokens"] != 5.0 {
		t.Errorf("reasoning %d %q, answer %d %q, usage %v", nr, reasoning, na, answer, usage)
	}
}

// TestAPIsErrors: validation errors in FastAPI's shape; errors the chat
// path finds in Anthropic's shape on /v1/messages, OpenAI's on
// /v1/responses; the key checked on either header.
func TestAPIsErrors(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.APIKey = "k" })
	noMax := messagesBody("x", 1, false)
	delete(noMax, "max_tokens")
	wrongModel := messagesBody("x", 1, false)
	wrongModel["model"] = "nope"
	respWrong := responsesBody("x", 1, false)
	respWrong["model"] = "nope"
	cases := []struct {
		name, path string
		body       map[string]any
		hdr        []string
		status     int
		anthropic  bool
	}{
		{"no key", "/v1/messages", messagesBody("x", 1, false), nil, 401, false},
		{"no max_tokens", "/v1/messages", noMax, []string{"X-Api-Key", "k"}, 400, false},
		{"unknown model", "/v1/messages", wrongModel, []string{"X-Api-Key", "k"}, 404, true},
		{"unknown model (responses)", "/v1/responses", respWrong, []string{"Authorization", "Bearer k"}, 404, false},
		{"too long", "/v1/messages", messagesBody("x", 1<<20, false), []string{"X-Api-Key", "k"}, 400, true},
	}
	for _, c := range cases {
		resp := post(t, e, c.path, c.body, c.hdr...)
		var b map[string]any
		json.NewDecoder(resp.Body).Decode(&b)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d: %v", c.name, resp.StatusCode, c.status, b)
		}
		if got := b["type"] == "error"; got != c.anthropic {
			t.Errorf("%s: Anthropic's shape %v, want %v: %v", c.name, got, c.anthropic, b)
		}
	}
}

// TestAPIsCounted: requests on every endpoint land in the same /metrics
// counters, so the reconciliation holds whichever the client used.
func TestAPIsCounted(t *testing.T) {
	e := simtest.Start(t, nil)
	for _, stream := range []bool{false, true} {
		for _, r := range []struct {
			path string
			body map[string]any
		}{{"/v1/chat/completions", chat("x", 3, stream)}, {"/v1/messages", messagesBody("x", 3, stream)},
			{"/v1/responses", responsesBody("x", 3, stream)}} {
			resp := post(t, e, r.path, r.body)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %s", r.path, resp.Status)
			}
		}
	}
	fams := scrape(t, e)
	if n := value(fams, "vllm:request_success_total"); n != 6 {
		t.Errorf("vllm:request_success_total %v, want 6", n)
	}
	if n := value(fams, "vllm:generation_tokens_total"); n != 18 {
		t.Errorf("vllm:generation_tokens_total %v, want 18", n)
	}
}
