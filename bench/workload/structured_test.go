package workload

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/client"
)

// TestStructuredLoad: the flags become the request fields as sent, with the
// schemas compiled into the usable-output check.
func TestStructuredLoad(t *testing.T) {
	s, err := StructuredOptions{}.Load()
	if s != nil || err != nil {
		t.Fatalf("no flags: %v, %v", s, err)
	}
	s, err = StructuredOptions{ResponseFormat: "json"}.Load()
	if err != nil || string(s.ResponseFormat) != `{"type":"json_object"}` || s.Usable == nil || s.Usable.Schema != nil {
		t.Fatalf("json: %+v, %v", s, err)
	}
	s, err = StructuredOptions{ResponseFormat: "json-schema:" + fixtures + "forecast.schema.json"}.Load()
	if err != nil {
		t.Fatal(err)
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string         `json:"name"`
			Schema map[string]any `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(s.ResponseFormat, &rf); err != nil || rf.Type != "json_schema" ||
		rf.JSONSchema.Name != "forecast_schema" || rf.JSONSchema.Schema["type"] != "object" {
		t.Errorf("json-schema: %s (%v)", s.ResponseFormat, err)
	}
	// The compiled schema tells a valid value from one missing a field.
	if s.Usable.Schema.Validate(map[string]any{"city": "Oslo", "days": json.Number("3"), "summary": strings.Repeat("x", 40)}) != nil ||
		s.Usable.Schema.Validate(map[string]any{"city": "Oslo"}) == nil {
		t.Error("schema does not tell valid from invalid")
	}

	s, err = StructuredOptions{ToolsFile: fixtures + "tools.json", ToolChoice: "get_forecast"}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if string(s.ToolChoice) != `{"function":{"name":"get_forecast"},"type":"function"}` || len(s.Usable.ToolSchemas) != 2 {
		t.Errorf("tools: choice %s, %d schemas", s.ToolChoice, len(s.Usable.ToolSchemas))
	}
	var req client.Request
	s.Apply(&req)
	var w result.Workload
	s.Describe(&w)
	if len(req.Tools) == 0 || req.Usable != s.Usable || w.ToolsFile != fixtures+"tools.json" || w.ToolChoice != string(s.ToolChoice) {
		t.Errorf("apply/describe: %+v %+v", req, w)
	}
	if s, _ = (StructuredOptions{ToolsFile: fixtures + "tools.json"}).Load(); string(s.ToolChoice) != `"required"` {
		t.Errorf("default tool_choice %s, want \"required\"", s.ToolChoice)
	}
}

// TestStructuredBadInput: each mistake names the flag, the file and, for
// bad JSON, the line.
func TestStructuredBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	broken := write("broken.json", "{\n  \"type\": \"object\",\n  \"properties\": {,}\n}\n")
	notSchema := write("not-schema.json", `{"type": 12}`)
	tools := write("tools.json", `[{"type":"function","function":{"name":"f"}}]`)
	noName := write("noname.json", `[{"type":"function","function":{"description":"x"}}]`)
	tests := []struct {
		opts StructuredOptions
		want []string
	}{
		{StructuredOptions{ResponseFormat: "yaml"}, []string{`ResponseFormat "yaml"`, "json, json-schema:FILE"}},
		{StructuredOptions{ResponseFormat: "json-schema:" + broken}, []string{"ResponseFormat", "broken.json:3:", "bad JSON"}},
		{StructuredOptions{ResponseFormat: "json-schema:" + notSchema}, []string{"not-schema.json", "not a JSON schema"}},
		{StructuredOptions{ResponseFormat: "json-schema:" + filepath.Join(dir, "missing.json")}, []string{"missing.json"}},
		{StructuredOptions{ToolsFile: tools, ToolChoice: "g"}, []string{`ToolChoice "g"`, "(f)"}},
		{StructuredOptions{ToolsFile: noName}, []string{"ToolsFile", "noname.json", "tool 0: function.name"}},
		{StructuredOptions{ToolsFile: broken}, []string{"ToolsFile", "broken.json:3:"}},
		{StructuredOptions{ToolChoice: "auto"}, []string{"ToolChoice without ToolsFile"}},
	}
	for _, tt := range tests {
		_, err := tt.opts.Load()
		if err == nil {
			t.Errorf("%+v: no error", tt.opts)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %q lacks %q", tt.opts, err, w)
			}
		}
	}
	if _, err := (StructuredOptions{ResponseFormat: "json-schema:" + broken}).Load(); !errors.Is(err, result.ErrInput) {
		t.Errorf("bad file: %v is not an input error", err)
	}
}
