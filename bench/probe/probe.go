package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/scrape"
)

// Names lists the probes Run knows, in the order "all" runs them.
var Names = []string{"cancel", "midstream-error", "buffering", "limits"}

// All is the name that runs every probe.
const All = "all"

// Verdict is a probe's outcome.
type Verdict string

// Verdicts.
const (
	Pass         Verdict = "pass"         // the server does what it should
	Fail         Verdict = "fail"         // it does not; Summary says how
	Inconclusive Verdict = "inconclusive" // the probe could not tell; Summary says why
)

// Errors Run returns when a probe could not run (errors.Is-able).
var (
	ErrUsage       = errors.New("bad probe options")
	ErrUnreachable = errors.New("server unreachable")
)

// Options configure the probes. Zero values take the defaults noted.
type Options struct {
	BaseURL     string   // the server, e.g. "http://127.0.0.1:8000"
	MetricsURLs []string // default BaseURL + "/metrics"
	Model       string   // default: the first model /v1/models lists
	APIKey      string   // sent as a Bearer token; never printed
	Endpoint    string   // "chat" (default) or "completions"
	// MaxModelLen overrides /v1/models' max_model_len (limits, midstream-error).
	MaxModelLen int
	// After is how many tokens cancel reads before disconnecting (default 16).
	After int
	// MaxTokens is the output length asked for: cancel 512, buffering 128,
	// midstream-error 64 by default.
	MaxTokens int
	// Watch bounds how long cancel watches /metrics after the disconnect
	// (default 30 s); Settle is how long the generated-token counter must
	// stay still to count as stopped (default 1 s); Poll is the scrape
	// interval (default 50 ms).
	Watch, Settle, Poll time.Duration
	// RequestTimeout bounds each probe request (default 2 min).
	RequestTimeout time.Duration
	// HTTP fetches /metrics (default: a client with a 10 s timeout).
	HTTP *http.Client
	// Snapshot, when set, reads the engine's metrics instead of fetching
	// MetricsURLs (e.g. from Prometheus: scrape/promql Source.Snapshot).
	Snapshot func(ctx context.Context) (*scrape.Snapshot, error)
}

func (o *Options) defaults() error {
	if o.BaseURL == "" {
		return fmt.Errorf("%w: base URL is empty: expected http://host:port", ErrUsage)
	}
	o.BaseURL = strings.TrimSuffix(strings.TrimRight(o.BaseURL, "/"), "/v1")
	if len(o.MetricsURLs) == 0 {
		o.MetricsURLs = []string{o.BaseURL + "/metrics"}
	}
	if o.Endpoint == "" {
		o.Endpoint = "chat"
	}
	if o.Endpoint != "chat" && o.Endpoint != "completions" {
		return fmt.Errorf("%w: endpoint %q: expected chat or completions (probe's checks speak those two)", ErrUsage, o.Endpoint)
	}
	checks := []struct {
		name string
		v    int64
	}{{"after", int64(o.After)}, {"max tokens", int64(o.MaxTokens)}, {"max model len", int64(o.MaxModelLen)},
		{"watch", int64(o.Watch)}, {"settle", int64(o.Settle)}, {"poll", int64(o.Poll)}, {"request timeout", int64(o.RequestTimeout)}}
	for _, c := range checks {
		if c.v < 0 {
			return fmt.Errorf("%w: %s %d: expected a value >= 0 (0: the default)", ErrUsage, c.name, c.v)
		}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if o.After == 0 {
		o.After = 16
	}
	def(&o.Watch, 30*time.Second)
	def(&o.Settle, time.Second)
	def(&o.Poll, 50*time.Millisecond)
	def(&o.RequestTimeout, 2*time.Minute)
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	return nil
}

// Item is one piece of evidence: a named value with its human reading.
type Item struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
	Text  string `json:"text,omitempty"` // value with unit or explanation; Value is printed when empty
}

// Result is one probe's outcome.
type Result struct {
	Probe    string   `json:"probe"`
	Verdict  Verdict  `json:"verdict"`
	Summary  string   `json:"summary"`
	Evidence []Item   `json:"evidence"`
	Warnings []string `json:"warnings,omitempty"`
}

