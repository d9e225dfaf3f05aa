package bench

import (
	"testing"

	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/client"
)

// TestRecordedToolTurns: a recorded session's later turns send the history
// with the model's call and a tool message holding the recorded result
// (not --tool-rounds' fixed one), no user text; the last turn asks for
// text (tool_choice "none"), the others leave the run's choice.
func TestRecordedToolTurns(t *testing.T) {
	d, err := workload.LoadDataset("jsonl:../testdata/workload/toolsessions.jsonl", "")
	if err != nil {
		t.Fatal(err)
	}
	conv := d.Conversation(0)
	st := &runState{spec: &RunSpec{Request: RequestSpec{Endpoint: EndpointChat, MaxTokens: 16}}}
	req := st.request(&conv, 0, nil)
	if len(req.Messages) != 1 || req.Messages[0].Role != "user" || req.ToolChoice != nil {
		t.Fatalf("turn 1: messages %+v, tool_choice %s", req.Messages, req.ToolChoice)
	}
	for k := 1; k < 3; k++ {
		result, ok := answersTool(&conv, k, 0)
		if !ok || result != conv.Turns[k].ToolResult {
			t.Fatalf("turn %d answers a tool: %v, %q", k+1, ok, result)
		}
		tr := client.Trace{ToolCalls: []client.ToolCall{{Type: "function", Function: client.FunctionCall{Name: "get_forecast", Arguments: "{}"}}}}
		history, ok := toolHistory(req.Messages, &tr, conv.Session, k-1, result)
		if !ok {
			t.Fatalf("turn %d: no history", k+1)
		}
		req = st.request(&conv, k, history)
		last := req.Messages[len(req.Messages)-1]
		if last.Role != "tool" || last.Content != conv.Turns[k].ToolResult || last.ToolCallID == "" ||
			req.Messages[len(req.Messages)-2].ToolCalls[0].ID != last.ToolCallID {
			t.Errorf("turn %d: last messages %+v", k+1, req.Messages[len(req.Messages)-2:])
		}
		if want := k == 2; (string(req.ToolChoice) == `"none"`) != want {
			t.Errorf("turn %d: tool_choice %s, want \"none\" only on the last turn", k+1, req.ToolChoice)
		}
	}
	if _, ok := answersTool(&conv, 3, 0); ok {
		t.Errorf("past the last turn: answers a tool")
	}
}
