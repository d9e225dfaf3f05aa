package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/launch"
	"github.com/servebench/servebench/report/export"
	"github.com/servebench/servebench/report/reporttest"
)

// vllmServingColumns are the serving result keys vLLM's
// .buildkite/performance-benchmarks/scripts/convert-results-json-to-markdown.py
// (vllm-project/vllm, commit 798d216f148402123c15f0f65f5eb9348bd773cd)
// puts in its markdown table (its serving_column_mapping), with the
// column names it gives them.
var vllmServingColumns = [][2]string{
	{"test_name", "Test name"}, {"model_id", "Model"}, {"dataset_name", "Dataset Name"},
	{"input_len", "Input Len"}, {"output_len", "Output Len"}, {"tp_size", "TP Size"},
	{"pp_size", "PP Size"}, {"dtype", "dtype"}, {"gpu_type", "GPU"}, {"completed", "# of req."},
	{"qps", "qps"}, {"max_concurrency", "# of max concurrency."},
	{"request_throughput", "Tput (req/s)"}, {"total_token_throughput", "Total Token Tput (tok/s)"},
	{"output_throughput", "Output Tput (tok/s)"},
	{"mean_ttft_ms", "Mean TTFT (ms)"}, {"median_ttft_ms", "Median TTFT (ms)"},
	{"p99_ttft_ms", "P99 TTFT (ms)"}, {"std_ttft_ms", "STD TTFT (ms)"},
	{"mean_tpot_ms", "Mean TPOT (ms)"}, {"median_tpot_ms", "Median"}, {"p99_tpot_ms", "P99"},
	{"std_tpot_ms", "STD TPOT (ms)"},
	{"mean_itl_ms", "Mean ITL (ms)"}, {"median_itl_ms", "Median ITL (ms)"}, {"p99_itl_ms", "P99 ITL (ms)"},
}

// readVLLMServing reads a results folder the way that script does, step
// for step, and returns its serving table's rows (column name -> value):
//   - every *.json directly in the folder is one json.loads of the whole
//     file: one JSON document, nothing after it (Python: "Extra data");
//   - a file whose path contains "serving" needs <stem>.commands beside it
//     (else it is skipped with the OSError printed), whose server_command
//     and client_command are split and parsed for --tensor-parallel-size,
//     --pipeline-parallel-size, --dtype, --dataset-name,
//     --random-input-len, --random-output-len and --request-rate; each is
//     merged into the result with dict.update, so a result that is not a
//     JSON object fails ("'list' object has no attribute 'update'"), as
//     are the .commands keys and test_name (the file's stem);
//   - the table keeps the mapped columns present in any row, sorted by
//     test name, and needs a "GPU" column of strings (it splits them on
//     newlines), i.e. gpu_type from .commands.
func readVLLMServing(dir string) ([]map[string]any, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var rows []map[string]any
	present := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		v, err := pyJSONLoads(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: json.loads: %w", f, err)
		}
		if !strings.Contains(f, "serving") {
			continue // the latency and throughput branches: not vllm bench serve's
		}
		cb, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".commands")
		if err != nil {
			continue // the script prints the OSError and skips the file
		}
		cv, err := pyJSONLoads(cb)
		if err != nil {
			return nil, fmt.Errorf("%s.commands: %w", f, err)
		}
		command, ok := cv.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s.commands: not a dict", f)
		}
		res, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: '%s' object has no attribute 'update'", f, pyType(v))
		}
		for _, c := range []struct {
			key  string
			args map[string]string
		}{
			{"server_command", map[string]string{"--tensor-parallel-size": "tp_size", "--pipeline-parallel-size": "pp_size", "--dtype": "dtype"}},
			{"client_command", map[string]string{"--dataset-name": "dataset_name", "--random-input-len": "input_len", "--random-output-len": "output_len", "--request-rate": "qps"}},
		} {
			s, ok := command[c.key].(string)
			if !ok {
				return nil, fmt.Errorf("%s.commands: KeyError: %q", f, c.key)
			}
			args, err := parseVLLMCommand(s)
			if err != nil {
				return nil, fmt.Errorf("%s.commands %s: %w", f, c.key, err)
			}
			for flag, col := range c.args {
				if a, ok := args[flag]; ok {
					res[col] = a
				}
			}
		}
		for k, x := range command {
			res[k] = x
		}
		res["test_name"] = strings.TrimSuffix(filepath.Base(f), ".json")
		row := map[string]any{}
		for _, c := range vllmServingColumns {
			if x, ok := res[c[0]]; ok {
				row[c[1]] = x
				present[c[1]] = true
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	for _, row := range rows {
		for col := range present {
			if _, ok := row[col]; !ok {
				row[col] = nil // pandas: NaN where a row lacks a column
			}
		}
		if _, ok := row["GPU"].(string); !ok {
			return nil, fmt.Errorf("row %v: KeyError/AttributeError on df[\"GPU\"]: no gpu_type string", row["Test name"])
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return fmt.Sprint(rows[i]["Test name"]) < fmt.Sprint(rows[j]["Test name"]) })
	return rows, nil
}

// pyJSONLoads is json.loads of a whole file: one document, only white
// space after it.
func pyJSONLoads(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return nil, errors.New("Extra data")
	}
	return v, nil
}