func (r *Result) add(key string, value any, text string) {
	r.Evidence = append(r.Evidence, Item{Key: key, Value: value, Text: text})
}

// addDuration adds evidence key: d in seconds, its text d in milliseconds
// followed by note.
func (r *Result) addDuration(key string, d time.Duration, note string) {
	r.add(key, d.Seconds(), ms(d)+note)
}

func (r *Result) warn(format string, a ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, a...))
}

// env is what every probe shares: the client and what the server said
// about itself.
type env struct {
	o      Options
	c      *client.Client
	model  string
	maxLen int
}

// Run runs the probe called name (one of Names, or All) against o.BaseURL
// and returns one Result per probe run. It checks first that the server
// answers GET /v1/models (else ErrUnreachable).
func Run(ctx context.Context, name string, o Options) ([]*Result, error) {
	names := []string{name}
	if name == All {
		names = Names
	} else if !isProbe(name) {
		return nil, fmt.Errorf("%w: probe %q: expected one of %s, %s", ErrUsage, name, strings.Join(Names, ", "), All)
	}
	if err := o.defaults(); err != nil {
		return nil, err
	}
	e, err := prepare(ctx, o)
	if err != nil {
		return nil, err
	}
	defer e.c.Close()
	var out []*Result
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		var r *Result
		switch n {
		case "cancel":
			r = e.cancel(ctx)
		case "midstream-error":
			r = e.midstream(ctx)
		case "buffering":
			r = e.buffering(ctx)
		case "limits":
			r = e.limits(ctx)
		}
		out = append(out, r)
	}
	return out, nil
}

func isProbe(name string) bool {
	for _, n := range Names {
		if n == name {
			return true
		}
	}
	return false
}

// prepare builds the client and learns the model and its context length.
func prepare(ctx context.Context, o Options) (*env, error) {
	e := &env{o: o, c: client.New(client.Options{BaseURL: o.BaseURL, APIKey: o.APIKey, MaxConns: 4,
		RequestTimeout: o.RequestTimeout})}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ms, err := e.c.Models(lctx)
	if err != nil {
		e.c.Close()
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	e.model, e.maxLen = o.Model, o.MaxModelLen
	for _, m := range ms {
		if e.model == "" {
			e.model = m.ID
		}
		if m.ID == e.model && e.maxLen == 0 {
			e.maxLen = m.MaxModelLen
		}
	}
	if e.model == "" {
		e.c.Close()
		return nil, fmt.Errorf("%w: %s/v1/models lists no model: pass a model name", ErrUsage, o.BaseURL)
	}
	return e, nil
}

// request is a probe request for the configured endpoint.
func (e *env) request(prompt string, maxTokens int, exact, stream bool) *client.Request {
	r := &client.Request{Endpoint: e.o.Endpoint, Model: e.model, MaxTokens: maxTokens, ExactLength: exact, Stream: stream}
	if r.Endpoint == "chat" {
		r.Messages = []client.Message{{Role: "user", Content: prompt}}
	} else {
		r.Prompt = prompt
	}
	return r
}

// probePrompt is the prompt of the probes' ordinary requests.
const probePrompt = "Explain in a few paragraphs why an inference server streams its answer."

// Formats lists the output formats Write accepts.
var Formats = []string{"text", "json"}

// Write renders results in format (one of Formats).
func Write(w io.Writer, rs []*Result, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rs)
	case "text", "":
		return writeText(w, rs)
	}
	return fmt.Errorf("format %q: expected one of %s", format, strings.Join(Formats, ", "))
}

func writeText(w io.Writer, rs []*Result) error {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "probe %s: %s: %s\n", r.Probe, strings.ToUpper(string(r.Verdict)), r.Summary)
		for _, it := range r.Evidence {
			text := it.Text
			if text == "" {
				text = fmt.Sprint(it.Value)
			}
			fmt.Fprintf(&b, "  %-34s %s\n", it.Key, text)
		}
		for _, wn := range r.Warnings {
			fmt.Fprintf(&b, "  warning: %s\n", wn)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ms formats a duration in milliseconds for evidence text.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
