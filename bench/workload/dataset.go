package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/option"
	"github.com/servebench/servebench/engine/tok"
)

// Dataset is a source read from a file: ShareGPT conversations or JSONL
// prompts, as single requests or sessions. Entries that are malformed or
// empty are skipped and counted; a file with none usable, or that is not
// the format at all, is an error naming file, line and field.
type Dataset struct {
	Kind    string // SourceShareGPT or SourceJSONL
	File    string
	Turns   string // "" single requests; "all" or N: sessions of up to N turns
	Skipped int    // entries left out
	sha256  string
	why     []string // the first few skipped entries' reasons, file:line: ...
	convs   []Conversation
}

// maxSkipReasons is how many skipped entries a warning quotes.
const maxSkipReasons = 3

// LoadDataset reads --dataset KIND:FILE (sharegpt or jsonl); turns is
// --turns ("" for single requests, "all", or N).
func LoadDataset(spec, turns string) (*Dataset, error) {
	kind, file, maxTurns, err := datasetSpec(spec, turns)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, option.Wrap("Dataset", nil, err)
	}
	sum := sha256.Sum256(data)
	d := &Dataset{Kind: kind, File: file, Turns: turns, sha256: hex.EncodeToString(sum[:])}
	if kind == SourceShareGPT {
		err = d.readShareGPT(data, turns != "", maxTurns)
	} else {
		err = d.readJSONL(data, maxTurns)
	}
	if err != nil {
		return nil, err
	}
	if len(d.convs) == 0 {
		msg := fmt.Sprintf("%s: no usable entries", file)
		if len(d.why) > 0 {
			msg += fmt.Sprintf(" (%d skipped; first: %s)", d.Skipped, d.why[0])
		}
		return nil, errors.New(msg)
	}
	return d, nil
}

// datasetSpec checks --dataset KIND:FILE and --turns without reading the
// file: the kind, the file and the most turns kept (0: all).
func datasetSpec(spec, turns string) (kind, file string, maxTurns int, err error) {
	kind, file, ok := strings.Cut(spec, ":")
	if !ok || file == "" || (kind != SourceShareGPT && kind != SourceJSONL) {
		return "", "", 0, option.Errorf("Dataset", spec, "expected sharegpt:FILE or jsonl:FILE")
	}
	if turns != "" && turns != "all" {
		n, err := strconv.Atoi(turns)
		if err != nil || n < 1 || n > 1000 {
			return "", "", 0, option.Errorf("Turns", turns, "expected all or a count from 1 to 1000")
		}
		maxTurns = n
	}
	return kind, file, maxTurns, nil
}

// skip counts a bad entry and keeps the first reasons.
func (d *Dataset) skip(line int, format string, args ...any) {
	d.Skipped++
	if len(d.why) < maxSkipReasons {
		d.why = append(d.why, fmt.Sprintf("%s:%d: %s", d.File, line, fmt.Sprintf(format, args...)))
	}
}

// Len is the number of conversations; a longer run starts over.
func (d *Dataset) Len() int { return len(d.convs) }

// Conversation returns entry i, cycling.
func (d *Dataset) Conversation(i int) Conversation { return d.convs[i%len(d.convs)] }

// Describe records the file, its hash, the skipped entries and the turns.
func (d *Dataset) Describe(w *result.Workload) {
	w.Source, w.PromptKind, w.PromptFile = d.Kind, "dataset", d.File
	w.SourceFile, w.SourceSHA256, w.SkippedEntries = d.File, d.sha256, d.Skipped
	w.SourceEntries = len(d.convs)
	describeLengths(w, "dataset", d.convs)
	if d.sessions() {
		w.Turns = d.Turns
		if w.Turns == "" {
			w.Turns = "all"
		}
	}
}

