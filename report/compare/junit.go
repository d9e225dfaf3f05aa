package compare

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
)

// JUnit XML, the subset CI systems (GitHub Actions reporters, GitLab,
// Jenkins) read: one <testsuite> per run, one <testcase> per checked
// figure, <failure> on a regression, <skipped> when it could not be judged.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name       string          `xml:"name,attr"`
	Classname  string          `xml:"classname,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Failure    *junitMessage   `xml:"failure"`
	Skipped    *junitMessage   `xml:"skipped"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML.
func WriteJUnit(w io.Writer, r *Report) error {
	out := junitSuites{Name: "servebench compare"}
	for _, run := range r.Runs {
		s := junitSuite{Name: run.Name, Properties: []junitProperty{
			{"base", r.Base.Path}, {"new", r.New.Path},
			{"workload", describeWorkload(run.Workload, runStream(run))},
			{"alpha", strconv.FormatFloat(r.Alpha, 'g', -1, 64)},
		}}
		for _, d := range r.ServerDiffs {
			s.Properties = append(s.Properties, junitProperty{"differs." + d.Field, d.Base + " -> " + d.New})
		}
		for _, row := range run.Rows {
			s.Cases = append(s.Cases, junitCaseOf(run.Name, row))
			c := &s.Cases[len(s.Cases)-1]
			s.Tests++
			if c.Failure != nil {
				s.Failures++
			}
			if c.Skipped != nil {
				s.Skipped++
			}
		}
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Skipped += s.Skipped
		out.Suites = append(out.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func junitCaseOf(run string, row Row) junitCase {
	c := junitCase{Name: row.Key(), Classname: "servebench.compare." + run, Properties: []junitProperty{
		{"base", fmtValue(row.Base, row.Unit)},
		{"new", fmtValue(row.New, row.Unit)},
		{"change", fmtChange(row.Change)},
		{"p", fmtP(row.P)},
		{"limit", orDash(row.Threshold)},
		{"verdict", row.Verdict},
	}}
	if row.Note != "" {
		c.Properties = append(c.Properties, junitProperty{"note", row.Note})
	}
	if row.Confirmed != "" {
		c.Properties = append(c.Properties, junitProperty{"confirmed_by", row.Confirmed})
	}
	summary := fmt.Sprintf("%s %s: %s -> %s (%s, %s, limit %s)", run, row.Key(), fmtValue(row.Base, row.Unit),
		fmtValue(row.New, row.Unit), fmtChange(row.Change), row.evidence(), orDash(row.Threshold))
	switch {
	case row.Regression:
		c.Failure = &junitMessage{Message: "regression: " + summary, Type: "regression", Text: summary}
	case row.Verdict == VerdictNotJudged:
		c.Skipped = &junitMessage{Message: "not judged: " + row.Note}
	}
	return c
}
