package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docCommand is one `servebench ...` command line found in a fenced block
// of the README or a guide.
type docCommand struct {
	file string
	line int // of the command's first line
	args []string
}

// shellFences are the fence languages whose lines are commands; a bare
// fence holds output (a printed table), not commands.
var shellFences = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true, "yaml": true}

// docCommands extracts the servebench command lines of a Markdown file:
// continuation lines (a trailing backslash) joined, words split as a shell
// splits them, stopping at a pipe, a redirection, `;`, `&&`, `||` or a
// comment.
func docCommands(t *testing.T, path string) []docCommand {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []docCommand
	inShell, inFence := false, false
	var pending strings.Builder
	start := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inFence = !inFence
			inShell = inFence && shellFences[strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))]
			continue
		}
		if !inShell {
			continue
		}
		if pending.Len() == 0 {
			trimmed = strings.TrimPrefix(trimmed, "$ ")
			if !strings.HasPrefix(trimmed, "servebench ") {
				continue
			}
			start = n
		}
		cont := strings.HasSuffix(trimmed, `\`)
		pending.WriteString(strings.TrimSuffix(trimmed, `\`))
		pending.WriteByte(' ')
		if cont {
			continue
		}
		args, err := shellWords(pending.String())
		if err != nil {
			t.Errorf("%s:%d: %v", path, start, err)
		}
		cmds = append(cmds, docCommand{file: path, line: start, args: args})
		pending.Reset()
	}
	return cmds
}

// shellWords splits s as sh would split a simple command: single and double
// quotes, backslash escapes; it stops at an unquoted |, <, >, ;, & or a # that
// starts a word.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, w.String())
		}
		w.Reset()
		inWord = false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", s)
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				w.WriteByte(s[i])
			}
			if i == len(s) {
				return nil, fmt.Errorf("unterminated \" in %q", s)
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			inWord = true
		case strings.IndexByte("|<>;&", c) >= 0, c == '#' && !inWord:
			flush()
			return words, nil
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, nil
}

// validateCommand runs args (without the leading "servebench") through the
// real CLI with the hidden --validate flag: flags parsed, options checked,
// nothing started. It returns the exit code and stderr.
func validateCommand(args []string) (int, string) {
	var stdout, stderr bytes.Buffer
	code := Main(append([]string{"--" + validateFlag + "=true"}, args...), &stdout, &stderr)
	return code, stderr.String()
}

// TestDocCommands checks that every servebench command line in README.md and
// docs/*.md parses and passes the command's own option checks.
func TestDocCommands(t *testing.T) {
	files := []string{filepath.Join("..", "..", "README.md")}
	guides, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, guides...)
	total := 0
	for _, f := range files {
		cmds := docCommands(t, f)
		total += len(cmds)
		for _, c := range cmds {
			if code, stderr := validateCommand(c.args[1:]); code != 0 {
				t.Errorf("%s:%d: servebench %s: exit %d: %s", c.file, c.line, strings.Join(c.args[1:], " "), code, strings.TrimSpace(stderr))
			}
		}
	}
	t.Logf("%d servebench command lines in %d files parsed and checked", total, len(files))
	// The README alone holds more than a dozen; far fewer means the
	// extraction broke, and the test would pass by checking nothing.
	if total < 30 {
		t.Errorf("found only %d servebench command lines in %d files: expected at least 30", total, len(files))
	}
}

// TestValidateRefuses: the --validate path still fails what the CLI fails,
// so TestDocCommands can fail.
func TestValidateRefuses(t *testing.T) {
	for _, tc := range []struct {
		line string
		want string // in stderr
	}{
		{"servebench run --no-such-flag", "unknown flag"},                                   // a flag that does not exist
		{"servebench frobnicate", "unknown command"},                                        // a command that does not exist
		{"servebench run --rate 4 --concurrency 8", "--rate and --concurrency"},             // run's own option check
		{"servebench sweep --stream both", "--stream"},                                      // sweep has no both
		{"servebench sweep --find-max-rate 90%", "needs --slo"},                             // the search's check
		{"servebench run --slo ttft=fast", "--slo"},                                         // the SLO parser
		{"servebench table --requests 0", "--requests 0"},                                   // table's check
		{"servebench compare onlyone", "arg"},                                               // compare's argument count
		{"servebench k8s job --shards 2 --image x -- --rate 4 --stream on", "--base-url"},   // k8s checks the pods' run flags
		{"servebench run --input-tokens lognormal:oops --requests 5", "--input-tokens"},     // the distribution grammar
		{"servebench engine --gpu h100 --port 8000", `unknown GPU profile "h100"`},          // the engine's options, by sim.New
		{"servebench run --server vlm", `--server "vlm": expected one of`},                  // the server flags, by bench.CheckServer
		{"servebench sweep --server pd --decode 0 --rate 1,2", "--prefill 1 --decode 0"},    // a P/D pool of 0, by bench.CheckServer
		{"servebench run --server-cmd x --base-url localhost:8000", "--base-url: base URL"}, // named by its flag, by bench's commandSpec
	} {
		args, err := shellWords(tc.line)
		if err != nil {
			t.Fatal(err)
		}
		code, stderr := validateCommand(args[1:])
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q: expected exit %d naming %q", tc.line, code, stderr, exitUsage, tc.want)
		}
	}
}

func TestShellWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`servebench run --rate 4`, []string{"servebench", "run", "--rate", "4"}},
		{`servebench run --prometheus-selector '{namespace="llm"}' --x`, []string{"servebench", "run", "--prometheus-selector", `{namespace="llm"}`, "--x"}},
		{`servebench run --server-cmd "vllm serve M --port 8000" | kubectl apply -f -`, []string{"servebench", "run", "--server-cmd", "vllm serve M --port 8000"}},
		{`servebench compare a b >> "$GITHUB_STEP_SUMMARY" || true`, []string{"servebench", "compare", "a", "b"}},
		{`servebench report dir   # a comment`, []string{"servebench", "report", "dir"}},
		{`servebench run --fault=a#b`, []string{"servebench", "run", "--fault=a#b"}},
	} {
		got, err := shellWords(tc.in)
		if err != nil || strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") {
			t.Errorf("shellWords(%q) = %q, %v: expected %q", tc.in, got, err, tc.want)
		}
	}
}

