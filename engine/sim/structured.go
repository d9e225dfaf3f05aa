package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Structured output (response_format json_object / json_schema, and the
// arguments of a tool call the request forces): vLLM constrains sampling
// with a grammar (xgrammar by default) so that the text is a JSON value
// valid for the schema. The engine writes such a value outright, derived
// from the request's text key, and streams its tokens (the served model's
// tokenizer cuts it) at the usual pace: the answer is as long as the JSON
// plus the end-of-turn token. A schema no value satisfies (an empty enum,
// a minimum above the maximum, a required property that cannot be
// written) is refused with a 400 naming the part, as vLLM refuses a
// schema its grammar compiler rejects.
//
// Guided decoding costs each step time to fill the grammar's token bitmask
// on the CPU before sampling (vLLM V1: StructuredOutputManager.
// grammar_bitmask, once per structured request in the step). That cost is
// an assumption, not a fitted figure: guidedMaskCost per structured request
// and step, chosen inside the bound a public write-up gives for a
// precomputed-mask engine such as XGrammar, vLLM's default backend ("under
// fifty microseconds" per step, against 1-10 ms for a vocabulary scan:
// zolotukhin.ai/blog/2026-05-03-why-json-constrained-decode-no-longer-scans-
// a-151k-token-bitmask). No vLLM measurement of it was found to fit to.
// Requests without structured output pay nothing.

// guidedMaskCost is the assumed CPU time to fill one structured request's
// token bitmask in a step (see above).
const guidedMaskCost = 40 * time.Microsecond

// responseFormat is vLLM's ResponseFormat.
type responseFormat struct {
	Type       string `json:"type"` // text, json_object, json_schema
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	} `json:"json_schema"`
}

// checkResponseFormat applies pydantic's checks to response_format.
func (req *genRequest) checkResponseFormat() *reqError {
	rf := req.ResponseFormat
	if rf == nil {
		return nil
	}
	switch rf.Type {
	case "text", "json_object":
	case "json_schema":
		if rf.JSONSchema == nil {
			return invalidRequest("response_format", "response_format.json_schema: Field required")
		}
		if rf.JSONSchema.Name == "" {
			return invalidRequest("response_format", "response_format.json_schema.name: Field required")
		}
	case "structural_tag":
		return invalidRequest("response_format", "response_format: type structural_tag is not supported by the bundled engine")
	default:
		return invalidRequest("response_format", "response_format.type: Input should be 'text', 'json_object' or 'json_schema', got %q", rf.Type)
	}
	return nil
}

// schemaGen writes a JSON value valid for a JSON schema, its choices
// (enum member, array length, numbers, words) drawn from h.
type schemaGen struct {
	root  any // the whole schema, for $ref
	h     uint64
	depth int
	b     bytes.Buffer
}

// schemaError names the part of a schema no value satisfies.
type schemaError struct {
	path, msg string
}

func (e *schemaError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

// jsonForSchema returns a JSON text valid for schema (decoded JSON), or the
// schemaError that says why none can be written.
func jsonForSchema(schema any, key uint64) (string, error) {
	g := &schemaGen{root: schema, h: key}
	if err := g.value(schema, ""); err != nil {
		return "", err
	}
	return g.b.String(), nil
}

func (g *schemaGen) next() uint64 {
	g.h = splitmix64(g.h)
	return g.h
}

func join(path, part string) string {
	if path == "" {
		return part
	}
	return path + "." + part
}

// value writes a value for s at path.
func (g *schemaGen) value(s any, path string) error {
	switch v := s.(type) {
	case bool:
		if !v {
			return &schemaError{path, "the schema false admits no value"}
		}
		return g.str(map[string]any{}, path) // any value will do
	case map[string]any:
		return g.object(v, path)
	}
	return &schemaError{path, fmt.Sprintf("a schema must be an object or a boolean, got %T", s)}
}

// object writes a value for the schema object s.
func (g *schemaGen) object(s map[string]any, path string) error {
	if g.depth++; g.depth > 32 {
		return &schemaError{path, "recursion deeper than 32 levels: no finite value"}
	}
	defer func() { g.depth-- }()
	if ref, ok := s["$ref"].(string); ok {
		target, err := g.resolve(ref)
		if err != nil {
			return &schemaError{join(path, "$ref"), err.Error()}
		}
		return g.value(target, path)
	}
	if c, ok := s["const"]; ok {
		return g.literal(c)
	}
	if e, ok := s["enum"]; ok {
		list, _ := e.([]any)
		if len(list) == 0 {
			return &schemaError{join(path, "enum"), "an empty enum admits no value"}
		}
		return g.literal(list[g.next()%uint64(len(list))])
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok {
			return g.alternative(alts, join(path, k))
		}
	}
	if all, ok := s["allOf"].([]any); ok {
		if len(all) != 1 {
			return &schemaError{join(path, "allOf"), "allOf of several schemas is not supported by the bundled engine"}
		}
		return g.value(all[0], join(path, "allOf[0]"))
	}
	switch schemaType(s) {
	case "object":
		return g.properties(s, path)
	case "array":
		return g.array(s, path)
	case "integer":
		return g.number(s, path, true)
	case "number":
		return g.number(s, path, false)
	case "boolean":
		g.b.WriteString(strconv.FormatBool(g.next()&1 == 1))
	case "null":
		g.b.WriteString("null")
	default:
		return g.str(s, path)
	}
	return nil
}

// schemaType is s's type: the first non-null one of a list, or the one its
// keywords imply.
func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if x != "null" {
				return fmt.Sprint(x)
			}
		}
		return "null"
	}
	switch {
	case s["properties"] != nil:
		return "object"
	case s["items"] != nil || s["prefixItems"] != nil:
		return "array"
	}
	return "string"
}

