package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// EndpointOllamaChat is Ollama's native chat API (POST /api/chat): NDJSON
// streaming, and the engine's own timings of each request on its last line.
const EndpointOllamaChat = "ollama-chat"

// EngineTimes are the engine's own account of one request, as Ollama's
// /api/chat gives it on its last line (durations in ns on the wire).
// Total runs from the server receiving the request to the answer's end;
// Load is the time to get a runner for the model (loading it on first use);
// PromptEval the prefill, Eval the decode. What Total holds beyond the three
// (waiting for a free slot, templating, tokenizing) is the engine's queue.
type EngineTimes struct {
	Total, Load, PromptEval, Eval time.Duration
	PromptEvalCount, EvalCount    int
}

// OllamaChunk is one line of /api/chat's stream, or its whole
// non-streaming body. Slices are valid until the next Decode.
type OllamaChunk struct {
	Content, Thinking []byte // message.content, message.thinking
	HasMessage        bool
	Done              bool
	DoneReason        []byte
	HasError          bool
	ErrorMessage      []byte
	Times             EngineTimes // on the done line
}

// OllamaDecoder decodes Ollama chunks: the allocation-free scanner, with
// encoding/json as the reference when the scanner is unsure (as
// ChunkDecoder). Not safe for concurrent use.
type OllamaDecoder struct {
	scratch []byte
	chunk   OllamaChunk
}

var (
	ollamaTopKeys = []string{"message", "done", "done_reason", "error", "total_duration", "load_duration",
		"prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"}
	ollamaMsgKeys = []string{"content", "thinking"}
)

// trim drops the last chunk (it points into a pooled body) and a scratch
// buffer grown by one huge body, as ChunkDecoder.trim.
func (d *OllamaDecoder) trim() {
	d.chunk = OllamaChunk{}
	if cap(d.scratch) > 1<<20 {
		d.scratch = nil
	}
}

// Decode decodes one line (or body). The error is encoding/json's when data
// is not valid JSON or a field has the wrong type.
func (d *OllamaDecoder) Decode(data []byte) (*OllamaChunk, error) {
	if cap(d.scratch) < len(data) {
		d.scratch = make([]byte, 0, len(data)+len(data)/2)
	}
	d.chunk = OllamaChunk{}
	s := scanner{b: data, out: d.scratch[:0]}
	s.ws()
	if err := s.object(ollamaTopKeys, func(k int) error { return s.ollamaField(k, &d.chunk) }); err == nil {
		if s.ws(); s.i == len(s.b) {
			return &d.chunk, nil
		}
	}
	d.chunk = OllamaChunk{}
	if err := d.decodeSlow(data); err != nil {
		return nil, fmt.Errorf("decoding Ollama chunk: %w", err)
	}
	return &d.chunk, nil
}

func (s *scanner) ollamaField(k int, c *OllamaChunk) error {
	var err error
	var v int
	switch k {
	case 0:
		if s.null() {
			return nil
		}
		c.HasMessage = true
		return s.object(ollamaMsgKeys, func(k int) error {
			var err error
			if k == 0 {
				c.Content, _, err = s.stringValue()
			} else {
				c.Thinking, _, err = s.stringValue()
			}
			return err
		})
	case 1:
		c.Done, err = s.boolValue()
	case 2:
		c.DoneReason, _, err = s.stringValue()
	case 3:
		var p chunkParts
		err = s.errorValue(&p)
		c.HasError, c.ErrorMessage = p.hasError, p.errMsg
	case 4:
		v, err = s.intValue()
		c.Times.Total = time.Duration(v)
	case 5:
		v, err = s.intValue()
		c.Times.Load = time.Duration(v)
	case 6:
		c.Times.PromptEvalCount, err = s.intValue()
	case 7:
		v, err = s.intValue()
		c.Times.PromptEval = time.Duration(v)
	case 8:
		c.Times.EvalCount, err = s.intValue()
	default:
		v, err = s.intValue()
		c.Times.Eval = time.Duration(v)
	}
	return err
}

// boolValue reads true, false or null (false, as encoding/json leaves it).
func (s *scanner) boolValue() (bool, error) {
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
			s.i += len(lit)
			return lit == "true", nil
		}
	}
	return false, errDecline
}

type jsonOllama struct {
	Message *struct {
		Content  *string `json:"content"`
		Thinking *string `json:"thinking"`
	} `json:"message"`
	Done            bool            `json:"done"`
	DoneReason      *string         `json:"done_reason"`
	Error           json.RawMessage `json:"error"`
	Total           int64           `json:"total_duration"`
	Load            int64           `json:"load_duration"`
	PromptEvalCount int             `json:"prompt_eval_count"`
	PromptEval      int64           `json:"prompt_eval_duration"`
	EvalCount       int             `json:"eval_count"`
	Eval            int64           `json:"eval_duration"`
}

func (d *OllamaDecoder) decodeSlow(data []byte) error {
	var j jsonOllama
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	c := &d.chunk
	if j.Message != nil {
		c.HasMessage = true
		c.Content, _ = strPart(j.Message.Content)
		c.Thinking, _ = strPart(j.Message.Thinking)
	}
	c.Done = j.Done
	c.DoneReason, _ = strPart(j.DoneReason)
	if len(j.Error) > 0 && string(j.Error) != "null" {
		c.HasError, c.ErrorMessage = true, errorMessage(j.Error)
	}
	c.Times = EngineTimes{Total: time.Duration(j.Total), Load: time.Duration(j.Load), PromptEval: time.Duration(j.PromptEval),
		Eval: time.Duration(j.Eval), PromptEvalCount: j.PromptEvalCount, EvalCount: j.EvalCount}
	return nil
}