// describeLengths records that convs set their requests' output lengths
// (from is "dataset" or "trace") and the range they ask, w.MaxTokens
// standing for turns without one; nothing when none sets one.
func describeLengths(w *result.Workload, from string, convs []Conversation) {
	lo, hi, set := 0, 0, false
	for _, c := range convs {
		for _, t := range c.Turns {
			n := t.OutputTokens
			set = set || n > 0
			if n <= 0 {
				n = w.MaxTokens
			}
			if lo == 0 || n < lo {
				lo = n
			}
			hi = max(hi, n)
		}
	}
	if set {
		w.OutputTokensFrom, w.OutputTokensRange = from, []int{lo, hi}
	}
}

// sessions reports whether the dataset replays conversations of turns.
func (d *Dataset) sessions() bool {
	return slices.ContainsFunc(d.convs, func(c Conversation) bool { return c.Session != "" })
}

// Warnings says how many entries were skipped and why (the first few).
func (d *Dataset) Warnings() []string {
	if d.Skipped == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s: %d malformed or empty entries skipped (%s)", d.File, d.Skipped, strings.Join(d.why, "; "))}
}

// lineAt is the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte{'\n'})
}

// countTokens counts an answer's tokens with the bundled engine's
// tokenizer (cl100k BPE, which counts English as Llama-3 and Qwen2.5 do
// within a few percent): a dataset's reply length becomes the output
// length asked for, as vLLM's benchmark counts it with the model's own.
var countTokens = sync.OnceValue(func() func(string) int {
	t, err := tok.New(tok.Qwen2)
	if err != nil { // the vocabulary is embedded: cannot happen in a built binary
		return func(s string) int { return max(1, len(s)/4) }
	}
	return t.Count
})

// shareGPTEntry is one element of a ShareGPT file's array.
type shareGPTEntry struct {
	ID            json.RawMessage
	Conversations []shareGPTMessage
}

type shareGPTMessage struct{ From, Value string }

// readShareGPT reads a ShareGPT JSON array. Single requests (vLLM's
// reading): the first human turn is the prompt and the next gpt turn's
// token count the output length. Sessions: every human turn answered by a
// gpt turn, in order, up to maxTurns (0: all).
func (d *Dataset) readShareGPT(data []byte, sessions bool, maxTurns int) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return fmt.Errorf("%s:%d: expected a ShareGPT JSON array of {\"id\", \"conversations\": [{\"from\", \"value\"}]}", d.File, lineAt(data, dec.InputOffset()))
	}
	for n := 0; dec.More(); n++ {
		var raw json.RawMessage
		start := dec.InputOffset()
		rest := data[start:]
		line := lineAt(data, start+int64(len(rest)-len(bytes.TrimLeft(rest, ", \t\r\n")))) // the entry's start
		if err := dec.Decode(&raw); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				line = lineAt(data, se.Offset)
			}
			return fmt.Errorf("%s:%d: entry %d: %v", d.File, line, n, err)
		}
		e, why := parseShareGPTEntry(raw)
		if why == "" {
			var c Conversation
			if c, why = shareGPTConversation(&e, n, sessions, maxTurns); why == "" {
				d.convs = append(d.convs, c)
				continue
			}
		}
		d.skip(line, "entry %d: %s", n, why)
	}
	return nil
}

