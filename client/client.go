package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// DefaultAPIKeyEnv is the environment variable APIKeyFromEnv reads when
// given no name (servebench's --api-key-env default).
const DefaultAPIKeyEnv = "OPENAI_API_KEY"

// DefaultMaxConns is the connection pool size when Options.MaxConns is 0.
const DefaultMaxConns = 64

// Options configure a Client.
type Options struct {
	BaseURL string // e.g. "http://127.0.0.1:8000" (a trailing "/v1" is accepted)
	APIKey  string // sent as "Authorization: Bearer ..."; never recorded
	// MaxConns sizes the keep-alive pool: the most requests in flight at
	// once without opening new connections (0: DefaultMaxConns).
	MaxConns int
	// RequestTimeout bounds a whole request (0: none).
	RequestTimeout time.Duration
	// StallTimeout bounds the time without an SSE event on a streaming
	// request, counted from sending it, then from each event (0: none). It
	// does not apply to non-streaming requests, whose servers legitimately
	// send nothing until the whole answer is ready: RequestTimeout does.
	StallTimeout time.Duration
	// AcceptEncoding is EncodingGzip ("" too: the default) or
	// EncodingIdentity; a gzip answer is decompressed as it arrives.
	AcceptEncoding string
}

// Client sends OpenAI-compatible requests and records a Trace for each. It
// is safe for concurrent use; its connection pool is sized by
// Options.MaxConns.
type Client struct {
	opts   Options
	base   string       // BaseURL without trailing "/" or "/v1"
	hc     *http.Client // its Transport is an *inlineTransport
	direct *directPath  // nil: requests go through hc
	keyErr error        // why opts.APIKey (or AcceptEncoding) cannot be sent; Do and Models send nothing while set
}

// New returns a Client. The transport keeps connections alive, allows
// MaxConns idle and in-flight connections to the server and speaks
// HTTP/1.1 only (what inference servers speak on plain HTTP). Requests
// carry the headers the OpenAI SDKs send (sdkHeaders), Accept-Encoding
// included, so a compressing proxy treats them as it treats users; net/http
// adds no compression of its own (Do decompresses). Plain http://
// goes through inlineTransport, which does each exchange's I/O on the
// caller's goroutine; https:// through net/http's Transport.
func New(opts Options) *Client {
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.AcceptEncoding == "" {
		opts.AcceptEncoding = EncodingGzip
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:               nil, // measure the server, not a proxy from the environment
		DialContext:         dialer.DialContext,
		MaxIdleConns:        opts.MaxConns,
		MaxIdleConnsPerHost: opts.MaxConns,
		MaxConnsPerHost:     opts.MaxConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	base := strings.TrimRight(opts.BaseURL, "/")
	base = strings.TrimSuffix(base, "/v1")
	u, err := url.Parse(base)
	if err != nil {
		u = &url.URL{} // Do reports the bad base URL when net/http fails to parse it too
	}
	hc := &http.Client{Transport: newInlineTransport(u, dialer, opts.MaxConns, tr.IdleConnTimeout, tr)}
	keyErr := checkAPIKey(opts.APIKey)
	if err := CheckAcceptEncoding(opts.AcceptEncoding); err != nil && keyErr == nil {
		keyErr = fmt.Errorf("accept encoding %w", err)
	}
	return &Client{opts: opts, base: base, hc: hc, direct: newDirectPath(u, opts.APIKey, opts.AcceptEncoding), keyErr: keyErr}
}

// checkAPIKey says why key cannot go in an Authorization header (a control
// character, as a line break pasted with it, would split or corrupt the
// request), without quoting the key; nil when it can.
func checkAPIKey(key string) error {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < ' ' && c != '\t' || c == 0x7f {
			return fmt.Errorf("the API key has a control character (%q) at byte %d: a header cannot carry it", c, i)
		}
	}
	return nil
}

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Message is one chat message. ToolCalls (an assistant's) and ToolCallID
// (a "tool" message's) carry a tool-calling conversation on chat.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is one call of an assistant message, in the chat API's shape.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall is a tool call's function and its arguments (JSON text).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Request is one generation request.
type Request struct {
	Endpoint    string    // "chat" (POST /v1/chat/completions), "completions" (POST /v1/completions), "ollama-chat" (POST /api/chat), "messages" (POST /v1/messages) or "responses" (POST /v1/responses)
	Model       string    //
	Messages    []Message // chat
	Prompt      string    // completions
	MaxTokens   int       // 0: not sent (server default)
	ExactLength bool      // send ignore_eos:true and min_tokens=max_tokens
	Stream      bool      // streaming also sends stream_options.include_usage=true
	// ContinuousUsage, streaming, also asks for the usage so far on every
	// chunk (vLLM's stream_options.continuous_usage_stats), so an event that
	// carries several tokens (speculative decoding) counts all of them.
	ContinuousUsage bool
	// ID, when set, is sent as the X-Request-Id header, which vLLM and
	// SGLang take as the request's own id (their logs name it).
	ID string
	// KeepText gathers the answer's visible content into Trace.Text, as
	// received (a multi-turn session sends it back as the next turn's
	// history). Off by default: the hot path keeps no text.
	KeepText bool
	// Seed (when SeedSet) and KeepAlive are sent on ollama-chat
	// (options.seed, keep_alive: how long Ollama keeps the model loaded).
	Seed      int64
	SeedSet   bool
	KeepAlive string
	// ResponseFormat, Tools and ToolChoice are sent as is (JSON) as
	// response_format, tools and tool_choice: structured output and tool
	// calls (chat; completions takes response_format only).
	ResponseFormat json.RawMessage
	Tools          json.RawMessage
	ToolChoice     json.RawMessage
	// Arrivals records the response's reads in Trace.Arrivals (when each
	// came, its bytes and tokens), up to MaxArrivals. Off by default.
	Arrivals bool
	// Usable, when set, times Trace.Usable: when the answer's JSON or tool
	// call first parses complete (and valid). nil: not measured, no cost.
	Usable *Usable
}

// RequestIDHeader is the header Request.ID is sent in.
const RequestIDHeader = "X-Request-Id"

// Endpoints lists the valid Request.Endpoint values.
var Endpoints = []string{"chat", "completions", EndpointOllamaChat, EndpointMessages, EndpointResponses}

type wireRequest struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages,omitempty"`
	Prompt         *string         `json:"prompt,omitempty"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	MinTokens      int             `json:"min_tokens,omitempty"`
	IgnoreEOS      bool            `json:"ignore_eos,omitempty"`
	Stream         bool            `json:"stream"`
	StreamOptions  *streamOptions  `json:"stream_options,omitempty"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	Tools          json.RawMessage `json:"tools,omitempty"`
	ToolChoice     json.RawMessage `json:"tool_choice,omitempty"`
}

