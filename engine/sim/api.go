package sim

import (
	"bytes"
	"cmp"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// route is one endpoint: handler serves it, logRoutes lists it.
type route struct {
	method, path string
	h            http.HandlerFunc
}

// routes are the OpenAI-compatible API and the operational endpoints, in
// vLLM's start-up log order.
func (e *Engine) routes() []route {
	rs := []route{
		{http.MethodGet, "/health", e.handleHealth},
		{http.MethodGet, "/metrics", e.guard(false, e.handleMetrics)},
		{http.MethodPost, "/tokenize", e.guard(false, e.handleTokenize)},
		{http.MethodPost, "/detokenize", e.guard(false, e.handleDetokenize)},
		{http.MethodGet, "/version", e.guard(false, e.handleVersion)},
		{http.MethodGet, "/v1/models", e.guard(true, e.handleModels)},
		{http.MethodPost, "/v1/chat/completions", e.guard(true, e.handleGenerate(true))},
		{http.MethodPost, "/v1/completions", e.guard(true, e.handleGenerate(false))},
		{http.MethodPost, "/v1/messages", e.guard(true, e.handleMessages)},
		{http.MethodPost, "/v1/messages/count_tokens", e.guard(true, e.handleCountTokens)},
		{http.MethodPost, "/v1/responses", e.guard(true, e.handleResponses)},
	}
	if e.opts.DebugRequests {
		rs = append(rs, route{http.MethodGet, "/debug/requests", e.guard(false, e.handleDebugRequests)})
	}
	return rs
}

// handler routes the endpoints; anything else gets FastAPI's answers.
func (e *Engine) handler() http.Handler {
	mux := http.NewServeMux()
	for _, r := range e.routes() {
		mux.HandleFunc(r.method+" "+r.path, r.h)
		// Another method on a known path would otherwise fall through to
		// "/" and get 404; FastAPI answers 405 with Allow.
		allow := r.method
		if r.method == http.MethodGet {
			allow = "GET, HEAD" // a GET pattern serves HEAD too
		}
		mux.HandleFunc(r.path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Allow", allow)
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"detail": "Method Not Allowed"})
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	})
	return mux
}

// guard answers 503 while loading (health-during-load 503) and, for /v1
// endpoints, checks the API key as vLLM does (401 {"error":"Unauthorized"}).
func (e *Engine) guard(v1 bool, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !e.isReady.Load() {
			writeLoading(w)
			return
		}
		if v1 && e.opts.APIKey != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if x := r.Header.Get("X-Api-Key"); !ok && x != "" {
				got, ok = x, true // Anthropic's clients send the key so (docs/engine.md)
			}
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(e.opts.APIKey)) != 1 {
				writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
				return
			}
		}
		h(w, r)
	}
}

// writeLoading is llama.cpp's answer while the model loads.
func writeLoading(w http.ResponseWriter) {
	writeJSON(w, http.StatusServiceUnavailable, map[string]any{
		"error": map[string]any{"code": 503, "message": "Loading model", "type": "unavailable_error"}})
}

func (e *Engine) handleHealth(w http.ResponseWriter, _ *http.Request) {
	if !e.isReady.Load() {
		writeLoading(w)
		return
	}
	w.WriteHeader(http.StatusOK) // vLLM: 200 with an empty body
}

func (e *Engine) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if e.faults.metricsUnavailable {
		http.Error(w, "metrics unavailable (fault metrics-unavailable)", http.StatusNotFound)
		return
	}
	promhttp.HandlerFor(e.m().reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

func (e *Engine) handleModels(w http.ResponseWriter, _ *http.Request) {
	created := e.epoch.Unix()
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": append([]map[string]any{{
			"id": e.served, "object": "model", "created": created, "owned_by": "vllm",
			"root": e.served, "parent": nil, "max_model_len": e.opts.MaxModelLen,
			"permission": []any{},
		}}, e.loraModels(created)...),
	})
}

// apiError is an OpenAI-style error body, as vLLM writes it.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequestError"
	case http.StatusUnauthorized:
		return "AuthenticationError"
	case http.StatusNotFound:
		return "NotFoundError"
	case http.StatusRequestEntityTooLarge:
		return "RequestEntityTooLarge"
	case http.StatusTooManyRequests:
		return "RateLimitError"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableError"
	}
	if status >= 500 {
		return "InternalServerError"
	}
	return "BadRequestError"
}

