package export

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSaveDir: --out DIR gets one <run>.json per run, its folders created,
// each file one vLLM object with no newline after it.
func TestSaveDir(t *testing.T) {
	res, recs := fixture()
	res.Runs[1].Name = "non streaming/b" // not a file name as it is
	dir := filepath.Join(t.TempDir(), "a", "vllm")
	if err := Save("vllm-bench", res, recs, Options{}, Dest{Out: dir + "/", From: "out"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, run string }{{"streaming.json", "streaming"}, {"non_streaming_b.json", "non streaming/b"}} {
		b, err := os.ReadFile(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasSuffix(b, []byte("\n")) {
			t.Errorf("%s ends in a newline: vLLM's --save-result leaves none", c.file)
		}
		vs, err := ReadVLLM(c.file, b)
		if err != nil || len(vs) != 1 || vs[0].Servebench.Run != c.run {
			t.Errorf("%s: %d results, %v; want the one of run %q", c.file, len(vs), err, c.run)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d files in %s, want 2", len(ents), dir)
	}
}

// TestSaveRefusals: several runs to one file, and two runs to one name in a
// folder, are usage errors that say what to do instead, and write nothing.
func TestSaveRefusals(t *testing.T) {
	res, recs := fixture()
	tmp := t.TempDir()
	file := filepath.Join(tmp, "vllm.json")
	err := Save("vllm-bench", res, recs, Options{}, Dest{Out: file, From: "results/x"})
	if !errors.Is(err, ErrUsage) {
		t.Fatalf("two runs to one file: %v, want a usage error", err)
	}
	for _, want := range []string{"results/x holds 2 runs (streaming, non-streaming)", "Out DIR", "Run NAME", "Append FILE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("the refused file was written")
	}

	res.Runs[1].Name = "streaming?" // both map to streaming_.json ...
	res.Runs[0].Name = "streaming_"
	dir := filepath.Join(tmp, "dir")
	err = Save("vllm-bench", res, recs, Options{}, Dest{Out: dir})
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), `runs "streaming_" and "streaming?" would both be written to streaming_.json`) {
		t.Errorf("two runs to one name: %v", err)
	}

	if _, err := OnlyRun(res, "nope"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), `Run "nope": no such run (the results hold streaming_, streaming?)`) {
		t.Errorf("unknown run: %v", err)
	}
}

// TestSaveOneRunAndAppend: one run goes to --out FILE as exactly vLLM's
// object; --append adds one object per line to what the file held.
func TestSaveOneRunAndAppend(t *testing.T) {
	res, recs := fixture()
	one, err := OnlyRun(res, "non-streaming")
	if err != nil || len(one.Runs) != 1 || len(res.Runs) != 2 {
		t.Fatalf("OnlyRun: %v, %d runs (the original %d)", err, len(one.Runs), len(res.Runs))
	}
	tmp := t.TempDir()
	file := filepath.Join(tmp, "new", "one.json")
	if err := Save("vllm-bench", one, recs, Options{}, Dest{Out: file}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	if vs, err := ReadVLLM(file, b); err != nil || len(vs) != 1 || vs[0].Servebench.Run != "non-streaming" {
		t.Errorf("--out FILE: %d results, %v", len(vs), err)
	}

	all := filepath.Join(tmp, "more", "all.jsonl")
	if err := os.MkdirAll(filepath.Dir(all), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(all, b, 0o644); err != nil { // a file vLLM wrote, no newline at its end
		t.Fatal(err)
	}
	for range 2 {
		if err := Save("vllm-bench", res, recs, Options{}, Dest{Append: all}); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(all)
	if lines := objectLines(t, got); len(lines) != 5 {
		t.Errorf("%d objects after appending two runs twice to one, want 5:\n%s", len(lines), got)
	}

	var out bytes.Buffer
	if err := Save("csv", res, recs, Options{}, Dest{Stdout: &out}); err != nil || !strings.HasPrefix(out.String(), "run,") {
		t.Errorf("csv to stdout: %v, %.40q", err, out.String())
	}
}

// TestOutIsDir: what --out names a folder.
func TestOutIsDir(t *testing.T) {
	tmp := t.TempDir()
	existing := filepath.Join(tmp, "file")
	if err := os.WriteFile(existing, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{tmp: true, existing: false, "x/": true, "vllm": true, "a.json": false, "a.JSONL": false, "a.txt": true} {
		if got := outIsDir(p); got != want {
			t.Errorf("outIsDir(%q) = %v, want %v", p, got, want)
		}
	}
}
