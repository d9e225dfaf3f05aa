package sim_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The engine's answers held to OpenAI's published OpenAPI spec
// (testdata/openai/openapi-schemas.json: the response schemas of
// github.com/openai/openai-openapi's openapi.json at commit
// f85dbe223d40e1a31cba812ab2d755c7e98a92a3, spec version 2.3.0, with the
// schemas they reference; see testdata/openai/README.md).
//
// Two readings of the spec and the places where vLLM itself departs from
// it are applied before validating, so that everything else is held to
// the spec:
//
//   - OpenAPI's "nullable": true (which JSON Schema ignores) admits null,
//     as OpenAI's SDK generator reads it.
//   - A streamed completions chunk is CreateCompletionResponse (the spec
//     says both share the shape) whose finish_reason may be null before the
//     last chunk, as OpenAI's own streams send it.
//   - vLLM's non-streaming chat message carries null annotations, audio and
//     function_call, and usage a null prompt_tokens_details (pydantic dumps
//     unset optional fields as null), where the spec has optional objects;
//     vLLM's error code is the HTTP status as an integer where the spec has
//     a string; its chat logprobs object has no "refusal" list, which the
//     spec requires. vllmNulls lists the null fields stripped.

// spec kinds: the schema a payload is held to.
const (
	specChat        = "CreateChatCompletionResponse"
	specChatChunk   = "CreateChatCompletionStreamResponse"
	specCompletion  = "CreateCompletionResponse"
	specCompletionC = "CompletionStreamChunk" // derived, see above
	specError       = "ErrorResponse"
)

// vllmNulls are the fields vLLM sends as null where OpenAI's spec has an
// optional non-null value, by the object that holds them.
var vllmNulls = map[string][]string{
	"message": {"annotations", "audio", "function_call"},
	"usage":   {"prompt_tokens_details"},
}

var specSchemas = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	f, err := os.Open("../../testdata/openai/openapi-schemas.json")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, err
	}
	nullable(doc)
	schemas := doc.(map[string]any)["components"].(map[string]any)["schemas"].(map[string]any)
	chunk := deepCopy(schemas[specCompletion]).(map[string]any)
	fr := chunk["properties"].(map[string]any)["choices"].(map[string]any)["items"].(map[string]any)["properties"].(map[string]any)
	fr["finish_reason"] = map[string]any{"anyOf": []any{fr["finish_reason"], map[string]any{"type": "null"}}}
	schemas[specCompletionC] = chunk
	c := jsonschema.NewCompiler()
	if err := c.AddResource("openapi.json", doc); err != nil {
		return nil, err
	}
	out := map[string]*jsonschema.Schema{}
	for _, k := range []string{specChat, specChatChunk, specCompletion, specCompletionC, specError} {
		if out[k], err = c.Compile("openapi.json#/components/schemas/" + k); err != nil {
			return nil, err
		}
	}
	return out, nil
})

// nullable rewrites each schema object with "nullable": true as
// anyOf [itself, null].
func nullable(v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, sub := range x {
			nullable(sub)
		}
		if x["nullable"] == true {
			inner := map[string]any{}
			for k, sub := range x {
				if k != "nullable" && k != "description" {
					inner[k] = sub
				}
				delete(x, k)
			}
			x["anyOf"] = []any{inner, map[string]any{"type": "null"}}
		}
	case []any:
		for _, sub := range x {
			nullable(sub)
		}
	}
}

func deepCopy(v any) any {
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}

// stripVLLMNulls removes vllmNulls from a payload (with nulls), gives a
// chat logprobs object the "refusal": null vLLM leaves out, and makes an
// error's integer code a string.
func stripVLLMNulls(v any, nulls bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, sub := range x {
			for _, f := range vllmNulls[k] {
				if !nulls {
					break
				}
				if m, ok := sub.(map[string]any); ok {
					if val, present := m[f]; present && val == nil {
						delete(m, f)
					}
				}
			}
			stripVLLMNulls(sub, nulls)
		}
		if lp, ok := x["logprobs"].(map[string]any); ok && lp["content"] != nil {
			if _, ok := lp["refusal"]; !ok {
				lp["refusal"] = nil // vLLM's ChatCompletionLogProbs has content only
			}
		}
		if e, ok := x["error"].(map[string]any); ok {
			if c, ok := e["code"].(json.Number); ok {
				e["code"] = c.String()
			}
		}
	case []any:
		for _, sub := range x {
			stripVLLMNulls(sub, nulls)
		}
	}
}

// specErr is why raw breaks OpenAI's schema kind (nil: it keeps it). The
// vLLM nulls are allowed in whole answers only: streams drop null fields.
func specErr(raw, kind string) error {
	schemas, err := specSchemas()
	if err != nil {
		return fmt.Errorf("loading OpenAI's spec: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(raw))
	if err != nil {
		return err
	}
	stripVLLMNulls(v, kind != specChatChunk && kind != specCompletionC)
	return schemas[kind].Validate(v)
}

// conform fails t unless raw is valid for OpenAI's schema kind.
func conform(t testing.TB, what, raw, kind string) {
	t.Helper()
	if err := specErr(raw, kind); err != nil {
		t.Errorf("%s breaks OpenAI's %s: %v\n%s", what, kind, err, raw)
	}
}

// TestSpecCatchesBreaks: the spec check fails payloads that break OpenAI's
// schema (so that its passing elsewhere means something), and passes one
// that keeps it.
func TestSpecCatchesBreaks(t *testing.T) {
	good := `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}]}`
	conform(t, "good chunk", good, specChatChunk)
	for _, bad := range []string{
		strings.Replace(good, `"finish_reason":null`, `"finish_reason":"done"`, 1), // not in the enum
		strings.Replace(good, `"created":1`, `"created":"1"`, 1),                   // a string
		strings.Replace(good, `"choices":[{"index":0,`, `"choices":[{`, 1),         // index missing
		// The usage chunk the engine sent before: OpenAI's schema has no null there.
		`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"total_tokens":2,"completion_tokens":1,"prompt_tokens_details":null}}`,
	} {
		if specErr(bad, specChatChunk) == nil {
			t.Errorf("the spec check passed %s", bad)
		}
	}
}
