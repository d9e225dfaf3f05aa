package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine/option"
)

// ResponseFormats are --response-format's forms (json-schema takes a file).
var ResponseFormats = []string{"json", "json-schema:FILE"}

// ToolChoices are --tool-choice's words; any other value names a function.
var ToolChoices = []string{"required", "auto", "none"}

// StructuredOptions are the flags of a structured workload, whose reader
// is a program: --response-format, --tools and --tool-choice.
type StructuredOptions struct {
	ResponseFormat string // "", "json" or "json-schema:FILE"
	ToolsFile      string // an OpenAI tools array (JSON)
	ToolChoice     string // required (default), auto, none or a function's name
}

// Structured is what a structured workload sends with every request and
// how each answer's time to usable output is judged (client.Usable).
type Structured struct {
	ResponseFormat, Tools, ToolChoice json.RawMessage
	Usable                            *client.Usable
	opts                              StructuredOptions
}

// Load reads the files o names and compiles their schemas; nil, nil when
// o asks for nothing. Errors name the field (option.FieldError), the file
// and its line.
func (o StructuredOptions) Load() (*Structured, error) {
	if o.ResponseFormat == "" && o.ToolsFile == "" {
		if o.ToolChoice != "" {
			return nil, option.Errorf("ToolChoice", nil, "{ToolChoice} without {ToolsFile}: expected a tools file")
		}
		return nil, nil
	}
	s := &Structured{Usable: &client.Usable{}, opts: o}
	if err := s.responseFormat(o.ResponseFormat); err != nil {
		return nil, option.Wrap("ResponseFormat", o.ResponseFormat, err)
	}
	if o.ToolsFile != "" {
		if err := s.tools(o.ToolsFile, o.ToolChoice); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// responseFormat sets response_format and its schema from spec.
func (s *Structured) responseFormat(spec string) error {
	switch {
	case spec == "":
		return nil
	case spec == "json":
		s.ResponseFormat = json.RawMessage(`{"type":"json_object"}`)
		return nil
	case strings.HasPrefix(spec, "json-schema:"):
		file := strings.TrimPrefix(spec, "json-schema:")
		raw, schema, err := readSchema(file)
		if err != nil {
			return err
		}
		s.Usable.Schema = schema
		s.ResponseFormat, _ = json.Marshal(map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": schemaName(file), "schema": raw, "strict": true}})
		return nil
	}
	return fmt.Errorf("expected one of %s", strings.Join(ResponseFormats, ", "))
}

var notNameByte = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// schemaName is json_schema.name for file: its base name without the
// extension, in the characters OpenAI allows (at most 64).
func schemaName(file string) string {
	n := notNameByte.ReplaceAllString(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)), "_")
	if n == "" {
		n = "schema"
	}
	return n[:min(len(n), 64)]
}

// readSchema reads and compiles the JSON schema in file.
func readSchema(file string) (json.RawMessage, *jsonschema.Schema, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	if err := syntaxLine(file, data); err != nil {
		return nil, nil, err
	}
	schema, err := compileSchema(file, data)
	if err != nil {
		return nil, nil, err
	}
	return json.RawMessage(bytes.TrimSpace(data)), schema, nil
}

// syntaxLine says where data is not JSON.
func syntaxLine(file string, data []byte) error {
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil {
		return nil
	}
	line := 0
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line = lineAt(data, se.Offset)
	}
	return &result.InputError{Path: file, Line: line, Err: fmt.Errorf("bad JSON: %w", err)}
}

// compileSchema compiles a JSON schema (data, checked JSON) as the
// resource named file; only references inside it resolve (no network).
func compileSchema(file string, data []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, &result.InputError{Path: file, Err: err}
	}
	return compileValue(file, doc)
}

func compileValue(name string, doc any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	url := "mem://servebench/" + schemaName(name) + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, &result.InputError{Path: name, Err: err}
	}
	schema, err := c.Compile(url)
	if err != nil {
		return nil, &result.InputError{Path: name, Err: fmt.Errorf("not a JSON schema: %w", err)}
	}
	return schema, nil
}

// toolEntry is one element of an OpenAI tools array, as far as it matters.
type toolEntry struct {
	Type     string `json:"type"`
	Function *struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// tools reads the tools array in file and resolves choice.
func (s *Structured) tools(file, choice string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return option.Wrap("ToolsFile", nil, err)
	}
	if err := syntaxLine(file, data); err != nil {
		return option.Wrap("ToolsFile", nil, err)
	}
	var entries []toolEntry
	if err := json.Unmarshal(data, &entries); err != nil || len(entries) == 0 {
		return option.Wrap("ToolsFile", nil, &result.InputError{Path: file,
			Err: errors.New(`expected a non-empty JSON array of {"type": "function", "function": {"name", "parameters"}}`)})
	}
	s.Usable.ToolSchemas = map[string]client.Validator{}
	for i, e := range entries {
		if e.Function == nil || e.Function.Name == "" {
			return option.Wrap("ToolsFile", nil, &result.InputError{Path: file, Err: fmt.Errorf("tool %d: function.name: missing", i)})
		}
		if len(e.Function.Parameters) == 0 || string(e.Function.Parameters) == "null" {
			continue
		}
		v, err := compileParams(file, i, e.Function.Parameters)
		if err != nil {
			return option.Wrap("ToolsFile", nil, err)
		}
		s.Usable.ToolSchemas[e.Function.Name] = v
	}
	s.Tools = json.RawMessage(bytes.TrimSpace(data))
	s.ToolChoice, err = toolChoice(choice, entries)
	return err
}

// compileParams compiles tool i's parameters schema.
func compileParams(file string, i int, params json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return nil, &result.InputError{Path: file, Err: fmt.Errorf("tool %d: function.parameters: %w", i, err)}
	}
	v, err := compileValue(fmt.Sprintf("%s tool %d parameters", file, i), doc)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// toolChoice is tool_choice for choice: a word as is, else a function of
// the tools by name. The default is "required", so every answer is a call
// whatever the server's automatic tool choice is set to.
func toolChoice(choice string, entries []toolEntry) (json.RawMessage, error) {
	if choice == "" {
		choice = ToolChoices[0]
	}
	for _, w := range ToolChoices {
		if choice == w {
			b, _ := json.Marshal(w)
			return b, nil
		}
	}
	for _, e := range entries {
		if e.Function.Name == choice {
			return json.Marshal(map[string]any{"type": "function", "function": map[string]any{"name": choice}})
		}
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Function.Name
	}
	return nil, option.Errorf("ToolChoice", choice, "expected %s or a function of {ToolsFile} (%s)",
		strings.Join(ToolChoices, ", "), strings.Join(names, ", "))
}

// Describe records the structured workload in w.
func (s *Structured) Describe(w *result.Workload) {
	if s == nil {
		return
	}
	w.ResponseFormat = s.opts.ResponseFormat
	w.ToolsFile = s.opts.ToolsFile
	if len(s.ToolChoice) > 0 {
		w.ToolChoice = string(s.ToolChoice)
	}
}

// Apply sets s's fields on req.
func (s *Structured) Apply(req *client.Request) {
	if s == nil {
		return
	}
	req.ResponseFormat, req.Tools, req.ToolChoice, req.Usable = s.ResponseFormat, s.Tools, s.ToolChoice, s.Usable
}