type streamOptions struct {
	IncludeUsage         bool `json:"include_usage"`
	ContinuousUsageStats bool `json:"continuous_usage_stats,omitempty"`
}

// path and body build the HTTP request for req, or say what is wrong.
func (req *Request) path() (string, error) {
	for i := 0; i < len(req.ID); i++ {
		// What a header value cannot hold, the direct path must not write.
		if c := req.ID[i]; c < 0x20 || c == 0x7f {
			return "", fmt.Errorf("request id %q: control characters cannot go in the %s header", req.ID, RequestIDHeader)
		}
	}
	switch req.Endpoint {
	case "chat":
		return "/v1/chat/completions", nil
	case "completions":
		return "/v1/completions", nil
	case EndpointOllamaChat:
		return "/api/chat", nil
	case EndpointMessages:
		return "/v1/messages", nil
	case EndpointResponses:
		return "/v1/responses", nil
	}
	return "", fmt.Errorf("request endpoint %q: expected one of %s", req.Endpoint, strings.Join(Endpoints, ", "))
}

func (req *Request) body() ([]byte, error) {
	if err := req.checkStructured(); err != nil {
		return nil, err
	}
	if req.Endpoint == EndpointOllamaChat {
		return req.ollamaBody()
	}
	if isAPIEndpoint(req.Endpoint) {
		return req.apiBody()
	}
	w := wireRequest{Model: req.Model, MaxTokens: req.MaxTokens, Stream: req.Stream,
		ResponseFormat: req.ResponseFormat, Tools: req.Tools, ToolChoice: req.ToolChoice}
	if req.Endpoint == "chat" {
		w.Messages = req.Messages
		if len(w.Messages) == 0 {
			return nil, errors.New("chat request has no messages: expected at least one")
		}
	} else {
		p := req.Prompt
		w.Prompt = &p
	}
	if req.ExactLength {
		if req.MaxTokens <= 0 {
			return nil, fmt.Errorf("exact length needs max tokens > 0, got %d", req.MaxTokens)
		}
		w.IgnoreEOS, w.MinTokens = true, req.MaxTokens
	}
	if req.Stream {
		w.StreamOptions = &streamOptions{IncludeUsage: true, ContinuousUsageStats: req.ContinuousUsage}
	}
	return json.Marshal(&w)
}