// parseShareGPTEntry reads one array element, or says which field is wrong.
func parseShareGPTEntry(raw json.RawMessage) (shareGPTEntry, string) {
	var e shareGPTEntry
	var top struct {
		ID            json.RawMessage `json:"id"`
		Conversations json.RawMessage `json:"conversations"`
	}
	if raw[0] != '{' {
		return e, "is " + jsonKind(raw[0]) + `: expected {"id", "conversations": [...]}`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return e, err.Error()
	}
	e.ID = top.ID
	c := bytes.TrimSpace(top.Conversations)
	switch {
	case len(c) == 0 || string(c) == "null" || string(c) == "[]":
		return e, `no "conversations"`
	case c[0] != '[':
		return e, `"conversations" is ` + jsonKind(c[0]) + `: expected an array of {"from", "value"}`
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(c, &msgs); err != nil {
		return e, `"conversations": ` + err.Error()
	}
	for i, m := range msgs {
		var f struct {
			From  string  `json:"from"`
			Value *string `json:"value"`
		}
		if err := json.Unmarshal(m, &f); err != nil || f.Value == nil {
			return e, fmt.Sprintf(`conversations[%d]: expected {"from": "human"|"gpt", "value": "..."}`, i)
		}
		e.Conversations = append(e.Conversations, shareGPTMessage{From: f.From, Value: *f.Value})
	}
	return e, ""
}

// shareGPTConversation turns one entry into a conversation, or says why not.
func shareGPTConversation(e *shareGPTEntry, n int, sessions bool, maxTurns int) (Conversation, string) {
	if len(e.Conversations) == 0 {
		return Conversation{}, `no "conversations"`
	}
	var c Conversation
	for i := 0; i < len(e.Conversations); i++ {
		m := e.Conversations[i]
		switch m.From {
		case "system":
			if len(c.Turns) == 0 {
				c.System = m.Value
			}
			continue
		case "human", "user":
		default:
			continue
		}
		if strings.TrimSpace(m.Value) == "" || i+1 >= len(e.Conversations) || !isReply(e.Conversations[i+1].From) {
			if len(c.Turns) == 0 && !sessions {
				return Conversation{}, fmt.Sprintf("conversations[%d]: the first human turn is empty or has no gpt reply after it", i)
			}
			break
		}
		reply := e.Conversations[i+1].Value
		c.Turns = append(c.Turns, Turn{Text: m.Value, OutputTokens: max(1, countTokens()(reply))})
		i++
		if !sessions || (maxTurns > 0 && len(c.Turns) == maxTurns) {
			break
		}
	}
	if len(c.Turns) == 0 {
		return Conversation{}, "no human turn answered by a gpt turn"
	}
	if sessions {
		c.Session = rawID(e.ID)
		if c.Session == "" {
			c.Session = "#" + strconv.Itoa(n)
		}
	}
	return c, ""
}

// isReply reports whether a ShareGPT "from" is the model's side.
func isReply(from string) bool {
	return from == "gpt" || from == "assistant" || from == "chatgpt" || from == "bard" || from == "model"
}

// rawID is an "id" or "session" value as text (a string's contents, a
// number's digits), or "" when absent, null or not a scalar.
func rawID(id json.RawMessage) string {
	var s string
	if json.Unmarshal(id, &s) == nil {
		return s
	}
	if t := strings.TrimSpace(string(id)); t != "" && t != "null" && t[0] != '{' && t[0] != '[' {
		return t
	}
	return ""
}

// jsonlExtra are the fields a --dataset jsonl line may add to a prompt
// file's.
type jsonlExtra struct {
	OutputTokens *int            `json:"output_tokens"`
	Session      json.RawMessage `json:"session"`
	Turn         *int            `json:"turn"`
	LoRA         string          `json:"lora"` // the LoRA adapter (model) the line is sent to
	// A recorded tool-calling session's turn: the tool result answering
	// the previous turn's call, and the pause before sending it.
	ToolResult json.RawMessage `json:"tool_result"`
	ThinkS     *float64        `json:"think_s"`
}

// readJSONL reads prompt-file lines plus "output_tokens", "session",
// "turn" and "lora" (a session's first line names its adapter). Lines of one session become its turns, ordered by "turn" (file
// order without it), at most maxTurns (0: all).
func (d *Dataset) readJSONL(data []byte, maxTurns int) error {
	type sess struct {
		conv  int
		turns []int // "turn" of each, for ordering
		line  int   // the session's first line
	}
	byID := map[string]*sess{}
	err := eachLine(bytes.NewReader(data), d.File, func(line int, text string) error {
		var x jsonlExtra
		if err := json.Unmarshal([]byte(text), &x); err != nil {
			d.skip(line, "%v", err)
			return nil
		}
		t, err := toolTurn(&x, text)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", d.File, line, err)
		}
		if t.ToolResult == "" {
			it, err := parsePromptLine(text)
			if err != nil {
				d.skip(line, "%v", err)
				return nil
			}
			t.Text, t.Messages = it.Prompt, it.Messages
		}
		if x.OutputTokens != nil {
			if *x.OutputTokens < 1 {
				d.skip(line, `"output_tokens" %d: expected at least 1`, *x.OutputTokens)
				return nil
			}
			t.OutputTokens = *x.OutputTokens
		}
		id := rawID(x.Session)
		if id == "" && (t.ToolResult != "" || t.ThinkSet) {
			return fmt.Errorf(`%s:%d: "tool_result" and "think_s" belong to a session's turn: the line has no "session"`, d.File, line)
		}
		if id == "" {
			d.convs = append(d.convs, Conversation{Turns: []Turn{t}, LoRA: x.LoRA})
			return nil
		}
		if t.Messages != nil {
			d.skip(line, `a "session" line needs "prompt" (the user's turn), not "messages"`)
			return nil
		}
		s := byID[id]
		if s == nil {
			s = &sess{conv: len(d.convs), line: line}
			byID[id] = s
			d.convs = append(d.convs, Conversation{Session: id, LoRA: x.LoRA})
		}
		order := len(s.turns) + 1
		if x.Turn != nil {
			order = *x.Turn
		}
		c := &d.convs[s.conv]
		at, _ := slices.BinarySearch(s.turns, order+1) // stable: after equal turns
		s.turns = slices.Insert(s.turns, at, order)
		c.Turns = slices.Insert(c.Turns, at, t)
		return nil
	})
	if err != nil {
		return err
	}
	for i := range d.convs {
		if c := &d.convs[i]; maxTurns > 0 && len(c.Turns) > maxTurns {
			c.Turns = c.Turns[:maxTurns]
		}
	}
	for _, s := range byID {
		if c := &d.convs[s.conv]; c.Turns[0].ToolResult != "" {
			return fmt.Errorf(`%s:%d: session %q: its first turn has "tool_result": expected a "prompt" for the model to answer with a tool call first`, d.File, s.line, c.Session)
		}
	}
	return nil
}

