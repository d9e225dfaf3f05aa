package perf

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

// TestFigureFileErrors: a bad row of a figure file fails the load with its
// file, line and column and what is wrong, for every column the loader
// checks.
func TestFigureFileErrors(t *testing.T) {
	header := strings.Join(figureColumns, ",") + "\n"
	good := `rtx3060-12gb,qwen2.5-7b-instruct-awq,ttft,"prompt=46,cached=32",28.1,ms,fit,,request-ttft prompt=46 cached=32,` +
		`max-model-len=4096 gpu-memory-utilization=0.9,V1,seed model,seed lesson,`
	// with replaces the first old in the good row by new.
	with := func(old, new string) string { return strings.Replace(good, old, new, 1) }
	for _, c := range []struct {
		name, row, want string
	}{
		{"gpu", with("rtx3060-12gb", "b200-192gb"), `figs/a.csv:3:1: gpu: `},
		{"model", with("qwen2.5-7b-instruct-awq", "llama-9"), `figs/a.csv:3:14: model: `},
		{"quantity", with(",ttft,", ",ttfb,"), `figs/a.csv:3:38: quantity: unknown quantity "ttfb"`},
		{"value", with(",28.1,", ",-1,"), `figs/a.csv:3:65: value: "-1": want a positive number`},
		{"unit", with(",ms,", ",s,"), `figs/a.csv:3:70: unit: unit "s", want "ms"`},
		{"set", with(",fit,", ",trained,"), `figs/a.csv:3:73: set: unknown set "trained"`},
		{"method", with("request-ttft prompt=46 cached=32", "request-ttft prompt=46"), `figs/a.csv:3:78: method: method request-ttft: missing parameter cached`},
		{"method name", with("request-ttft prompt=46 cached=32", "ttft-warm prompt=46"), `method: unknown method "ttft-warm"`},
		{"method param", with("request-ttft prompt=46 cached=32", "request-ttft prompt=46 cached=32 batch=2"), `unknown parameter "batch"`},
		{"method zero", with("request-ttft prompt=46 cached=32", "request-ttft prompt=0 cached=0"), `method: method request-ttft: prompt=0: want a positive integer`},
		{"method lists", with("request-ttft prompt=46 cached=32", "\"median-tpot prompts=1,2 outputs=3\""), `method: method median-tpot: 1 outputs for 2 prompts`},
		{"serving", with("max-model-len=4096 gpu-memory-utilization=0.9", "max-model-len=4096"), `serving: gpu-memory-utilization in (0, 1] is required`},
		{"serving key", with("max-model-len=4096 gpu-memory-utilization=0.9", "gpu-memory-utilization=0.9 max-len=2"), `serving: unknown key "max-len"`},
		{"source", with("seed lesson", ""), `source: empty`},
		{"why", with("seed lesson,", "seed lesson,a reason"), `why: an exempt or gap figure says why, no other`},
		{"fields", "a,b,c\n", `figs/a.csv:3:1: 3 fields, want 14`},
	} {
		fsys := fstest.MapFS{"figs/a.csv": {Data: []byte("# a comment\n" + header + c.row + "\n")}}
		_, err := readFigures(fsys, "figs")
		var fe *FigureError
		if err == nil || !strings.Contains(err.Error(), c.want) || (!errors.As(err, &fe)) {
			t.Errorf("%s: row %q: error %v, want one containing %q", c.name, c.row, err, c.want)
		}
	}
	fsys := fstest.MapFS{"figs/a.csv": {Data: []byte(header + good + "\n")}}
	figs, err := readFigures(fsys, "figs")
	if err != nil || len(figs) != 1 || figs[0].Pos != "figs/a.csv:2" || figs[0].Cfg.MaxModelLen != 4096 || figs[0].eval == nil {
		t.Errorf("good row: %+v, %v", figs, err)
	}
	bad := fstest.MapFS{"figs/a.csv": {Data: []byte("gpu,model\n")}}
	if _, err := readFigures(bad, "figs"); err == nil || !strings.Contains(err.Error(), "figs/a.csv:1:1: header") {
		t.Errorf("bad header: %v", err)
	}
}

// BenchmarkReadFigures is the one-off cost of the first FidelityFigures
// call (package init no longer pays it).
func BenchmarkReadFigures(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readFigures(figureData, figureDir); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFigureFilesDocumented: every figure file has its section in
// docs/engine-sources.md, which says what was run and how it was read.
func TestFigureFilesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/engine-sources.md")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := fs.ReadDir(figureData, figureDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.Contains(string(doc), "\n### "+e.Name()+": ") {
			t.Errorf("%s/%s has no \"### %s: ...\" section in docs/engine-sources.md", figureDir, e.Name(), e.Name())
		}
	}
}