// ollamaWire is the body of POST /api/chat.
type ollamaWire struct {
	Model     string        `json:"model"`
	Messages  []Message     `json:"messages"`
	Stream    bool          `json:"stream"`
	Options   ollamaOptions `json:"options"`
	KeepAlive string        `json:"keep_alive,omitempty"`
}

type ollamaOptions struct {
	NumPredict int    `json:"num_predict,omitempty"`
	Seed       *int64 `json:"seed,omitempty"`
}

// ollamaBody builds /api/chat's body. Ollama has no ignore_eos: an exact
// length needs a model that never ends early (servebench model tiny).
func (req *Request) ollamaBody() ([]byte, error) {
	if len(req.Messages) == 0 {
		return nil, errors.New("chat request has no messages: expected at least one")
	}
	w := ollamaWire{Model: req.Model, Messages: req.Messages, Stream: req.Stream, KeepAlive: req.KeepAlive,
		Options: ollamaOptions{NumPredict: req.MaxTokens}}
	if req.SeedSet {
		w.Options.Seed = &req.Seed
	}
	return json.Marshal(&w)
}

// readNDJSON reads /api/chat's stream: a JSON object per line, each with a
// piece of the answer, the last one done with the engine's timings. Each
// line that carries text is one token event (Ollama sends a line per
// token; eval_count, the engine's count, is the total, apportioned over
// the events as usage is). It reports whether the stream ended with done.
func (x *exchange) readNDJSON(body io.Reader, maxTokens int) bool {
	tr := &x.tr
	rd := readerPool.Get().(*readers)
	defer rd.release()
	rd.sse.Reset(body) // its line reader: NDJSON has no events
	tr.Events.reserve(maxTokens)
	counted := 0
	var text []byte
	for {
		line, err := rd.ndjsonLine()
		now := x.since()
		if err != nil {
			x.streamReadError(err, counted)
			return false
		}
		if x.stall != nil {
			x.stall.event(now)
		}
		ch, derr := rd.ollama.Decode(line)
		switch {
		case derr != nil:
			x.fail(ErrMalformed, fmt.Sprintf("malformed line %s: %v", x.clip(line), derr))
			return false
		case ch.HasError:
			x.fail(ErrStreamError, "stream error line: "+string(ch.ErrorMessage))
			return false
		}
		if len(ch.Content) > 0 || len(ch.Thinking) > 0 {
			x.tokenEvent(now, 1, len(ch.Content) > 0)
			if len(ch.Thinking) > 0 { // Ollama's name for reasoning
				x.reasoningEvent(now, 1, ch.Thinking, ch.Content)
			}
			counted++
			if x.keepText {
				text = append(text, ch.Content...)
			}
		}
		if ch.Done {
			tr.Done = now
			x.ollamaDone(ch)
			if x.keepText {
				tr.Text = string(text)
			}
			if tr.EventsDropped == 0 {
				apportion(tr.Events.pairs, tr.OutputTokens)
			}
			return true
		}
	}
}

// ndjsonLine returns the next non-blank line, without its end or trailing
// blanks, from the SSE reader's line reader: the same line ends and the same
// bound (MaxEventSize). It is valid until the next call.
func (rd *readers) ndjsonLine() ([]byte, error) {
	for {
		line, err := rd.sse.readLine()
		if err != nil {
			return nil, err
		}
		if line = bytes.TrimRight(line, " "); len(line) > 0 {
			return line, nil
		}
	}
}

// ollamaDone takes the last line's counts and timings.
func (x *exchange) ollamaDone(ch *OllamaChunk) {
	tr := &x.tr
	tr.FinishReason = string(ch.DoneReason)
	tr.PromptTokens, tr.OutputTokens, tr.TokensFrom = ch.Times.PromptEvalCount, ch.Times.EvalCount, TokensFromUsage
	tr.Engine, tr.HasEngine = ch.Times, true
}

// readOllamaBody reads a non-streaming /api/chat answer: one object, done.
func (x *exchange) readOllamaBody(r io.Reader) {
	tr := &x.tr
	body, ok := x.readWholeBody(r)
	if !ok {
		return
	}
	rd := readerPool.Get().(*readers)
	defer rd.release()
	ch, err := rd.ollama.Decode(body)
	switch {
	case err != nil:
		x.fail(ErrMalformed, fmt.Sprintf("malformed body %s: %v", x.clip(body), err))
		return
	case ch.HasError:
		x.fail(ErrStreamError, "error in a 2xx body: "+string(ch.ErrorMessage))
		return
	case !ch.Done || !ch.HasMessage:
		x.fail(ErrMalformed, fmt.Sprintf("body is not a finished chat answer: %s", x.clip(body)))
		return
	}
	now := x.since()
	tr.FirstToken, tr.FirstVisible, tr.Done = now, now, now
	x.ollamaDone(ch)
	if x.keepText {
		tr.Text = string(ch.Content)
	}
}
