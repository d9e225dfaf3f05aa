package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/servebench/servebench/engine/option"
)

// libraryFields lists every option field the libraries (bench, engine,
// report) name in an option.FieldError, by reading their source: the field
// of each option.Errorf, option.Wrap, result.OptionErrorf and FieldError
// literal, and the {Field}s of an Errorf's reason. A field given by a variable (a list of
// sources, each named where it is listed) is left to the command tests.
func libraryFields(t *testing.T) map[string][]string {
	t.Helper()
	ref := regexp.MustCompile(`\{([A-Z][A-Za-z0-9.]*)\}`)
	fields := map[string][]string{} // field -> where named
	fset := token.NewFileSet()
	for _, root := range []string{"../../bench", "../../engine", "../../report"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			lit := func(e ast.Expr) (string, bool) {
				b, ok := e.(*ast.BasicLit)
				if !ok || b.Kind != token.STRING {
					return "", false
				}
				s, err := strconv.Unquote(b.Value)
				return s, err == nil
			}
			add := func(e ast.Expr, at token.Pos) {
				s, ok := lit(e)
				if !ok {
					return
				}
				fields[s] = append(fields[s], fset.Position(at).String())
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					sel, ok := n.Fun.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					pkg, ok := sel.X.(*ast.Ident)
					if !ok {
						return true
					}
					// option.Errorf and Wrap, and result.OptionErrorf (report's way to option.Errorf).
					errorf := pkg.Name == "option" && sel.Sel.Name == "Errorf" || pkg.Name == "result" && sel.Sel.Name == "OptionErrorf"
					if !errorf && (pkg.Name != "option" || sel.Sel.Name != "Wrap") {
						return true
					}
					add(n.Args[0], n.Pos())
					if errorf && len(n.Args) > 2 {
						// Every literal of the format, also one joined with others.
						ast.Inspect(n.Args[2], func(x ast.Node) bool {
							if e, ok := x.(ast.Expr); ok {
								if format, ok := lit(e); ok {
									for _, m := range ref.FindAllStringSubmatch(format, -1) {
										fields[m[1]] = append(fields[m[1]], fset.Position(n.Pos()).String())
									}
								}
							}
							return true
						})
					}
				case *ast.CompositeLit:
					sel, ok := n.Type.(*ast.SelectorExpr)
					if !ok || sel.Sel.Name != "FieldError" {
						return true
					}
					for _, el := range n.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok && fmt.Sprint(kv.Key) == "Field" {
							add(kv.Value, n.Pos())
						}
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return fields
}

// TestFieldFlags: every field the libraries name in their option errors
// has a row in fieldFlags, and every row's flags are flags some command
// takes; so the CLI's messages name flags.
func TestFieldFlags(t *testing.T) {
	fields := libraryFields(t)
	if len(fields) < 20 {
		t.Fatalf("found %d option fields in bench and engine: expected the libraries' (is the source there?)", len(fields))
	}
	taken := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { taken[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { taken[f.Name] = true })
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd(nil, nil))
	for field, at := range fields {
		if _, ok := fieldFlags[field]; !ok {
			t.Errorf("field %s (%s) has no row in fieldFlags: the CLI would name the field, not its flag", field, at[0])
		}
	}
	for field, flags := range fieldFlags {
		for _, f := range flags {
			if !taken[f] {
				t.Errorf("fieldFlags[%s]: no command takes --%s", field, f)
			}
		}
	}
}

// TestFlagText: the libraries' option errors, wrapped and joined, read as
// flags; a field set by two commands' flags reads as the running one's.
func TestFlagText(t *testing.T) {
	root := newRootCmd(nil, nil)
	find := func(name string) *cobra.Command {
		c, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	pd := option.Errorf("Prefill", nil, "{Prefill} %d {Decode} %d: want at least one instance of each", 1, 0)
	joined := errors.Join(option.Errorf("MaxNumSeqs", -1, "want a positive count"), option.Errorf("Port", 70000, "want 0-65535"))
	for _, c := range []struct {
		cmd  string
		err  error
		want string
	}{
		{"engine", pd, "--pd-prefill 1 --pd-decode 0: want at least one instance of each"},
		{"run", pd, "--prefill 1 --decode 0: want at least one instance of each"},
		{"engine", fmt.Errorf("engine: %w", joined), "engine: --max-num-seqs -1: want a positive count\n--port 70000: want 0-65535"},
		{"run", errors.New("no option error"), "no option error"},
		// One option error wrapping another: both read as flags.
		{"run", &option.FieldError{Field: "Speedup", Value: 2.0, Err: option.Errorf("MaxModelLen", 9, "too long")}, "--speedup 2: --max-model-len 9: too long"},
	} {
		if got := flagText(find(c.cmd), c.err); got != c.want {
			t.Errorf("%s: %q, want %q", c.cmd, got, c.want)
		}
	}
	if slices.Contains(fieldFlags["Prefill"], "") {
		t.Error("an empty flag name")
	}
}