// checkStructured refuses structured fields an endpoint does not take, and
// any that is not JSON (it would be sent as is).
func (req *Request) checkStructured() error {
	fields := []struct {
		name string
		v    json.RawMessage
	}{{"response_format", req.ResponseFormat}, {"tools", req.Tools}, {"tool_choice", req.ToolChoice}}
	for _, f := range fields {
		if len(f.v) == 0 {
			continue
		}
		if !json.Valid(f.v) {
			return fmt.Errorf("%s is not valid JSON", f.name)
		}
		if req.Endpoint == EndpointOllamaChat || req.Endpoint == "completions" && f.name != "response_format" {
			return fmt.Errorf("%s: not supported on endpoint %q", f.name, req.Endpoint)
		}
	}
	return nil
}

// APIKeyFromEnv returns the API key in the environment variable name
// (DefaultAPIKeyEnv when name is ""), trimmed; "" when unset.
func APIKeyFromEnv(name string) string {
	if name == "" {
		name = DefaultAPIKeyEnv
	}
	return strings.TrimSpace(os.Getenv(name))
}

// ModelInfo is one entry of GET /v1/models.
type ModelInfo struct {
	ID          string
	MaxModelLen int // 0 when the server does not say (vLLM does: max_model_len)
}

// Models lists the server's models (GET /v1/models).
func (c *Client) Models(ctx context.Context) ([]ModelInfo, error) {
	if c.keyErr != nil {
		return nil, fmt.Errorf("listing models: %w", c.keyErr)
	}
	url := c.base + "/v1/models"
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("listing models: base URL %q: %w", c.opts.BaseURL, err)
	}
	c.auth(hreq)
	url = hreq.URL.Redacted() // messages name it without a password
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("listing models at %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody*16))
	if err != nil {
		return nil, fmt.Errorf("listing models at %s: reading body: %w", url, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("listing models at %s: %w", url, &StatusError{Code: resp.StatusCode, Message: c.ErrorText(body)})
	}
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("listing models at %s: expected {\"data\": [...]}: %w", url, err)
	}
	out := make([]ModelInfo, 0, len(list.Data))
	for _, m := range list.Data {
		out = append(out, ModelInfo{ID: m.ID, MaxModelLen: m.MaxModelLen})
	}
	return out, nil
}

// StatusError is a non-2xx answer to a request that is not a generation
// (those are Traces, with ErrHTTPStatus): callers act on Code, e.g. 401.
type StatusError struct {
	Code    int
	Message string // from the body, as ErrorText renders it
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Code, e.Message) }

// AcceptEncoding is the Accept-Encoding the client sends (Options'; gzip
// by default).
func (c *Client) AcceptEncoding() string { return c.opts.AcceptEncoding }

// auth sets the headers of every request: the SDK's and the API key.
func (c *Client) auth(hreq *http.Request) {
	for _, h := range sdkHeaders(c.opts.AcceptEncoding) {
		hreq.Header.Set(h[0], h[1])
	}
	if c.opts.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
}

// redact removes the API key from text that came from outside (a server
// may echo the header back in an error message).
func (c *Client) redact(s string) string {
	if c.opts.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.opts.APIKey, "[REDACTED]")
}

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// maxErrorText bounds Trace.ErrorText.
const maxErrorText = 200

// errorText extracts an OpenAI-style error message from a response body:
// {"error":{"message":...}}, {"error":"..."}, {"message":...} (older vLLM),
// {"detail":...} (FastAPI); else the body itself. Callers redact, then
// shorten.
func errorText(body []byte) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message *string         `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	msg := ""
	if json.Unmarshal(body, &e) == nil {
		switch {
		case len(e.Error) > 0 && string(e.Error) != "null":
			msg = string(errorMessage(e.Error))
			if msg == "" {
				msg = string(e.Error)
			}
		case e.Message != nil:
			msg = *e.Message
		case len(e.Detail) > 0:
			var s string
			if json.Unmarshal(e.Detail, &s) != nil {
				s = string(e.Detail)
			}
			msg = s
		}
	}
	if msg == "" {
		msg = string(bytes.TrimSpace(body))
	}
	return msg
}

// ErrorText is the server's message in an error response body (the
// OpenAI, older vLLM and FastAPI shapes errorText knows), else the body
// itself, on one line, shortened, the API key redacted.
func (c *Client) ErrorText(body []byte) string { return c.short(errorText(body)) }

// short is what any outside text goes through before it is recorded:
// redacted first, so a cut cannot leave part of the key, then shortened.
func (c *Client) short(s string) string { return shorten(c.redact(s)) }

// shorten caps s at maxErrorText bytes (on a rune boundary) on one line.
func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "..."
}
