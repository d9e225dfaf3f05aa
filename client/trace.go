package client

import "time"

// ErrorClass names why a request failed. The empty class means success.
type ErrorClass string

// Error classes recorded on a Trace. They are part of results.json and
// requests.jsonl: add, never rename.
const (
	ErrNone        ErrorClass = ""
	ErrConnect     ErrorClass = "connect"      // dial / connection refused / reset before response
	ErrHTTPStatus  ErrorClass = "http_status"  // non-2xx status (Trace.Status says which)
	ErrStreamError ErrorClass = "stream_error" // mid-stream `data: {"error":...}` event
	ErrMalformed   ErrorClass = "malformed"    // unparseable event or body
	ErrTruncated   ErrorClass = "truncated"    // stream ended without [DONE] / body cut short
	ErrTimeout     ErrorClass = "timeout"      // request or stall timeout
	ErrCanceled    ErrorClass = "canceled"     // caller canceled (Ctrl-C, run stopped)
	ErrRequest     ErrorClass = "request"      // the request could not be built (bad endpoint, URL, API key); nothing was sent
)

// MaxEvents caps Trace.Events so a very long answer cannot grow memory
// without bound; EventsDropped counts what the cap left out. Statistics
// that need every gap (ITL) are computed from the kept events only and say so.
const MaxEvents = 8192

// Event is one SSE event that carried generated tokens: when it arrived
// (offset from Trace start) and how many tokens it carried (see
// Client.Do for how tokens are counted). Reasoning is set when the event
// carried reasoning tokens but no visible content.
type Event struct {
	At        time.Duration
	Tokens    int
	Reasoning bool
}

// Trace is the client's record of one request. All offsets are measured
// from Start on the monotonic clock; a zero offset means "did not happen".
type Trace struct {
	Start        time.Time     // when the request was handed to the transport
	Conn         time.Duration // connection obtained; long when all MaxConns are busy
	Written      time.Duration // request fully written
	FirstByte    time.Duration // first response byte seen
	FirstToken   time.Duration // first event carrying any generated token (content or reasoning)
	FirstVisible time.Duration // first non-empty delta.content or tool call arguments; non-streaming: whole body parsed
	Done         time.Duration // [DONE] / end of body, or when the failure was seen
	// FirstReasoning and LastReasoning bound the thinking of a reasoning
	// model: the first and last events carrying reasoning text (streaming
	// only; 0 when none did).
	FirstReasoning, LastReasoning time.Duration
	// Usable is when the answer became usable by a program (only with
	// Request.Usable): its JSON, or a tool call's arguments, first parsed
	// complete and valid; non-streaming, when the whole body was parsed.
	// 0 when not measured or never; UsableError then says why not (only
	// for a request that otherwise succeeded).
	Usable      time.Duration
	UsableError string

	Stream       bool
	ConnReused   bool // the connection was a kept-alive one
	Status       int  // HTTP status, 0 if none was received
	PromptTokens int  // from usage; 0 if unknown
	CachedTokens int  // usage.prompt_tokens_details.cached_tokens (prefix-cache hits); 0 if unknown
	OutputTokens int  // from usage if present, else counted from events
	// ReasoningTokens is the part of OutputTokens that was reasoning,
	// counted from the reasoning text (textPieces; a chunk's usage growth
	// where the server sends usage per chunk); 0 when none was seen.
	ReasoningTokens int
	// OtherReasoning names a field of the answer that looked like
	// reasoning but is not one the client counts (Chunk.OtherReasoning):
	// its tokens are in no count but usage's. The first seen; "" if none.
	OtherReasoning string
	TokensFrom     string // "usage" or "events"; "" when unknown (non-streaming body without usage)
	// Encoding is the response's Content-Encoding ("gzip": decompressed
	// as it arrived, the timings are of the decompressed content); "" none.
	Encoding      string
	FinishReason  string
	Events        Events // token-carrying events, capped at MaxEvents
	EventsDropped int
	// Arrivals are the response's reads (only with Request.Arrivals),
	// capped at MaxArrivals; ArrivalsDropped counts the reads past the cap
	// (their tokens are in no arrival).
	Arrivals        []Arrival
	ArrivalsDropped int
	Text            string // the answer's content, only with Request.KeepText
	// ToolCalls are the answer's tool calls (function name and arguments as
	// received; no id), with Request.KeepText and Request.Usable.
	ToolCalls []ToolCall
	// Engine is the engine's own account of the request (ollama-chat's last
	// line), when HasEngine.
	Engine    EngineTimes
	HasEngine bool

	Error      ErrorClass
	ErrorText  string        // short human-readable detail; never contains the API key
	RetryAfter time.Duration // Retry-After of a 429/503 (seconds form), 0 if none
}

// OK reports whether the request succeeded.
func (t *Trace) OK() bool { return t.Error == ErrNone }