func pyType(v any) string {
	switch v.(type) {
	case []any:
		return "list"
	case string:
		return "str"
	case float64:
		return "float"
	}
	return fmt.Sprintf("%T", v)
}

// parseVLLMCommand is the script's parse_client_command: shlex words, the
// executable and script first, then --key=value, --key value (a next word
// not starting with --) or a lone --flag (True); --metadata takes k=v words.
func parseVLLMCommand(cmd string) (map[string]any, error) {
	toks, err := launch.SplitCommand(cmd)
	if err != nil {
		return nil, err
	}
	if len(toks) < 2 {
		return nil, errors.New("client_command must include an executable and a script")
	}
	args := map[string]any{}
	for i := 2; i < len(toks); {
		t := toks[i]
		switch {
		case !strings.HasPrefix(t, "--"):
			i++
		case strings.Contains(t, "="):
			k, v, _ := strings.Cut(t, "=")
			args[k] = v
			i++
		case t == "--metadata":
			i++
			for i < len(toks) && !strings.HasPrefix(toks[i], "--") {
				i++
			}
			args[t] = true
		case i+1 < len(toks) && !strings.HasPrefix(toks[i+1], "--"):
			args[t] = toks[i+1]
			i += 2
		default:
			args[t] = true
			i++
		}
	}
	return args, nil
}

