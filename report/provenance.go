package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/servebench/servebench/bench/result"
)

// writeProvenance adds the header lines that say where results came from:
// the --label pairs and the build (commit, branch, CI run).
func writeProvenance(b *strings.Builder, m result.Manifest) {
	if len(m.Labels) > 0 {
		keys := make([]string, 0, len(m.Labels))
		for k := range m.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = "`" + k + "=" + m.Labels[k] + "`"
		}
		fmt.Fprintf(b, "- **Labels:** %s\n", strings.Join(parts, ", "))
	}
	if bd := m.Build; bd != nil {
		fmt.Fprintf(b, "- **Build:** %s\n", BuildText(bd))
	}
}

// BuildText describes a build in one Markdown line: commit, branch and CI
// run, each where known, and where they were read.
func BuildText(bd *result.Build) string {
	var parts []string
	if bd.Commit != "" {
		parts = append(parts, "commit `"+bd.Commit+"`")
	}
	if bd.Branch != "" {
		parts = append(parts, "branch `"+bd.Branch+"`")
	}
	switch {
	case bd.CIRunID != "" && bd.CIURL != "":
		parts = append(parts, "CI run ["+bd.CIRunID+"]("+bd.CIURL+")")
	case bd.CIURL != "":
		parts = append(parts, "CI run <"+bd.CIURL+">")
	case bd.CIRunID != "":
		parts = append(parts, "CI run "+bd.CIRunID)
	}
	if len(parts) == 0 {
		parts = append(parts, "unknown")
	}
	return strings.Join(parts, ", ") + " (from " + orDash(bd.Source) + ")"
}
