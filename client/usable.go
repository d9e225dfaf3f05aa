package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Validator checks a decoded JSON value (numbers as json.Number, as
// github.com/santhosh-tekuri/jsonschema/v6's *Schema takes them).
type Validator interface {
	Validate(v any) error
}

// Usable asks Do to time when the answer becomes usable by a program
// (Trace.Usable): the moment its JSON, or its tool call's arguments, first
// parse complete, and validate where a schema is given. A program cannot act
// on half a JSON value, so for it this, not the first visible token, is the
// answer's latency.
type Usable struct {
	// Schema validates the content's JSON; nil: any complete value will do.
	Schema Validator
	// ToolSchemas validate a tool call's arguments by function name; a
	// name not in it: any complete value will do.
	ToolSchemas map[string]Validator
}

// maxUsableBytes bounds what a jsonWatch keeps of one answer; past it the
// answer is declared not usable rather than grow memory without bound.
const maxUsableBytes = MaxBody

// jsonWatch finds the first complete JSON value in text fed to it piece by
// piece. It tracks nesting depth byte by byte (strings and escapes
// included) and parses only when the depth returns to 0, so a long answer
// costs O(n), not a parse per piece. Text before the first '{' or '[' (a
// code fence, a sentence) is skipped; a value that closes but does not
// parse or validate is dropped and the search goes on after it. A scalar
// top-level value (a bare number) has no closing byte: finish checks the
// whole text once at the end.
type jsonWatch struct {
	schema Validator
	all    []byte // everything fed
	start  int    // where the candidate value opened in all
	depth  int
	inStr  bool
	esc    bool
	done   bool
	over   bool  // past maxUsableBytes
	err    error // why the last candidate was not usable
	checks int   // parses run (a test holds it to one per closed value)
}

// feed takes the next piece of text; it reports true once, when a complete
// value first parses (and validates).
func (w *jsonWatch) feed(p []byte) bool {
	if w.done || w.over {
		return false
	}
	if len(w.all)+len(p) > maxUsableBytes {
		w.over, w.err = true, fmt.Errorf("answer over %d bytes: not checked", maxUsableBytes)
		return false
	}
	base := len(w.all)
	w.all = append(w.all, p...)
	for i, c := range p {
		if w.depth == 0 {
			if c != '{' && c != '[' {
				continue
			}
			w.start = base + i
		}
		if w.step(c) && w.check(w.all[w.start:base+i+1]) {
			w.done = true
			return true
		}
	}
	return false
}

// step advances the depth over c; it reports whether c closed the value.
func (w *jsonWatch) step(c byte) bool {
	switch {
	case w.inStr && w.esc:
		w.esc = false
	case w.inStr && c == '\\':
		w.esc = true
	case w.inStr && c == '"':
		w.inStr = false
	case w.inStr:
	case c == '"':
		w.inStr = true
	case c == '{' || c == '[':
		w.depth++
	case c == '}' || c == ']':
		w.depth--
		return w.depth == 0
	}
	return false
}

// check parses b as one JSON value and validates it.
func (w *jsonWatch) check(b []byte) bool {
	w.checks++
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		w.err = fmt.Errorf("not JSON: %w", err)
		return false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		w.err = errors.New("not JSON: data after the value")
		return false
	}
	if w.schema != nil {
		if err := w.schema.Validate(v); err != nil {
			w.err = fmt.Errorf("not valid for the schema: %w", err)
			return false
		}
	}
	w.err = nil
	return true
}

// finish is the end of the answer: a value not yet found is looked for in
// the whole text once (a scalar). It reports whether the answer is usable.
func (w *jsonWatch) finish() bool {
	if w.done {
		return true
	}
	if w.over {
		return false
	}
	t := bytes.TrimSpace(w.all)
	if len(t) == 0 {
		w.err = errors.New("no answer")
		return false
	}
	if t[0] != '{' && t[0] != '[' && w.check(t) {
		w.done = true
		return true
	}
	if w.err == nil {
		w.err = errors.New("the JSON never closed")
	}
	return false
}

// usableWatch times Trace.Usable over a stream: the content's JSON and each
// tool call's arguments, by tool_calls index.
type usableWatch struct {
	u       *Usable
	content *jsonWatch
	tools   []*jsonWatch // by index
	names   [][]byte
	at      time.Duration // when usable; 0: not yet
}

// maxToolCalls bounds the tool calls of one answer a usableWatch follows.
const maxToolCalls = 64

func newUsableWatch(u *Usable) *usableWatch {
	return &usableWatch{u: u, content: &jsonWatch{schema: u.Schema}}
}

// chunk takes one decoded chunk that arrived at now.
func (uw *usableWatch) chunk(ch *Chunk, now time.Duration) {
	if uw.at > 0 {
		return
	}
	if len(ch.Content) > 0 && uw.content.feed(ch.Content) {
		uw.at = now
	}
	if ch.ToolCall && ch.ToolIndex >= 0 && ch.ToolIndex < maxToolCalls {
		if uw.tool(ch.ToolIndex, ch.ToolName).feed(ch.ToolArgs) {
			uw.at = now
		}
	}
}

// tool is the watch of call i, made on its first chunk, where its name is.
func (uw *usableWatch) tool(i int, name []byte) *jsonWatch {
	for len(uw.tools) <= i {
		uw.tools = append(uw.tools, nil)
		uw.names = append(uw.names, nil)
	}
	if uw.tools[i] == nil {
		w := &jsonWatch{}
		if s, ok := uw.u.ToolSchemas[string(name)]; ok {
			w.schema = s
		}
		uw.tools[i], uw.names[i] = w, bytes.Clone(name)
	}
	return uw.tools[i]
}

// calls are the tool calls seen, in index order (Trace.ToolCalls): each
// one's name and arguments as received.
func (uw *usableWatch) calls() []ToolCall {
	var out []ToolCall
	for i, w := range uw.tools {
		if w != nil {
			out = append(out, ToolCall{Type: "function", Function: FunctionCall{Name: string(uw.names[i]), Arguments: string(w.all)}})
		}
	}
	return out
}

// finish is the answer's end at now: Trace.Usable, or why the answer was
// never usable.
func (uw *usableWatch) finish(now time.Duration) (time.Duration, string) {
	if uw.at > 0 {
		return uw.at, ""
	}
	why := ""
	for i, w := range uw.tools {
		if w == nil {
			continue
		}
		if w.finish() {
			return now, ""
		}
		if why == "" {
			why = fmt.Sprintf("tool call %d (%s): %v", i, uw.names[i], w.err)
		}
	}
	if why != "" {
		return 0, why
	}
	if uw.content.finish() {
		return now, ""
	}
	return 0, uw.content.err.Error()
}