// writeVLLMCommands writes <stem>.commands beside each result file as
// vLLM's run-performance-benchmarks.sh records a serving test's commands.
func writeVLLMCommands(t *testing.T, dir string, qps string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		b, _ := json.Marshal(map[string]string{
			"server_command": "vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ --tensor-parallel-size 1 --dtype auto",
			"client_command": "vllm bench serve --save-result --request-rate " + qps + " --max-concurrency 1 --dataset-name random --random-input-len 24",
			"gpu_type":       "H100",
		})
		if err := os.WriteFile(strings.TrimSuffix(f, ".json")+".commands", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExportReadByVLLMTooling: a results directory of two runs exported
// with --out DIR reads, file by file, as vLLM's own results-to-markdown
// script reads a folder of `vllm bench serve --save-result` files; --out
// FILE with two runs is refused naming the ways out; --run picks one;
// --append leaves one object per line.
func TestExportReadByVLLMTooling(t *testing.T) {
	dir := t.TempDir()
	res, recs := reporttest.Seed()
	if err := reporttest.Save(dir, res, recs); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()

	code, _, stderr := runMain("export", dir, "--to", "vllm-bench", "--out", filepath.Join(tmp, "all.json"))
	if code != exitUsage || !strings.Contains(stderr, "--out DIR") || !strings.Contains(stderr, "--run NAME") ||
		!strings.Contains(stderr, "streaming, non-streaming") {
		t.Errorf("two runs to --out FILE: exit %d, stderr %q; want 2 naming --out DIR and --run NAME", code, stderr)
	}

	out := filepath.Join(tmp, "serving-results", "new") // not there yet: export creates it
	if code, _, stderr := runMain("export", dir, "--to", "vllm-bench", "--out", out); code != 0 {
		t.Fatalf("--out DIR: exit %d: %s", code, stderr)
	}
	writeVLLMCommands(t, out, "inf")
	rows, err := readVLLMServing(out)
	if err != nil {
		t.Fatalf("vLLM's reader: %v", err)
	}
	if len(rows) != len(res.Runs) {
		t.Fatalf("vLLM's reader found %d serving results, want one per run (%d)", len(rows), len(res.Runs))
	}
	for i, name := range []string{"non-streaming", "streaming"} { // sorted by test name
		r := rows[i]
		run := res.Runs[slices.IndexFunc(res.Runs, func(r result.Run) bool { return r.Name == name })]
		if r["Test name"] != name || r["# of req."] != float64(run.OK) || r["GPU"] != "H100" || r["qps"] != "inf" {
			t.Errorf("row %d = %v: want run %s, %d completed", i, r, name, run.OK)
		}
		if tput, ok := r["Tput (req/s)"].(float64); !ok || tput <= 0 {
			t.Errorf("%s: Tput (req/s) = %v", name, r["Tput (req/s)"])
		}
		for _, col := range []string{"Mean TTFT (ms)", "P99 TTFT (ms)", "Median", "P99", "Median ITL (ms)"} {
			if _, ok := r[col].(float64); !ok {
				t.Errorf("%s: %s = %v, want a number", name, col, r[col])
			}
		}
	}

	// The reader is strict where vLLM's is: the old array export fails it.
	arr := filepath.Join(tmp, "serving-array")
	os.MkdirAll(arr, 0o755)
	var objs []json.RawMessage
	for _, n := range []string{"streaming", "non-streaming"} {
		b, _ := os.ReadFile(filepath.Join(out, n+".json"))
		objs = append(objs, b)
	}
	b, _ := json.Marshal(objs)
	os.WriteFile(filepath.Join(arr, "both.json"), b, 0o644)
	writeVLLMCommands(t, arr, "inf")
	if _, err := readVLLMServing(arr); err == nil || !strings.Contains(err.Error(), "'list' object has no attribute 'update'") {
		t.Errorf("an array of runs: err %v, want the script's 'list' object error", err)
	}

	one := filepath.Join(tmp, "serving-one", "streaming.json")
	if code, _, stderr := runMain("export", dir, "--to", "vllm-bench", "--run", "streaming", "--out", one); code != 0 {
		t.Fatalf("--run --out FILE: exit %d: %s", code, stderr)
	}
	writeVLLMCommands(t, filepath.Dir(one), "inf")
	if rows, err := readVLLMServing(filepath.Dir(one)); err != nil || len(rows) != 1 || rows[0]["Test name"] != "streaming" {
		t.Errorf("--run streaming: rows %v, %v", rows, err)
	}
	if code, _, stderr := runMain("export", dir, "--to", "vllm-bench", "--run", "nope"); code != exitUsage ||
		!strings.Contains(stderr, `--run "nope"`) || !strings.Contains(stderr, "non-streaming") {
		t.Errorf("--run nope: exit %d, stderr %q", code, stderr)
	}

	// --append twice: four objects, one per line, each line a whole object
	// ending in a newline (a text file: wc -l counts 4).
	app := filepath.Join(tmp, "appended", "runs.jsonl")
	for range 2 {
		if code, _, stderr := runMain("export", dir, "--to", "vllm-bench", "--append", app); code != 0 {
			t.Fatalf("--append: exit %d: %s", code, stderr)
		}
	}
	data, _ := os.ReadFile(app)
	if !strings.HasSuffix(string(data), "}\n") {
		t.Errorf("--append: the file does not end in a newline: %q", data[max(0, len(data)-20):])
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("--append twice: %d lines, want 4", len(lines))
	}
	for i, l := range lines {
		if v, err := pyJSONLoads([]byte(l)); err != nil {
			t.Errorf("line %d: %v", i+1, err)
		} else if _, ok := v.(map[string]any); !ok {
			t.Errorf("line %d: not an object", i+1)
		}
	}
	if vs, err := export.ReadVLLM(app, data); err != nil || len(vs) != 4 {
		t.Errorf("compare's reader: %d results, %v", len(vs), err)
	}
}

// TestExportRealVLLMReader runs vLLM's own convert-results-json-to-markdown.py
// on an --out DIR export when SERVEBENCH_VLLM_SRC names a vLLM checkout
// (the script is not copied here); its imports (pandas, psutil, regex,
// tabulate) are Debian's python3-* packages.
func TestExportRealVLLMReader(t *testing.T) {
	src := os.Getenv("SERVEBENCH_VLLM_SRC")
	if src == "" {
		t.Skip("cmd/servebench: set SERVEBENCH_VLLM_SRC to a vLLM checkout to run its results reader on the export")
	}
	script := filepath.Join(src, ".buildkite", "performance-benchmarks", "scripts", "convert-results-json-to-markdown.py")
	if _, err := os.Stat(script); err != nil {
		t.Fatal(err)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("SERVEBENCH_VLLM_SRC is set but python3 is missing")
	}
	dir := t.TempDir()
	res, recs := reporttest.Seed()
	if err := reporttest.Save(dir, res, recs); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "serving")
	if code, _, stderr := runMain("export", dir, "--to", "vllm-bench", "--out", out); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	writeVLLMCommands(t, out, "inf")
	cmd := exec.Command(py, script, "-r", out)
	cmd.Dir = out
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, b)
	}
	b, err := os.ReadFile(filepath.Join(out, "benchmark_results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table []map[string]any
	if err := json.Unmarshal(b, &table); err != nil || len(table) != len(res.Runs) {
		t.Fatalf("benchmark_results.json: %d rows, %v; want one per run:\n%s", len(table), err, b)
	}
	want, err := readVLLMServing(out)
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range table {
		for _, col := range []string{"Test name", "# of req.", "Tput (req/s)", "Mean TTFT (ms)", "P99"} {
			if fmt.Sprint(row[col]) != fmt.Sprint(want[i][col]) {
				t.Errorf("row %d %s: vLLM's script %v, the Go port %v", i, col, row[col], want[i][col])
			}
		}
	}
}