// resolve looks a local $ref up ("#/$defs/X", "#/definitions/X", "#").
func (g *schemaGen) resolve(ref string) (any, error) {
	p, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, fmt.Errorf("%q: only references inside the schema are supported", ref)
	}
	cur := g.root
	for _, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if part == "" {
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%q does not resolve", ref)
		}
		if cur, ok = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]; !ok {
			return nil, fmt.Errorf("%q does not resolve", ref)
		}
	}
	return cur, nil
}

// alternative writes a value for the first of alts (from a drawn start)
// that admits one.
func (g *schemaGen) alternative(alts []any, path string) error {
	if len(alts) == 0 {
		return &schemaError{path, "no alternatives"}
	}
	start := int(g.next() % uint64(len(alts)))
	var first error
	for k := range alts {
		i := (start + k) % len(alts)
		mark, h := g.b.Len(), g.h
		err := g.value(alts[i], fmt.Sprintf("%s[%d]", path, i))
		if err == nil {
			return nil
		}
		g.b.Truncate(mark)
		g.h = h
		if first == nil {
			first = err
		}
	}
	return first
}

func (g *schemaGen) literal(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	g.b.Write(b)
	return nil
}

// properties writes an object with every property of s that admits a
// value (a required one that does not fails the schema), keys sorted.
func (g *schemaGen) properties(s map[string]any, path string) error {
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			name := fmt.Sprint(r)
			required[name] = true
			if _, ok := props[name]; !ok && s["additionalProperties"] == false {
				return &schemaError{join(path, "required"), fmt.Sprintf("%q is required but not among the properties, and additionalProperties is false", name)}
			}
		}
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	for k := range required {
		if _, ok := props[k]; !ok {
			keys = append(keys, k) // any value will do
		}
	}
	slices.Sort(keys)
	g.b.WriteByte('{')
	n := 0
	for _, k := range keys {
		mark, h := g.b.Len(), g.h
		if n > 0 {
			g.b.WriteString(", ")
		}
		kb, _ := json.Marshal(k)
		g.b.Write(kb)
		g.b.WriteString(": ")
		sub, ok := props[k]
		if !ok {
			sub = true
		}
		if err := g.value(sub, join(join(path, "properties"), k)); err != nil {
			if required[k] {
				return err
			}
			g.b.Truncate(mark) // optional: leave it out
			g.h = h
			continue
		}
		n++
	}
	if min, ok := intKeyword(s, "minProperties"); ok && n < min {
		return &schemaError{join(path, "minProperties"), fmt.Sprintf("%d properties at least, but only %d can be written", min, n)}
	}
	g.b.WriteByte('}')
	return nil
}

// intKeyword is s[k] as an int, when it is a number.
func intKeyword(s map[string]any, k string) (int, bool) {
	f, ok := s[k].(float64)
	return int(f), ok
}

