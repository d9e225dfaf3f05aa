package bench

import (
	"fmt"
	"strconv"

	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine/option"
)

// Tool-calling sessions (--tool-rounds N): the model is offered the run's
// tools (--tools) and calls one; the client answers the call after the
// think time (--think-time) with a tool message, and the conversation goes
// on, N rounds, then a last turn with tool_choice "none" for the model's
// text answer. Each turn is a record (session, turn), the tool-call turns
// with their time to usable output (the call's arguments complete) beside
// first visible output. A recorded session (--dataset jsonl lines with
// "tool_result" and "think_s") goes the same way with its own results and
// pauses.

// ToolResult is the content of every tool message the client sends back:
// a fixed, short JSON result (the tools are not run).
const ToolResult = `{"result":"ok"}`

// toolSession makes conv a tool-calling session of rounds rounds: its first
// turn, then rounds turns that each answer the previous call (they carry
// no user text). A conversation without a session id gets one from its
// index, so its records group.
func toolSession(conv *workload.Conversation, rounds, index int) {
	if rounds < 1 || len(conv.Turns) == 0 {
		return
	}
	first := conv.Turns[0]
	conv.Turns = append([]workload.Turn{first}, make([]workload.Turn, rounds)...)
	for k := 1; k <= rounds; k++ {
		conv.Turns[k].OutputTokens = first.OutputTokens
	}
	if conv.Session == "" {
		conv.Session = "tools-" + strconv.Itoa(index)
	}
}

// toolTurn sets turn k of a tool session on req: every turn after the
// first sends history and the tool's results (no user text); the last one
// asks for text (tool_choice "none").
func toolTurn(req *client.Request, history []client.Message, k, turns int) {
	if k > 0 {
		req.Messages = history
	}
	if k == turns-1 {
		req.ToolChoice = []byte(`"none"`)
	}
}

// answersTool says whether turn k of conv answers the previous turn's tool
// calls, and with what: every turn after the first with --tool-rounds
// (ToolResult), a recorded session's turn with its "tool_result".
func answersTool(conv *workload.Conversation, k, rounds int) (string, bool) {
	switch {
	case k >= len(conv.Turns):
		return "", false
	case rounds > 0:
		return ToolResult, k > 0
	}
	r := conv.Turns[k].ToolResult
	return r, r != ""
}

// toolHistory is the history after an answer with tool calls: the
// assistant's calls (ids given here when the stream gave none) and one tool
// message answering each, with result. ok false: the answer called no tool.
func toolHistory(msgs []client.Message, tr *client.Trace, session string, k int, result string) ([]client.Message, bool) {
	if len(tr.ToolCalls) == 0 {
		return msgs, false
	}
	calls := make([]client.ToolCall, len(tr.ToolCalls))
	copy(calls, tr.ToolCalls)
	msgs = append(msgs[:len(msgs):len(msgs)], client.Message{Role: "assistant", Content: tr.Text, ToolCalls: calls})
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = fmt.Sprintf("call_%s_%d_%d", session, k, i)
		}
		msgs = append(msgs, client.Message{Role: "tool", Content: result, ToolCallID: calls[i].ID})
	}
	return msgs, true
}

// CheckToolSessions refuses a source of recorded tool-calling sessions
// without the tools to call (--tools, on chat) or mixed with --tool-rounds.
// It is apart from Validate because the command gives a spec its tools
// after validating it.
func (s *RunSpec) CheckToolSessions() error {
	ts, ok := s.Source.(interface{ ToolSessions() bool })
	if !ok || !ts.ToolSessions() {
		return nil
	}
	if s.Request.ToolRounds > 0 || s.Request.Structured == nil || len(s.Request.Structured.Tools) == 0 ||
		s.Request.Endpoint != "" && s.Request.Endpoint != EndpointChat {
		return option.Errorf("Dataset", nil, `recorded tool-calling sessions ("tool_result") need {ToolsFile} on the chat endpoint, without {ToolRounds}`)
	}
	return nil
}