// toolTurn reads a line's recorded tool-session fields: "tool_result" (a
// string, or any JSON value sent as its text) replaces the user's turn;
// "think_s" is the pause before the turn, in seconds.
func toolTurn(x *jsonlExtra, text string) (Turn, error) {
	var t Turn
	if x.ThinkS != nil {
		if s := *x.ThinkS; s < 0 || s > 3600 {
			return t, fmt.Errorf(`"think_s" %g: expected seconds from 0 to 3600`, s)
		}
		t.Think, t.ThinkSet = time.Duration(*x.ThinkS*float64(time.Second)), true
	}
	r := bytes.TrimSpace(x.ToolResult)
	switch {
	case len(r) == 0 || string(r) == "null":
		return t, nil
	case r[0] == '"':
		if err := json.Unmarshal(r, &t.ToolResult); err != nil || t.ToolResult == "" {
			return t, errors.New(`"tool_result": expected a non-empty string or a JSON value`)
		}
	default:
		t.ToolResult = string(r)
	}
	var p struct {
		Prompt   json.RawMessage `json:"prompt"`
		Messages json.RawMessage `json:"messages"`
	}
	if json.Unmarshal([]byte(text), &p) == nil && (p.Prompt != nil || p.Messages != nil) {
		return t, errors.New(`"tool_result" with "prompt" or "messages": a tool turn sends the tool's result, not user text`)
	}
	return t, nil
}

// ToolSessions reports whether the dataset holds recorded tool-calling
// sessions (a turn with "tool_result").
func (d *Dataset) ToolSessions() bool {
	return slices.ContainsFunc(d.convs, func(c Conversation) bool { return c.ToolSession() })
}
