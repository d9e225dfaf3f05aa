package promql

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Matcher is one label matcher of a PromQL selector: Name Op "Value".
type Matcher struct {
	Name, Op, Value string
}

// String renders m in PromQL, the value quoted.
func (m Matcher) String() string { return m.Name + m.Op + strconv.Quote(m.Value) }

// Selector is the label matchers added to every query
// (--prometheus-selector '{namespace="llm",job="vllm"}').
type Selector []Matcher

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// ParseSelector reads '{a="x",b=~"y.*"}' (the braces may be left out; ""
// is no matcher). Values are double-quoted or backquoted strings with Go's
// escapes, as PromQL writes them. The metric name (__name__) is not
// allowed: servebench chooses the metrics.
func ParseSelector(s string) (Selector, error) {
	in := strings.TrimSpace(s)
	if strings.HasPrefix(in, "{") {
		if !strings.HasSuffix(in, "}") {
			return nil, fmt.Errorf("selector %q: expected a closing }", s)
		}
		in = strings.TrimSpace(in[1 : len(in)-1])
	}
	var sel Selector
	for in != "" {
		m, rest, err := parseMatcher(in)
		if err != nil {
			return nil, fmt.Errorf("selector %q: %w", s, err)
		}
		sel = append(sel, m)
		in = strings.TrimSpace(rest)
		if in == "" {
			break
		}
		if in[0] != ',' {
			return nil, fmt.Errorf("selector %q: expected , between matchers at %q", s, in)
		}
		in = strings.TrimSpace(in[1:])
	}
	return sel, nil
}

// parseMatcher reads one matcher from the front of in.
func parseMatcher(in string) (Matcher, string, error) {
	i := strings.IndexAny(in, "=!")
	if i < 0 {
		return Matcher{}, "", fmt.Errorf("expected label=\"value\" at %q", in)
	}
	m := Matcher{Name: strings.TrimSpace(in[:i])}
	if !labelName.MatchString(m.Name) {
		return Matcher{}, "", fmt.Errorf("label name %q: expected letters, digits and _", m.Name)
	}
	if m.Name == "__name__" {
		return Matcher{}, "", fmt.Errorf("__name__: servebench picks the metric names; select targets by their labels")
	}
	rest := in[i:]
	for _, op := range []string{"=~", "!~", "!=", "="} {
		if strings.HasPrefix(rest, op) {
			m.Op, rest = op, strings.TrimSpace(rest[len(op):])
			break
		}
	}
	if m.Op == "" {
		return Matcher{}, "", fmt.Errorf("label %s: expected =, !=, =~ or !~", m.Name)
	}
	end := quoted(rest)
	if end < 0 {
		return Matcher{}, "", fmt.Errorf("label %s: expected a double-quoted value at %q", m.Name, rest)
	}
	v, err := strconv.Unquote(rest[:end])
	if err != nil {
		return Matcher{}, "", fmt.Errorf("label %s: value %s: %w", m.Name, rest[:end], err)
	}
	m.Value = v
	if m.Op == "=~" || m.Op == "!~" {
		if _, err := regexp.Compile("^(?:" + v + ")$"); err != nil {
			return Matcher{}, "", fmt.Errorf("label %s: regex %q: %w", m.Name, v, err)
		}
	}
	return m, rest[end:], nil
}

// quoted returns the length of the "..." or `...` string at the front of
// s, or -1.
func quoted(s string) int {
	if s == "" || (s[0] != '"' && s[0] != '`') {
		return -1
	}
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q == '"':
			i++
		case s[i] == q:
			return i + 1
		}
	}
	return -1
}

// With renders name{sel, extra...} for a query.
func (s Selector) With(name string, extra ...Matcher) string {
	parts := make([]string, 0, len(s)+len(extra))
	for _, m := range s {
		parts = append(parts, m.String())
	}
	for _, m := range extra {
		parts = append(parts, m.String())
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// String renders the selector as {a="x",...}.
func (s Selector) String() string { return s.With("") }