// writeError sends an OpenAI-style error body (reqError.write's).
func writeError(w http.ResponseWriter, status int, param, format string, a ...any) {
	(&reqError{status: status, param: param, msg: fmt.Sprintf(format, a...)}).write(w)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// genRequest is the subset of the OpenAI request body the engine honours.
type genRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           int             `json:"min_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	N                   *int            `json:"n"`
	Temperature         *float64        `json:"temperature"`
	chatOptions
	reasoningParams
	// Logprobs is chat's bool or completions' count of alternatives;
	// TopLogprobs is chat's count (see parseLogprobs).
	Logprobs    json.RawMessage `json:"logprobs"`
	TopLogprobs *int            `json:"top_logprobs"`
	apiParams
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text returns the message's text: a string, or the text parts of an array.
func (m chatMessage) text() (string, error) {
	c := bytes.TrimSpace(m.Content)
	if len(c) == 0 || string(c) == "null" {
		return "", nil
	}
	if c[0] == '"' {
		var s string
		err := json.Unmarshal(c, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(c, &parts); err != nil {
		return "", errors.New("Input should be a valid string or a list of text parts")
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// reqError is a rejected request: status, the offending parameter (or "")
// and the message, written as an OpenAI-style error.
type reqError struct {
	status int
	param  string
	msg    string
	typ    string // the error type when not errorType(status)'s
}

// write sends rerr as an OpenAI-style error body.
func (rerr *reqError) write(w http.ResponseWriter) {
	ae := apiError{Message: rerr.msg, Type: cmp.Or(rerr.typ, errorType(rerr.status)), Code: rerr.status}
	if rerr.param != "" {
		ae.Param = &rerr.param
	}
	writeJSON(w, rerr.status, map[string]apiError{"error": ae})
}

// invalidRequest is a request that fails vLLM's pydantic validation:
// FastAPI's validation handler answers 400 with type "Bad Request".
func invalidRequest(param, format string, a ...any) *reqError {
	return &reqError{http.StatusBadRequest, param, fmt.Sprintf(format, a...), "Bad Request"}
}

func badRequest(param, format string, a ...any) *reqError {
	return &reqError{status: http.StatusBadRequest, param: param, msg: fmt.Sprintf(format, a...)}
}

// generation is a parsed request: the body, one engine request per choice
// (per prompt, then per n), in choice order, and the response's id.
type generation struct {
	req *genRequest
	rs  []*request
	lp  *logprober // nil without logprobs
	id  string
}

// parseGenerate decodes and checks a request body and builds its engine
// requests; on failure it writes the error response and returns nil.
func (e *Engine) parseGenerate(w http.ResponseWriter, hr *http.Request, chat bool) *generation {
	req := new(genRequest)
	rerr := decodeJSON(w, hr, req)
	var g *generation
	if rerr == nil {
		g, rerr = e.generation(hr, req, chat)
	}
	if rerr != nil {
		rerr.write(w)
		return nil
	}
	return g
}

// generation checks a decoded body and builds its engine requests: the
// chat and completions endpoints' path, and the Messages and Responses
// endpoints' once they have translated their body into chat's (as vLLM's
// do).
func (e *Engine) generation(hr *http.Request, req *genRequest, chat bool) (*generation, *reqError) {
	rerr := e.checkRequest(req, chat)
	var in *genInputs
	if rerr == nil {
		in, rerr = e.readInputs(req, chat)
	}
	if rerr != nil {
		return nil, rerr
	}
	g := &generation{req: req, lp: in.lp}
	if in.plan.format != "" || in.plan.tools.mode != "none" {
		g.lp = nil // made-up logprobs would not spell a structured answer (docs/engine.md)
	}
	e.buildRequests(g, hr, in, chat)
	return g, nil
}

// checkRequest runs the checks of a decoded body in vLLM's order:
// pydantic's validators come first.
func (e *Engine) checkRequest(req *genRequest, chat bool) *reqError {
	if rerr := req.checkParams(chat); rerr != nil {
		return rerr
	}
	if rerr := e.checkModel(req.Model); rerr != nil {
		return rerr
	}
	if rerr := e.checkToolServing(req, chat); rerr != nil {
		return rerr
	}
	return req.checkN()
}

// genInputs is what a checked body asks for: its logprobs, its prompts,
// each one's max_tokens, and the answer's plan.
type genInputs struct {
	lp        *logprober // nil without logprobs
	prompts   []promptIn
	maxTokens []int
	plan      *answerPlan
}

// readInputs reads req's logprobs, prompts, max_tokens and answer plan,
// in that order, each of which may be refused.
func (e *Engine) readInputs(req *genRequest, chat bool) (*genInputs, *reqError) {
	in := &genInputs{}
	var rerr *reqError
	if in.lp, rerr = req.parseLogprobs(chat, e.tok.Family()); rerr != nil {
		return nil, rerr
	}
	if in.prompts, rerr = e.prompts(req, chat); rerr != nil {
		return nil, rerr
	}
	in.maxTokens = make([]int, len(in.prompts))
	for k, p := range in.prompts {
		if in.maxTokens[k], rerr = e.maxTokens(req, len(p.ids), chat); rerr != nil {
			return nil, rerr
		}
	}
	if in.plan, rerr = e.planAnswer(req, chat); rerr != nil {
		return nil, rerr
	}
	return in, nil
}

// buildRequests makes g's engine requests: per prompt, one per choice,
// all woken through the first one's notify.
func (e *Engine) buildRequests(g *generation, hr *http.Request, in *genInputs, chat bool) {
	req := g.req
	usagePrompt := 0
	for _, p := range in.prompts {
		usagePrompt += len(p.ids)
	}
	for k, p := range in.prompts {
		r := e.newRequest(chat, hr.Header.Get(RequestIDHeader), p.text, p.ids, in.maxTokens[k], req.MinTokens, req.IgnoreEOS)
		if k == 0 {
			g.id = r.id
		}
		if len(in.prompts) > 1 {
			r.id += "-" + strconv.Itoa(k) // vLLM's id for each prompt's engine request
		}
		if req.Seed != nil {
			e.reseed(r, *req.Seed, req.MinTokens, req.IgnoreEOS)
		}
		if e.opts.LogRequests {
			e.logf(apiPrefix, "logger.py", 40, "Received request %s: prompt_tokens: %d, params: SamplingParams(n=%d, max_tokens=%d, min_tokens=%d, ignore_eos=%s), stream: %s.",
				r.id, len(p.ids), req.n(), in.maxTokens[k], req.MinTokens, pyBool(req.IgnoreEOS), pyBool(req.Stream))
		}
		cs := e.fanOut(r, req)
		e.think(cs, req, chat)
		for _, c := range cs {
			if e.lora.has(req.Model) {
				c.lora, c.hashRoot = req.Model, loraRoot(req.Model)
				if c.hashes != nil {
					c.hashes = appendHashesFrom(c.hashes[:0], c.ids, blockSize, c.hashRoot)
				}
			}
			e.shape(c, req, in.plan, p)
			c.usagePrompt = usagePrompt
			g.rs = append(g.rs, c)
		}
	}
	for i, r := range g.rs {
		r.index, r.notify = i, g.rs[0].notify // one handler wakes for any choice
	}
}

// pyBool is b as Python prints it in vLLM's log lines.
func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// RequestIDHeader is the header whose value vLLM's OpenAI server takes as
// the request's id ("chatcmpl-" or "cmpl-" + the value), and so does the
// bundled engine: a client's id then names the request in the log.
const RequestIDHeader = "X-Request-Id"

// logRequestEnd logs a request's end as vLLM's engine does with
// --enable-log-requests: "Finished request ID." or "Aborted request ID.".
func (e *Engine) logRequestEnd(r *request, aborted bool) {
	if !e.opts.LogRequests {
		return
	}
	if aborted {
		e.logf(apiPrefix, "async_llm.py", 432, "Aborted request %s.", r.id)
		return
	}
	e.logf(apiPrefix, "async_llm.py", 489, "Finished request %s.", r.id)
}

// checkModel answers 404 for a model name other than the served one, as
// vLLM does ("" means the served model).
func (e *Engine) checkModel(name string) *reqError {
	if name != "" && name != e.served && !e.lora.has(name) {
		return &reqError{status: http.StatusNotFound, param: "model", msg: fmt.Sprintf("The model `%s` does not exist.", name)}
	}
	return nil
}

// decodeJSON reads a JSON request body into v, bounded by MaxBodyBytes.
func decodeJSON(w http.ResponseWriter, hr *http.Request, v any) *reqError {
	if err := json.NewDecoder(http.MaxBytesReader(w, hr.Body, MaxBodyBytes)).Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &reqError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body over %d bytes", MaxBodyBytes)}
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return invalidRequest(te.Field, "%s", typeErrorMessage(te.Field, te.Value, te.Type))
		}
		return badRequest("", "malformed JSON body: %v", err)
	}
	return nil
}

// prompts tokenizes the request's prompts (completions, with the model's
// BOS unless add_special_tokens is false) or messages (chat: one prompt).
func (e *Engine) prompts(req *genRequest, chat bool) ([]promptIn, *reqError) {
	if chat {
		ids, text, rerr := e.chatIDs(req.Messages, req.chatOptions)
		return []promptIn{{ids, text, false}}, rerr
	}
	ins, err := e.promptList(req.Prompt, req.addSpecial(true))
	if err != nil {
		return nil, badRequest("prompt", "%v", err)
	}
	return ins, nil
}

// maxTokens applies vLLM's length rules: the prompt must leave room in
// --max-model-len, max_tokens defaults to the rest of it (chat) or to 16
// (completions: CompletionRequest's default, within the room left), and
// prompt plus max_tokens must fit.
func (e *Engine) maxTokens(req *genRequest, prompt int, chat bool) (int, *reqError) {
	maxLen := e.opts.MaxModelLen
	if prompt >= maxLen {
		return 0, badRequest("", "This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", maxLen, prompt)
	}
	maxTokens := maxLen - prompt
	if !chat {
		maxTokens = min(maxTokens, completionsDefaultMaxTokens)
	}
	if req.MaxCompletionTokens != nil {
		maxTokens = *req.MaxCompletionTokens
	} else if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	}
	switch {
	case maxTokens < 1:
		return 0, badRequest("max_tokens", "max_tokens must be at least 1, got %d.", maxTokens)
	case prompt+maxTokens > maxLen:
		return 0, badRequest("", "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", maxLen, prompt+maxTokens, prompt, maxTokens)
	case req.MinTokens < 0 || req.MinTokens > maxTokens:
		return 0, badRequest("min_tokens", "min_tokens must be between 0 and max_tokens=%d, got %d.", maxTokens, req.MinTokens)
	}
	return maxTokens, nil
}

// newRequest fixes a request's identity, text and length up front: the text
// and (without ignore_eos) the length are derived from the seed and the
// prompt, so the same request gets the same answer.
// A client's X-Request-Id (xid), when given, is the id after the prefix,
// as in vLLM.
func (e *Engine) newRequest(chat bool, xid, text string, ids []uint32, maxTokens, minTokens int, ignoreEOS bool) *request {
	seq := e.seq.Add(1)
	seed := uint64(e.opts.Seed)
	prefix := "cmpl-"
	if chat {
		prefix = "chatcmpl-"
	}
	if xid == "" {
		xid = hex32(splitmix64(seed^seq), splitmix64(seq+seed*31))
	}
	r := &request{
		id:        prefix + xid,
		key:       hashString(seed, text),
		prompt:    len(ids),
		ids:       ids,
		cached:    -1,
		maxTokens: maxTokens,
		target:    maxTokens,
		natural:   "length",
		arrival:   e.now(),
		notify:    make(chan struct{}, 1),
	}
	r.goneAt.Store(-1)
	if !e.opts.NoPrefixCaching {
		// Hashed here, on the handler's goroutine, so that the engine loop
		// only looks the blocks up.
		r.hashes = appendHashes(make([]uint64, 0, len(ids)/blockSize+1), ids, blockSize)
	}
	e.setLength(r, minTokens, ignoreEOS)
	return r
}

// setLength fixes how many tokens r generates: max_tokens, or (without
// ignore_eos) the length its key draws when shorter.
func (e *Engine) setLength(r *request, minTokens int, ignoreEOS bool) {
	r.target, r.natural = r.maxTokens, "length"
	if !ignoreEOS {
		// A thinking request answers after its thinking (reasoning.go).
		if n := max(r.answer0+naturalLength(r.key), minTokens); n < r.maxTokens {
			r.target, r.natural = n, "stop"
		}
	}
	if timing != nil {
		r.emitAt = make([]int64, r.target) // up to 32 KB a request: only the probe reads it
	}
}

// handleGenerate serves /v1/chat/completions (chat) and /v1/completions.
func (e *Engine) handleGenerate(chat bool) http.HandlerFunc {
	return func(w http.ResponseWriter, hr *http.Request) {
		if !e.requestFaults(w) {
			return
		}
		g := e.parseGenerate(w, hr, chat)
		if g == nil || !e.admit(hr, g) {
			return
		}
		req, r, rs, lp := g.req, g.rs[0], g.rs, g.lp
		created := time.Now().Unix()
		c := newChunker(chat, g.id, e.served, created)
		so := req.StreamOptions
		usage := so != nil && so.IncludeUsage
		continuous := usage && so.ContinuousUsageStats
		switch {
		case req.Stream && len(rs) > 1:
			e.streamChoices(w, hr, rs, c, lp, usage, continuous)
		case req.Stream:
			e.stream(w, hr, r, c, lp, usage, continuous)
		default:
			e.complete(w, hr, g, chat, created)
		}
	}
}

// requestFaults applies the faults due before a generation request is
// read; false when one answered it.
func (e *Engine) requestFaults(w http.ResponseWriter) bool {
	if e.crashDue() {
		// A dead engine core starts no answer; net/http drops the
		// connection. A request arriving on a kept-alive connection
		// before the server closes would otherwise get a response head
		// and then be cut off.
		panic(http.ErrAbortHandler)
	}
	if e.faults.closeConnection() {
		w.Header().Set("Connection", "close") // net/http closes after this response
	}
	if e.faults.httpError() {
		if e.faults.httpErrorStatus == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		writeError(w, e.faults.httpErrorStatus, "", "injected error (fault http-error=%g:%d)", e.faults.httpErrorRate, e.faults.httpErrorStatus)
		return false
	}
	return true
}

// admit hands g's requests to the engine loop after the API server's
// share of the request (tokenizing, the hand-off to the engine core, a KV
// transfer): part of TTFT and E2E, not of queue time (vLLM's engine core
// stamps arrival after it). false when the client left or the engine
// stopped meanwhile.
func (e *Engine) admit(hr *http.Request, g *generation) bool {
	r, rs := g.rs[0], g.rs
	d := e.scale(e.perf.RequestOverhead() + e.kvTransferTime(r))
	for _, c := range rs {
		c.queued = r.arrival + int64(d) // modelled, like every engine time
		c.remote = e.opts.KVRole == KVRoleConsumer
	}
	if d <= fineSleepMax {
		fineSleep(d)
	} else if !e.wait(hr, d) {
		return false
	}
	e.sched.submit(rs...)
	return true
}

// complete serves a non-streaming request (rs: one request per choice):
// nothing is sent until the last token of every choice, exactly like vLLM
// (the first token waits in the server).
func (e *Engine) complete(w http.ResponseWriter, hr *http.Request, g *generation, chat bool, created int64) {
	rs := g.rs
	if !e.awaitDone(hr, rs) {
		return
	}
	object := "text_completion"
	if chat {
		object = "chat.completion"
	}
	choices := make([]completionChoice, len(rs))
	completion := 0
	for i, r := range rs {
		completion += r.target
		choices[i] = e.answerChoice(i, r, g.lp, chat)
	}
	r := rs[0]
	writeJSON(w, http.StatusOK, &completionResponse{ID: g.id, Object: object, Created: created, Model: e.served,
		Choices: choices,
		Usage: completionUsage{Prompt: r.usagePrompt, Total: r.usagePrompt + completion, Completion: completion,
			Details: e.promptDetails(r), CompletionDetails: e.completionDetails(rs)}})
	for _, r := range rs {
		e.logRequestEnd(r, false)
	}
	e.requestFinished(hr)
}

// awaitDone waits until every request of rs has its last token; false
// (and rs aborted) when the client left or the engine is stopping first.
func (e *Engine) awaitDone(hr *http.Request, rs []*request) bool {
	for !allDone(rs) {
		select {
		case <-rs[0].notify: // shared by the choices
		case <-hr.Context().Done():
			for _, r := range rs {
				e.clientGone(r, 0)
			}
			return false
		case <-e.stopping:
			for _, r := range rs {
				e.sched.abort(r, "abort")
			}
			return false
		}
	}
	return true
}

// completionResponse is a non-streaming answer, fields in vLLM's order
// (a struct, not a map: encoding/json sorts map keys, and is several
// times slower on them).
type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   completionUsage    `json:"usage"`
}

// completionChoice has Message (chat) or Text (completions).
type completionChoice struct {
	Index        int                `json:"index"`
	Message      *completionMessage `json:"message,omitempty"`
	Text         *string            `json:"text,omitempty"`
	Logprobs     json.RawMessage    `json:"logprobs"` // null without logprobs
	FinishReason string             `json:"finish_reason"`
	StopReason   json.RawMessage    `json:"stop_reason"` // the stop string or token id; null
}

// completionMessage is vLLM's ChatMessage (protocol.py), its null fields
// included: OpenAI's schema requires refusal, and SDKs read the others.
type completionMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"` // null: no answer (cut off while thinking), or an auto tool call without text
	Refusal          *string        `json:"refusal"`
	Annotations      *struct{}      `json:"annotations"`
	Audio            *struct{}      `json:"audio"`
	FunctionCall     *struct{}      `json:"function_call"`
	ToolCalls        []toolCallJSON `json:"tool_calls"`
	ReasoningContent *string        `json:"reasoning_content"`
	Reasoning        *string        `json:"reasoning,omitempty"` // newer vLLM's name (--reasoning-field reasoning)
}

