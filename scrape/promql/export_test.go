package promql

import "regexp"

// Matches reports whether a label value v passes m, as Prometheus would:
// the tests' fake server filters its series with it. An absent label has
// the value "", as in PromQL. Regexes are anchored, as in PromQL.
func (m Matcher) Matches(v string) bool {
	switch m.Op {
	case "=":
		return v == m.Value
	case "!=":
		return v != m.Value
	}
	re := regexp.MustCompile("^(?:" + m.Value + ")$") // checked by ParseSelector
	return re.MatchString(v) == (m.Op == "=~")
}