func (g *schemaGen) array(s map[string]any, path string) error {
	lo, hasLo := intKeyword(s, "minItems")
	hi, hasHi := intKeyword(s, "maxItems")
	if !hasHi {
		hi = max(lo, 3)
	}
	if hasLo && lo > hi {
		return &schemaError{join(path, "minItems"), fmt.Sprintf("minItems %d is above maxItems %d: no array satisfies both", lo, hi)}
	}
	n := lo
	if !hasLo {
		n = min(1, hi)
	}
	prefix, _ := s["prefixItems"].([]any)
	items, hasItems := s["items"]
	if !hasItems {
		items = true
	}
	g.b.WriteByte('[')
	for i := range n {
		if i > 0 {
			g.b.WriteString(", ")
		}
		sub, p := items, join(path, "items")
		if i < len(prefix) {
			sub, p = prefix[i], fmt.Sprintf("%s[%d]", join(path, "prefixItems"), i)
		}
		if err := g.value(sub, p); err != nil {
			return err
		}
	}
	g.b.WriteByte(']')
	return nil
}

func (g *schemaGen) number(s map[string]any, path string, integer bool) error {
	lo, hi := math.Inf(-1), math.Inf(1)
	if v, ok := s["minimum"].(float64); ok {
		lo = v
	}
	if v, ok := s["maximum"].(float64); ok {
		hi = v
	}
	step := 1.0
	if !integer {
		step = 0.5
	}
	if v, ok := s["exclusiveMinimum"].(float64); ok {
		lo = math.Max(lo, v+step)
	}
	if v, ok := s["exclusiveMaximum"].(float64); ok {
		hi = math.Min(hi, v-step)
	}
	if integer {
		lo, hi = math.Ceil(lo), math.Floor(hi)
	}
	mult, _ := s["multipleOf"].(float64)
	if mult > 0 {
		lo, hi = math.Ceil(lo/mult)*mult, math.Floor(hi/mult)*mult
	}
	if lo > hi {
		return &schemaError{join(path, "minimum"), fmt.Sprintf("no %s lies between the minimum and the maximum", schemaType(s))}
	}
	// A small value inside the range.
	base := math.Max(lo, math.Min(hi, 0))
	span := math.Min(hi-base, 100)
	x := base + math.Floor(unit(g.next())*(span+1))
	if !integer && x+0.5 <= hi && mult == 0 {
		x += 0.5
	}
	if mult > 0 {
		x = math.Floor(x/mult) * mult
		if x < lo {
			x = lo
		}
	}
	g.b.WriteString(strconv.FormatFloat(x, 'f', -1, 64))
	return nil
}

// str writes a string of vocabulary words within minLength and maxLength.
func (g *schemaGen) str(s map[string]any, path string) error {
	if _, ok := s["pattern"]; ok {
		return &schemaError{join(path, "pattern"), "pattern is not supported by the bundled engine"}
	}
	lo, _ := intKeyword(s, "minLength")
	hi, hasHi := intKeyword(s, "maxLength")
	if hasHi && lo > hi {
		return &schemaError{join(path, "minLength"), fmt.Sprintf("minLength %d is above maxLength %d: no string satisfies both", lo, hi)}
	}
	if s["format"] == "uuid" {
		g.b.WriteString(`"` + uuidText(g.next(), g.next()) + `"`)
		return nil
	}
	if f, ok := formatExamples[fmt.Sprint(s["format"])]; ok {
		g.b.WriteString(f)
		return nil
	}
	var w strings.Builder
	for w.Len() < max(lo, 1) || (w.Len() < 8 && g.next()%3 != 0) {
		word := strings.TrimSpace(vocab[g.next()%uint64(len(vocab))])
		if w.Len() > 0 {
			word = " " + word
		}
		if hasHi && w.Len()+len(word) > hi {
			break
		}
		w.WriteString(word)
	}
	for w.Len() < lo { // a maxLength too short for a whole word
		w.WriteByte('x')
	}
	g.b.WriteByte('"')
	g.b.WriteString(w.String()) // vocabulary words need no escaping
	g.b.WriteByte('"')
	return nil
}

// formatExamples are values (JSON) for the string formats models are asked
// for most; other formats get words.
var formatExamples = map[string]string{
	"date-time": `"2025-01-01T00:00:00Z"`,
	"date":      `"2025-01-01"`,
	"time":      `"12:00:00Z"`,
	"email":     `"user@example.com"`,
	"uri":       `"https://example.com/"`,
}

// uuidText renders two hashes as a UUID.
func uuidText(a, b uint64) string {
	h := hex32(a, b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// jsonObjectText is a json_object answer of about n tokens: an object
// with one string of words.
func jsonObjectText(key uint64, n int) string {
	var b strings.Builder
	b.WriteString(`{"answer": "`)
	for i := range max(n-6, 1) {
		w := tokenText(key, i)
		if i == 0 {
			w = strings.TrimSpace(w)
		}
		b.WriteString(w)
	}
	b.WriteString(`"}`)
	return b.String()
}