type completionUsage struct {
	Prompt     int            `json:"prompt_tokens"`
	Total      int            `json:"total_tokens"`
	Completion int            `json:"completion_tokens"`
	Details    *promptDetails `json:"prompt_tokens_details"` // null when unset, as vLLM's non-streaming answer has it
	// CompletionDetails: newer vLLM's reasoning count (reasoning.go).
	CompletionDetails *reasoningDetails `json:"completion_tokens_details,omitempty"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// promptDetails is usage.prompt_tokens_details as vLLM fills it: only
// with --enable-prompt-tokens-details, and only when some prompt tokens
// were cached (else null).
func (e *Engine) promptDetails(r *request) *promptDetails {
	if !e.opts.PromptTokensDetails || r.cached <= 0 {
		return nil
	}
	return &promptDetails{CachedTokens: r.cached}
}

// wait sleeps d unless the client leaves or the engine stops first.
func (e *Engine) wait(hr *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-hr.Context().Done():
		return false
	case <-e.stopping:
		return false
	}
}

// clientGone handles a client that left after seeing written tokens: abort
// (vLLM's default) or, with IgnoreDisconnect, note it and let it run on.
func (e *Engine) clientGone(r *request, written int) {
	if e.opts.IgnoreDisconnect {
		r.goneAt.Store(int64(written))
		return
	}
	e.sched.abort(r, "abort")
}

// BundledVersion is the "servebench" object of the bundled engine's
// /version: the profiles and pacing it actually runs after every flag, so
// a harness records them from the engine rather than from its own reading
// of the command line. vLLM's /version has "version" alone.
//
// The parallel sizes and the KV role are there only when set (more than
// one GPU or stage; a prefill or decode instance), so a one-GPU engine's
// object is unchanged.
//
// bench/result.Bundled mirrors these fields on purpose (bench's
// recordBundled copies them): report reads results and must not depend on
// an engine package, even transitively. A field added here is added there
// (bench's TestRecordBundledCopiesEveryField fails until it is).
type BundledVersion struct {
	GPU     string  `json:"gpu"`
	Model   string  `json:"model"`
	Speedup float64 `json:"speedup"`
	// StartupSpeedup is --startup-speedup when given (0: the start-up
	// phases run at Speedup), so a client can put them in modelled time.
	StartupSpeedup       float64 `json:"startup_speedup,omitempty"`
	Seed                 int64   `json:"seed"`
	TensorParallelSize   int     `json:"tensor_parallel_size,omitempty"`
	PipelineParallelSize int     `json:"pipeline_parallel_size,omitempty"`
	KVRole               string  `json:"kv_role,omitempty"`
	VLLMVersion          string  `json:"vllm_version,omitempty"` // --vllm-version, the release whose step loop paces it ("": the seed's, left out)
}

// handleVersion answers vLLM's {"version": ...} plus what the engine runs.
func (e *Engine) handleVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Version    string         `json:"version"`
		Servebench BundledVersion `json:"servebench"`
	}{vllmVersion, e.bundledVersion()})
}

// bundledVersion is what /version says the engine runs.
func (e *Engine) bundledVersion() BundledVersion {
	v := BundledVersion{GPU: e.gpu.Name, Model: e.model.Name, Speedup: e.opts.Speedup, StartupSpeedup: e.opts.StartupSpeedup, Seed: e.opts.Seed,
		KVRole: e.opts.KVRole, VLLMVersion: e.opts.VLLMVersion}
	if n := e.opts.TensorParallelSize; n > 1 {
		v.TensorParallelSize = n
	}
	if n := e.opts.PipelineParallelSize; n > 1 {
		v.PipelineParallelSize = n
	}
	return v
}
