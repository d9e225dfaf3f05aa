package bench

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// layers ranks the module's packages (paths relative to the module, a
// prefix covering its subtree): a package imports only its own rank or
// lower ones (Go refuses the cycles within a rank). The pipeline reads top to bottom, as in
// doc.go: cmd -> report -> bench/fleet, bench/tune -> bench (runner, session) ->
// bench/probe, bench/history -> bench/store -> bench/workload -> bench/result, bench/stats -> client,
// scrape, engine.
var layers = []struct {
	prefix string
	rank   int
	exact  bool // the package alone, not its subtree
}{
	{"cmd", 90, false},
	{"report", 80, false},
	{"bench/fleet", 60, false},
	{"bench/tune", 60, false},
	{"bench", 50, true},
	{"bench/probe", 45, false},
	{"bench/history", 45, false},
	{"bench/proxytest", 15, false}, // test support: real proxies, above client and scrape
	{"bench/store", 40, false},
	{"bench/workload", 30, false},
	{"bench/result", 20, false},
	{"bench/stats", 20, false},
	{"client", 10, false},
	{"scrape", 10, false},
	{"engine", 10, false},
}

// layerOf returns the rank of rel (a module-relative path); ok is false
// for a package no layer names.
func layerOf(rel string) (rank int, ok bool) {
	best := -1
	for i, l := range layers {
		if rel == l.prefix || (!l.exact && strings.HasPrefix(rel, l.prefix+"/")) {
			if best < 0 || len(l.prefix) > len(layers[best].prefix) {
				best = i
			}
		}
	}
	if best < 0 {
		return 0, false
	}
	return layers[best].rank, true
}

// importErr says why pkg may not import imp (both module-relative), or nil.
// Tests (test) are held only to the house's hard rules: engine stands
// alone, report imports no engine package, nothing imports cmd; they may
// otherwise reach up for fixtures (bench's tests render through report).
func importErr(pkg, imp string, test bool) error {
	top := func(p string) string { t, _, _ := strings.Cut(p, "/"); return t }
	switch {
	case top(pkg) == "engine" && top(imp) != "engine":
		return errors.New("engine stands alone: it imports nothing from bench, report, client, scrape or cmd")
	case top(pkg) == "report" && top(imp) == "engine":
		return errors.New("report imports no engine package, not even in tests")
	case top(imp) == "cmd" && top(pkg) != "cmd":
		return errors.New("nothing imports cmd")
	case test:
		return nil
	}
	pr, ok := layerOf(pkg)
	if !ok {
		return errors.New("package has no layer: add it to bench's layers (layers_test.go) and say where it sits in its doc.go")
	}
	ir, ok := layerOf(imp)
	if !ok {
		return errors.New("imported package has no layer in bench's layers (layers_test.go)")
	}
	if ir <= pr {
		return nil
	}
	return errors.New("imports upward (see the layers in bench/doc.go)")
}

// TestLayers fails when a package of the module imports upward: the
// pipeline's stages stay findable by folder only while each imports the
// stages below it and never those above.
func TestLayers(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("bench: TestLayers lists the module's imports with the go command: %v", err)
	}
	mod, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	module := strings.TrimSpace(string(mod))
	cmd := exec.Command("go", "list", "-json", module+"/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -json %s/...: %v", module, err)
	}
	type pkg struct {
		ImportPath                         string
		Imports, TestImports, XTestImports []string
	}
	rel := func(p string) (string, bool) {
		if p == module {
			return "", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
		from, _ := rel(p.ImportPath)
		check := func(imps []string, test bool) {
			for _, imp := range imps {
				to, ok := rel(imp)
				if !ok || to == from {
					continue
				}
				if err := importErr(from, to, test); err != nil {
					kind := ""
					if test {
						kind = " (tests)"
					}
					t.Errorf("%s%s imports %s: %v", from, kind, to, err)
				}
			}
		}
		check(p.Imports, false)
		check(append(p.TestImports, p.XTestImports...), true)
	}
	if n < 10 {
		t.Fatalf("go list found %d packages in %s: expected the whole module", n, module)
	}
}

// TestLayersRefuse checks that the rules catch what they are for, so that
// TestLayers passing means something.
func TestLayersRefuse(t *testing.T) {
	for _, c := range []struct {
		pkg, imp string
		test     bool
		ok       bool
	}{
		{"bench", "bench/workload", false, true},
		{"bench/workload", "bench", false, false},
		{"bench/workload", "bench/store", false, false},
		{"bench/store", "bench/workload", false, true},
		{"bench/store", "bench", false, false},
		{"bench", "bench/fleet", false, false},
		{"bench/fleet", "bench", false, true},
		{"bench/fleet", "bench/fleet/k8s", false, true},
		{"bench/result", "bench/stats", false, true},
		{"bench/probe", "bench", false, false},
		{"bench", "bench/probe", false, true},
		{"report", "bench/result", false, true},
		{"report/compare", "report/export", false, true},
		{"report", "engine/sim", true, false},
		{"engine/sim", "bench/result", true, false},
		{"client", "bench/stats", false, false},
		{"client", "bench/stats", true, true},
		{"bench", "report", false, false},
		{"bench", "cmd/servebench", true, false},
		{"bench/newstage", "bench/result", false, false},
		{"cmd/servebench", "bench/fleet/logblock", false, true},
	} {
		err := importErr(c.pkg, c.imp, c.test)
		if (err == nil) != c.ok {
			t.Errorf("%s imports %s (test %v): error %v, want allowed %v", c.pkg, c.imp, c.test, err, c.ok)
		}
	}
}