// TestGuideMap: every guide in docs/ is linked from the README's guide map,
// and every guide the map links exists.
func TestGuideMap(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(readme), "\n## Guides\n")
	if i < 0 {
		t.Fatal("README.md has no '## Guides' section")
	}
	guideMap := string(readme[i:])
	if j := strings.Index(guideMap[1:], "\n## "); j >= 0 {
		guideMap = guideMap[:j+1]
	}
	guides, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(guides) == 0 {
		t.Fatalf("no guides in docs/: %v", err)
	}
	for _, g := range guides {
		if link := "(docs/" + filepath.Base(g) + ")"; !strings.Contains(guideMap, link) {
			t.Errorf("README.md's guide map does not link docs/%s: add a row `| [docs/%[1]s](docs/%[1]s) | what it is for |`", filepath.Base(g))
		}
	}
	for _, m := range regexp.MustCompile(`\(docs/([^)]+\.md)\)`).FindAllStringSubmatch(guideMap, -1) {
		if _, err := os.Stat(filepath.Join("..", "..", "docs", m[1])); err != nil {
			t.Errorf("README.md's guide map links docs/%s: %v", m[1], err)
		}
	}
}

// machinePaths are absolute paths of the machine the project was developed
// on (its workspace, its GOPATH): a file of the repository names another
// file relative to the repository, and the seed lesson by its title. The
// strings are split so that this file does not match itself.
var machinePaths = regexp.MustCompile(`/` + `work/|/root/` + `go/|/root/` + `\.cache/go`)

// TestNoMachinePaths: no file of the repository (code, docs, fixtures'
// SOURCES.md, figure sources that FIDELITY lines print) carries an absolute
// path of the development machine.
func TestNoMachinePaths(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" { // a folder, or a worktree's pointer file
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() && d.Name() == "servebench-results" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(b, 0) >= 0 { // binary: a fixture or a built tool
			return nil
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := machinePaths.FindString(line); m != "" {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: absolute machine path %q: name the file relative to the repository", rel, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
