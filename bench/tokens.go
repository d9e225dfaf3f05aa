package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/client"
)

// Token-exact prompts. A generated prompt of N tokens must be N tokens as
// the server counts them, chat template included. Before the runs, Execute
// asks the server how it counts generated text (CalibrateTokens): POST
// /tokenize where the server has one (vLLM's TokenizeCompletionRequest /
// TokenizeChatRequest shapes, vllm/entrypoints/openai/protocol.py; SGLang
// takes the same "prompt" body), else usage.prompt_tokens of one-token
// probe requests. Three counts in the runs' form (chat or completions)
// give the tokens per generated word and the template's overhead; the
// runner then generates N - overhead tokens of text (promptText) and
// records requested and counted tokens per request.

// generatingSources are the sources whose prompts servebench generates to
// a token count (the others send the text they were given).
var generatingSources = []string{workload.SourceSynthetic, workload.SourceMooncake, workload.SourceAzure}

// generatesText reports whether spec's source generates prompt text.
func generatesText(spec *RunSpec) bool {
	var w result.Workload
	spec.Source.Describe(&w)
	for _, s := range generatingSources {
		if w.Source == s {
			return true
		}
	}
	return false
}

// tokenCounter counts the prompt tokens of a request body's prompt part.
type tokenCounter func(ctx context.Context, req *client.Request) (int, error)

// CalibrateTokens measures how the server at baseURL counts generated
// prompts in endpoint's form: by /tokenize when it answers, else by
// probes sent through doer. It sends at most three /tokenize calls and, if
// those fail, three one-token requests.
func CalibrateTokens(ctx context.Context, doer Doer, baseURL, apiKey, model, endpoint string) (*result.TokenCalibration, error) {
	tk := tokenizeCounter(&http.Client{Timeout: 10 * time.Second}, baseURL, apiKey)
	cal, err := calibrate(ctx, tk, model, endpoint)
	if err == nil {
		cal.Source = result.CalibratedByTokenize
		return cal, nil
	}
	cal, uerr := calibrate(ctx, usageCounter(doer), model, endpoint)
	if uerr != nil {
		return nil, fmt.Errorf("/tokenize: %v; usage probes: %w", err, uerr)
	}
	cal.Source = result.CalibratedByUsage
	return cal, nil
}

// calibrate takes the three counts: one word, every generated word once,
// and one word each in a system and a user message (completions: joined
// by a newline, as the runner joins them).
func calibrate(ctx context.Context, count tokenCounter, model, endpoint string) (*result.TokenCalibration, error) {
	one := workload.SyntheticWords[0]
	all := strings.Join(workload.SyntheticWords, " ")
	form := func(system, user string) *client.Request {
		r := &client.Request{Endpoint: endpoint, Model: model, MaxTokens: 1}
		if system != "" {
			r.Messages = []client.Message{{Role: "system", Content: system}}
		}
		r.Messages = append(r.Messages, client.Message{Role: "user", Content: user})
		if endpoint == EndpointCompletions {
			r.Prompt, r.Messages = joinContents(r.Messages), nil
		}
		return r
	}
	var c [3]int
	for i, r := range []*client.Request{form("", one), form("", all), form(one, one)} {
		n, err := count(ctx, r)
		if err != nil {
			return nil, err
		}
		c[i] = n
	}
	perWord := float64(c[1]-c[0]) / float64(len(workload.SyntheticWords)-1)
	if !(perWord > 0) {
		return nil, fmt.Errorf("counts %d for 1 word and %d for %d words: not a tokenizer's", c[0], c[1], len(workload.SyntheticWords))
	}
	perWord = math.Round(perWord*1000) / 1000
	return &result.TokenCalibration{Endpoint: endpoint, PerWord: perWord,
		Overhead:       max(0, int(math.Round(float64(c[0])-perWord))),
		SystemOverhead: max(0, int(math.Round(float64(c[2])-2*perWord))),
	}, nil
}

// tokenizeRequest is vLLM's TokenizeCompletionRequest ("prompt") or
// TokenizeChatRequest ("messages", add_generation_prompt as a chat
// request's prompt has it).
type tokenizeRequest struct {
	Model               string           `json:"model,omitempty"`
	Prompt              string           `json:"prompt,omitempty"`
	Messages            []client.Message `json:"messages,omitempty"`
	AddGenerationPrompt *bool            `json:"add_generation_prompt,omitempty"`
}

// tokenizeResponse is vLLM's and SGLang's TokenizeResponse: count, or the
// token ids.
type tokenizeResponse struct {
	Count  *int  `json:"count"`
	Tokens []int `json:"tokens"`
}

func tokenizeCounter(hc *http.Client, baseURL, apiKey string) tokenCounter {
	url := strings.TrimRight(baseURL, "/") + "/tokenize"
	return func(ctx context.Context, req *client.Request) (int, error) {
		body := tokenizeRequest{Model: req.Model, Prompt: req.Prompt, Messages: req.Messages}
		if req.Messages != nil {
			t := true
			body.AddGenerationPrompt = &t
		}
		b, _ := json.Marshal(body)
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
		if err != nil {
			return 0, err
		}
		hr.Header.Set("Content-Type", "application/json")
		if apiKey != "" {
			hr.Header.Set("Authorization", "Bearer "+apiKey)
		}
		resp, err := hc.Do(hr)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("POST /tokenize: HTTP %d", resp.StatusCode)
		}
		var tr tokenizeResponse
		if err := json.Unmarshal(raw, &tr); err != nil {
			return 0, fmt.Errorf("POST /tokenize: %w", err)
		}
		switch {
		case tr.Count != nil:
			return *tr.Count, nil
		case tr.Tokens != nil:
			return len(tr.Tokens), nil
		}
		return 0, errors.New("POST /tokenize: no count or tokens in the answer")
	}
}

// usageCounter sends req (one output token, not streamed) and reads
// usage.prompt_tokens.
func usageCounter(doer Doer) tokenCounter {
	return func(ctx context.Context, req *client.Request) (int, error) {
		tr := doer.Do(ctx, req)
		switch {
		case !tr.OK():
			return 0, fmt.Errorf("probe request: %s: %s", tr.Error, tr.ErrorText)
		case tr.PromptTokens <= 0:
			return 0, errors.New("probe request: the server sent no usage.prompt_tokens")
		}
		return tr.PromptTokens, nil
	}
}
