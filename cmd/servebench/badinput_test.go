package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
	"github.com/servebench/servebench/report/reporttest"
)

// closedURL is a loopback port nothing listens on: rows that do not test
// --base-url point at it, so a flag that slips through validation fails
// fast with a refused connection (exit 3) instead of starting a server.
const closedURL = "http://127.0.0.1:1"

// badInputFiles are the broken inputs the table reads, built once per test.
type badInputFiles struct {
	dir string
	// prompt JSONL
	promptBadLine2, promptEmpty, promptNeither, promptArray string
	// results directories
	good, noResults, badJSON, wrongSchema, noRecords, badRecord string
	// /metrics and logs
	metricsGarbage, metricsEmpty string
	// workload sources
	shareGPTCut, traceBack, traceBadRow string
}

func (f badInputFiles) path(name string) string { return filepath.Join(f.dir, name) }

func makeBadInputFiles(t *testing.T) badInputFiles {
	t.Helper()
	f := badInputFiles{dir: t.TempDir()}
	write := func(name, content string) string {
		p := name
		if !filepath.IsAbs(p) {
			p = f.path(name)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f.promptBadLine2 = write("bad.jsonl", "{\"prompt\": \"a\"}\n{\"prompt\": \n")
	f.promptEmpty = write("empty.jsonl", "")
	f.promptNeither = write("neither.jsonl", "{\"text\": \"a\"}\n")
	f.promptArray = write("array.jsonl", "[\"a\"]\n")
	res, recs := reporttest.Seed()
	for _, d := range []*string{&f.good, &f.wrongSchema, &f.noRecords, &f.badRecord, &f.badJSON} {
		*d = t.TempDir()
		if err := reporttest.Save(*d, res, recs); err != nil {
			t.Fatal(err)
		}
	}
	f.noResults = t.TempDir()
	write(filepath.Join(f.noResults, "requests.jsonl"), "")
	write(filepath.Join(f.badJSON, result.ResultsFile), "{\n  \"schema\": \"servebench/v1\",\n  \"runs\": [,]\n}\n")
	write(filepath.Join(f.wrongSchema, result.ResultsFile), "{\"schema\": \"otherbench/v9\", \"runs\": []}\n")
	os.Remove(filepath.Join(f.noRecords, result.RequestsFile))
	fh, err := os.OpenFile(filepath.Join(f.badRecord, result.RequestsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString("{\"run\": \"streaming\", \"index\": \n")
	fh.Close()
	f.metricsGarbage = write("garbage.prom", "garbage {{{\n")
	f.metricsEmpty = write("empty.prom", "")
	f.shareGPTCut = write("cut.json", "[\n{\"id\": 1, \"conversations\": []},\n{\"id\": 2, \"conv")
	f.traceBack = write("back.jsonl", "{\"timestamp\": 10, \"input_length\": 5, \"output_length\": 1}\n{\"timestamp\": 5, \"input_length\": 5, \"output_length\": 1}\n")
	f.traceBadRow = write("bad.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,5,1\n2023-11-16 18:15:47.00,lots,1\n")
	return f
}

// badInputCase is one command line that must be refused: exit 2, and
// stderr holding every string in want (the bad value, and what was
// expected).
type badInputCase struct {
	name string
	args []string
	want []string
}

func badInputCases(f badInputFiles) []badInputCase {
	u := closedURL
	missing := f.path("nope/missing.jsonl")
	// engineGuard keeps a bundled engine that wrongly accepted its flags
	// from serving forever: it exits during loading (exit 3), fast.
	engine := func(args ...string) []string {
		return append([]string{"engine", "--port", "0", "--speedup", "1000", "--fault", "exit-during-load"}, args...)
	}
	return []badInputCase{
		// --- every command: stray arguments and unknown commands are usage errors
		{"unknown command", []string{"bogus"}, []string{`"bogus"`}},
		// --- Ollama (issue 19): no binary; a --gguf that is not one; --gguf without --server ollama
		{"table ollama no binary", []string{"table", "--server", "ollama", "--server-bin", f.path("no/ollama")}, []string{".ci/install-ollama", "--server-bin"}},
		{"startup ollama no binary", []string{"startup", "--server", "ollama", "--server-bin", f.path("no/ollama")}, []string{".ci/install-ollama", "--server-bin"}},
		{"table ollama gguf not gguf", []string{"table", "--server", "ollama", "--server-bin", "true", "--gguf", f.metricsGarbage}, []string{"--gguf", f.metricsGarbage, "not a GGUF"}},
		{"table ollama no model", []string{"table", "--server", "ollama", "--server-bin", "true"}, []string{"--gguf", "--model"}},
		{"run gguf without ollama", []string{"run", "--server", "vllm", "--gguf", f.metricsGarbage}, []string{"--gguf", "--server ollama"}},
		// --- the server's working directory must exist (checked before anything starts)
		{"run server-dir missing", []string{"run", "--server-cmd", "true", "--server-dir", f.path("nodir")}, []string{f.path("nodir"), "existing directory"}},
		{"startup server-dir missing", []string{"startup", "--server-cmd", "true", "--server-dir", f.path("nodir")}, []string{f.path("nodir"), "existing directory"}},
		{"probe server-dir missing", []string{"probe", "limits", "--server-cmd", "true", "--server-dir", f.path("nodir")}, []string{f.path("nodir"), "existing directory"}},
		{"table stray argument", []string{"table", "--base-url", u, "20"}, []string{`"20"`}},
		{"run stray argument", []string{"run", "--base-url", u, "--stream", "off", "20"}, []string{`"20"`}},
		{"engine stray argument", []string{"engine", "--port", "0", "--speedup", "1000", "--fault", "exit-during-load", "extra"}, []string{`"extra"`}},
		{"startup stray argument", []string{"startup", "extra"}, []string{`"extra"`}},

		// --- table: the server, the requests, the output, the gate
		{"table base-url not a URL", []string{"table", "--base-url", "not a url"}, []string{`"not a url"`, "http://HOST:PORT"}},
		{"table base-url ftp", []string{"table", "--base-url", "ftp://x"}, []string{`"ftp://x"`, "http://HOST:PORT"}},
		{"table base-url without host", []string{"table", "--base-url", "http://"}, []string{`"http://"`, "http://HOST:PORT"}},
		{"table base-url host without port", []string{"table", "--base-url", "http://:8000"}, []string{`"http://:8000"`}},
		{"table requests 0", []string{"table", "--base-url", u, "--requests", "0"}, []string{"--requests 0", "at least 1"}},
		{"table requests -1", []string{"table", "--base-url", u, "--requests", "-1"}, []string{"--requests -1", "at least 1"}},
		{"table max-tokens 0", []string{"table", "--base-url", u, "--max-tokens", "0"}, []string{"--max-tokens 0", "at least 1"}},
		{"table format bogus", []string{"table", "--base-url", u, "--format", "bogus"}, []string{`--format "bogus"`, "text, markdown, csv, json"}},
		{"table endpoint bogus", []string{"table", "--base-url", u, "--endpoint", "bogus"}, []string{`--endpoint "bogus"`, "chat, completions, ollama-chat, messages, responses"}},
		{"table speedup -1", []string{"table", "--base-url", u, "--speedup", "-1"}, []string{"--speedup -1", "> 0"}},
		{"table speedup 0 given explicitly", []string{"table", "--speedup", "0", "--ready-timeout", "5s"}, []string{"--speedup 0", "> 0"}},
		{"table speedup NaN", []string{"table", "--speedup", "NaN"}, []string{"--speedup NaN", "> 0"}},
		{"table speedup Inf", []string{"table", "--speedup", "Inf", "--ready-timeout", "20s"}, []string{"--speedup +Inf", "> 0"}},
		{"run rate NaN", []string{"run", "--base-url", u, "--rate", "NaN"}, []string{"--rate NaN", "> 0"}},
		{"run rate Inf", []string{"run", "--base-url", u, "--rate", "Inf"}, []string{"--rate +Inf", "> 0"}},
		{"run fail-on-error-rate NaN", []string{"run", "--base-url", u, "--fail-on-error-rate", "NaN"}, []string{"--fail-on-error-rate NaN", "0 to 100"}},
		{"table fail-on-error-rate 150", []string{"table", "--base-url", u, "--fail-on-error-rate", "150"}, []string{"--fail-on-error-rate 150", "0 to 100"}},
		{"table fail-on-error-rate -5", []string{"table", "--base-url", u, "--fail-on-error-rate", "-5"}, []string{"--fail-on-error-rate -5", "0 to 100"}},
		{"table max-regression without baseline", []string{"table", "--base-url", u, "--max-regression", "client.e2e.median=10%"}, []string{"--max-regression", "--baseline"}},
		{"table baseline missing", []string{"table", "--base-url", u, "--baseline", missing}, []string{missing}},
		{"table max-regression ten%", []string{"table", "--base-url", u, "--baseline", f.good, "--max-regression", "client.e2e.median=ten%"}, []string{`"client.e2e.median=ten%"`, "10%"}},
		{"table slo unknown key", []string{"table", "--base-url", u, "--slo", "ttfb=200ms"}, []string{`--slo "ttfb=200ms"`, `unknown key "ttfb"`, "ttft, tpot, itl, e2e"}},
		{"run slo bad duration", []string{"run", "--base-url", u, "--slo", "ttft=200ms,tpot=fast"}, []string{"--slo", "key tpot", `"fast"`}},
		{"sweep slo negative", []string{"sweep", "--base-url", u, "--slo", "e2e=-1s"}, []string{"--slo", "key e2e", "> 0"}},
		{"sweep find-max-rate without slo", []string{"sweep", "--base-url", u, "--find-max-rate", "90%"}, []string{"--find-max-rate 90%", "--slo"}},
		{"sweep find-max-rate bad target", []string{"sweep", "--base-url", u, "--slo", "e2e=1s", "--find-max-rate", "ninety"}, []string{`--find-max-rate "ninety"`, "percentage"}},
		{"sweep find-max-rate with concurrency", []string{"sweep", "--base-url", u, "--slo", "e2e=1s", "--find-max-rate", "90", "--concurrency", "4"}, []string{"--find-max-rate and --concurrency"}},
		{"sweep find-max-rate max-steps 0", []string{"sweep", "--base-url", u, "--slo", "e2e=1s", "--find-max-rate", "90", "--max-steps", "0"}, []string{"--max-steps 0"}},
		{"table out not creatable", []string{"table", "--base-url", u, "--out", "/proc/servebench-nope"}, []string{"/proc/servebench-nope"}},
		{"table engine-arg unknown GPU", []string{"table", "--speedup", "1000", "--ready-timeout", "20s", "--engine-arg=--gpu=nope"}, []string{`"nope"`, "rtx3060-12gb"}},
		{"table server preset bogus", []string{"table", "--server", "bogus"}, []string{`"bogus"`, "bundled, vllm"}},
		{"table engine-arg with base-url", []string{"table", "--base-url", u, "--engine-arg=--gpu=h100-80gb"}, []string{"--engine-arg", "bundled engine"}},

		// --- run: workload flags and prompt files
		{"run duration without unit", []string{"run", "--base-url", u, "--duration", "5"}, []string{`"5"`, "--duration", "unit"}},
		{"run duration negative", []string{"run", "--base-url", u, "--duration", "-1s"}, []string{"--duration -1s", "positive"}},
		{"run rate -1", []string{"run", "--base-url", u, "--rate", "-1"}, []string{"--rate -1", "> 0"}},
		{"run rate 0 with arrival", []string{"run", "--base-url", u, "--rate", "0", "--arrival", "constant"}, []string{"--rate 0", "> 0"}},
		{"run rate and concurrency", []string{"run", "--base-url", u, "--rate", "2", "--concurrency", "4"}, []string{"--rate", "--concurrency", "one of them"}},
		// --- run: workload sources (issue 11)
		{"run input-tokens lognormal one number", []string{"run", "--base-url", u, "--input-tokens", "lognormal:5"}, []string{`--input-tokens "lognormal:5"`, "lognormal:MEAN,STD"}},
		{"run output-tokens reversed", []string{"run", "--base-url", u, "--output-tokens", "uniform:9-1"}, []string{`--output-tokens "uniform:9-1"`, "MIN <= MAX"}},
		{"run think-time without sessions", []string{"run", "--base-url", u, "--think-time", "1"}, []string{"--think-time", "sessions"}},
		{"run turns 0", []string{"run", "--base-url", u, "--turns", "0"}, []string{`--turns "0"`}},
		{"run prefix-groups 0", []string{"run", "--base-url", u, "--prefix-groups", "0"}, []string{"--prefix-groups 0", "at least 1"}},
		{"run dataset missing", []string{"run", "--base-url", u, "--dataset", "sharegpt:" + missing}, []string{missing}},
		{"run dataset kind", []string{"run", "--base-url", u, "--dataset", "csv:x"}, []string{`--dataset "csv:x"`, "sharegpt:FILE or jsonl:FILE"}},
		{"run dataset malformed", []string{"run", "--base-url", u, "--dataset", "sharegpt:" + f.shareGPTCut}, []string{f.shareGPTCut + ":3: entry 1"}},
		{"run dataset and prompt", []string{"run", "--base-url", u, "--dataset", "jsonl:x", "--prompt", "hi"}, []string{"--prompt", "--dataset", "at most one"}},
		{"run trace backwards", []string{"run", "--base-url", u, "--trace", f.traceBack}, []string{f.traceBack + ":2:", `"timestamp"`, "in order"}},
		{"run trace azure bad row", []string{"run", "--base-url", u, "--trace", f.traceBadRow}, []string{f.traceBadRow + ":3:", "ContextTokens"}},
		{"run trace with rate", []string{"run", "--base-url", u, "--trace", f.traceBack, "--rate", "2"}, []string{"--trace", "--rate", "own send times"}},
		{"run trace-speed without trace", []string{"run", "--base-url", u, "--trace-speed", "2"}, []string{"--trace-speed", "--trace FILE"}},
		{"run trace-speed 0", []string{"run", "--base-url", u, "--trace", f.traceBadRow, "--trace-speed", "-2"}, []string{"--trace-speed -2"}},
		{"sweep trace", []string{"sweep", "--base-url", u, "--trace", f.traceBack}, []string{"unknown flag: --trace"}},
		{"run concurrency 0", []string{"run", "--base-url", u, "--concurrency", "0"}, []string{"--concurrency 0", "at least 1"}},
		{"run concurrency -3", []string{"run", "--base-url", u, "--concurrency", "-3"}, []string{"--concurrency -3", "at least 1"}},
		{"run requests -1", []string{"run", "--base-url", u, "--requests", "-1"}, []string{"--requests -1", ">= 0"}},
		{"run requests 0 without duration", []string{"run", "--base-url", u, "--requests", "0"}, []string{"--requests 0", "duration"}},
		{"run warmup -1", []string{"run", "--base-url", u, "--warmup", "-1"}, []string{"--warmup -1", ">= 0"}},
		{"run max-tokens 0", []string{"run", "--base-url", u, "--max-tokens", "0"}, []string{"--max-tokens 0", "at least 1"}},
		{"run stream maybe", []string{"run", "--base-url", u, "--stream", "maybe"}, []string{`--stream "maybe"`, "on, off, both"}},
		{"run endpoint bogus", []string{"run", "--base-url", u, "--endpoint", "bogus"}, []string{`--endpoint "bogus"`, "chat, completions, ollama-chat, messages, responses"}},
		{"run format bogus", []string{"run", "--base-url", u, "--format", "bogus"}, []string{`--format "bogus"`, "text, markdown"}},
		{"run arrival bogus with rate", []string{"run", "--base-url", u, "--rate", "5", "--arrival", "bogus"}, []string{`--arrival "bogus"`, "constant", "gamma"}},
		{"run arrival bogus without rate", []string{"run", "--base-url", u, "--arrival", "bogus"}, []string{`--arrival "bogus"`}},
		{"run burstiness 0", []string{"run", "--base-url", u, "--rate", "5", "--arrival", "gamma", "--burstiness", "0"}, []string{"--burstiness 0", "> 0"}},
		{"run burstiness negative", []string{"run", "--base-url", u, "--rate", "5", "--arrival", "gamma", "--burstiness", "-1"}, []string{"--burstiness -1", "> 0"}},
		{"run burstiness negative without rate", []string{"run", "--base-url", u, "--burstiness", "-1"}, []string{"--burstiness -1"}},
		{"run retries -1", []string{"run", "--base-url", u, "--retries", "-1"}, []string{"--retries -1", "0-100"}},
		{"run interval negative", []string{"run", "--base-url", u, "--interval", "-1s"}, []string{"--interval -1s", ">= 0"}},
		{"run continue-on-server-exit with a started server", []string{"run", "--speedup", "1000", "--continue-on-server-exit"}, []string{"--continue-on-server-exit", "did not start"}},
		{"compare drift two dirs", []string{"compare", "--drift", "a", "b"}, []string{"--drift", "one results directory"}},
		{"run request-timeout negative", []string{"run", "--base-url", u, "--request-timeout", "-1s"}, []string{"--request-timeout -1s", ">= 0"}},
		{"run stall-timeout negative", []string{"run", "--base-url", u, "--stall-timeout", "-1s"}, []string{"--stall-timeout -1s", ">= 0"}},
		{"run ready-timeout negative", []string{"run", "--speedup", "1000", "--requests", "1", "--max-tokens", "4", "--ready-timeout", "-1s"}, []string{"--ready-timeout -1s"}},
		{"run metrics-url not a URL", []string{"run", "--base-url", u, "--metrics-url", "not a url"}, []string{`"not a url"`}},
		{"run prometheus-url not a URL", []string{"run", "--base-url", u, "--prometheus-url", "not a url"}, []string{"--prometheus-url", `"not a url"`}},
		{"run prometheus-url and metrics-url", []string{"run", "--base-url", u, "--prometheus-url", u, "--metrics-url", u + "/metrics"}, []string{"--prometheus-url and --metrics-url", "one source"}},
		{"run prometheus-selector without url", []string{"run", "--base-url", u, "--prometheus-selector", `{job="x"}`}, []string{"--prometheus-selector without --prometheus-url"}},
		{"run prometheus-selector unquoted", []string{"run", "--base-url", u, "--prometheus-url", u, "--prometheus-selector", "{job=vllm}"}, []string{"--prometheus-selector", "job", "double-quoted"}},
		{"sweep prometheus-wait negative", []string{"sweep", "--base-url", u, "--prometheus-url", u, "--prometheus-wait", "-1s"}, []string{"--prometheus-wait -1s", ">= 0"}},
		{"run server-cmd unterminated quote", []string{"run", "--base-url", u, "--server-cmd", "'unterminated"}, []string{"unterminated"}},
		{"run prompt empty", []string{"run", "--base-url", u, "--prompt", ""}, []string{`--prompt ""`, "non-empty"}},
		{"run prompt-tokens 0", []string{"run", "--base-url", u, "--prompt-tokens", "0"}, []string{"--prompt-tokens 0", "from 1"}},
		{"run prompt and prompt-file", []string{"run", "--base-url", u, "--prompt", "x", "--prompt-file", f.promptEmpty}, []string{"--prompt-file", "at most one"}},
		{"run prompt-file missing", []string{"run", "--base-url", u, "--prompt-file", missing}, []string{"--prompt-file", missing, "no such file"}},
		{"run prompt-file bad JSON at line 2", []string{"run", "--base-url", u, "--prompt-file", f.promptBadLine2}, []string{f.promptBadLine2 + ":2", `{"prompt"`}},
		{"run prompt-file empty", []string{"run", "--base-url", u, "--prompt-file", f.promptEmpty}, []string{f.promptEmpty, "no prompts", `{"prompt"`}},
		{"run prompt-file neither prompt nor messages", []string{"run", "--base-url", u, "--prompt-file", f.promptNeither}, []string{f.promptNeither + ":1", `{"messages"`}},
		{"run prompt-file line is an array", []string{"run", "--base-url", u, "--prompt-file", f.promptArray}, []string{f.promptArray + ":1", `{"prompt"`}},
		{"run prompt-file is a directory", []string{"run", "--base-url", u, "--prompt-file", f.dir}, []string{f.dir, "directory"}},

		// --- sweep
		{"sweep concurrency 0", []string{"sweep", "--base-url", u, "--concurrency", "0"}, []string{"--concurrency 0", "at least 1"}},
		{"sweep concurrency negative level", []string{"sweep", "--base-url", u, "--concurrency", "-3,4"}, []string{"--concurrency -3", "at least 1"}},
		{"sweep concurrency not a number", []string{"sweep", "--base-url", u, "--concurrency", "x"}, []string{`"x"`, "--concurrency"}},
		{"sweep rate 0", []string{"sweep", "--base-url", u, "--rate", "0,1"}, []string{"--rate 0", "> 0"}},
		{"sweep rate and concurrency", []string{"sweep", "--base-url", u, "--rate", "1", "--concurrency", "2"}, []string{"one of them"}},
		{"sweep stream both", []string{"sweep", "--base-url", u, "--stream", "both"}, []string{`--stream "both"`, "on or off"}},
		{"run repeats with shard", []string{"run", "--base-url", u, "--stream", "on", "--repeats", "2", "--shard", "0/2"}, []string{"--repeats 2 with --shard"}},
		{"sweep repeats with shard", []string{"sweep", "--base-url", u, "--rate", "1,2", "--requests", "4", "--repeats", "3", "--shard", "1/2"}, []string{"--repeats 3 with --shard"}},
		{"sweep max-error-rate 150", []string{"sweep", "--base-url", u, "--max-error-rate", "150"}, []string{"--max-error-rate 150"}},
		{"sweep max-p99-e2e negative", []string{"sweep", "--base-url", u, "--max-p99-e2e", "-1s"}, []string{"--max-p99-e2e -1s"}},
		{"sweep arrival bogus without rate", []string{"sweep", "--base-url", u, "--arrival", "bogus"}, []string{`--arrival "bogus"`}},

		// --- report: results directories
		{"report no directory", []string{"report"}, []string{"one results directory"}},
		{"report directory missing", []string{"report", missing}, []string{missing}},
		{"report results.json missing", []string{"report", f.noResults}, []string{filepath.Join(f.noResults, result.ResultsFile)}},
		{"report results.json bad JSON", []string{"report", f.badJSON}, []string{filepath.Join(f.badJSON, result.ResultsFile) + ":3"}},
		{"report results.json wrong schema", []string{"report", f.wrongSchema}, []string{`"otherbench/v9"`, `"servebench/v1"`}},
		{"report requests.jsonl missing", []string{"report", f.noRecords}, []string{filepath.Join(f.noRecords, result.RequestsFile)}},
		{"report requests.jsonl bad line", []string{"report", f.badRecord}, []string{result.RequestsFile + ":41"}},
		{"report format bogus", []string{"report", f.good, "--format", "bogus"}, []string{`--format "bogus"`, "text, markdown, csv, json"}},

		// --- compare: results files and thresholds
		{"compare one argument", []string{"compare", f.good}, []string{"two arguments"}},
		{"compare NEW missing", []string{"compare", f.good, missing}, []string{missing}},
		{"compare BASE missing", []string{"compare", missing, f.good}, []string{missing}},
		{"compare results.json bad JSON", []string{"compare", f.good, f.badJSON}, []string{result.ResultsFile + ":3", "bad JSON"}},
		{"compare results.json wrong schema", []string{"compare", f.good, f.wrongSchema}, []string{`"otherbench/v9"`, `"servebench/v1"`}},
		{"compare results.json missing", []string{"compare", f.good, f.noResults}, []string{filepath.Join(f.noResults, result.ResultsFile)}},
		{"compare requests.jsonl missing", []string{"compare", f.good, f.noRecords}, []string{filepath.Join(f.noRecords, result.RequestsFile)}},
		{"compare requests.jsonl bad line", []string{"compare", f.good, f.badRecord}, []string{result.RequestsFile + ":41"}},
		{"compare alpha 2", []string{"compare", f.good, f.good, "--alpha", "2"}, []string{"--alpha 2", "(0, 1)"}},
		{"compare alpha NaN", []string{"compare", f.good, f.good, "--alpha", "NaN"}, []string{"--alpha NaN", "(0, 1)"}},
		{"compare threshold NaN", []string{"compare", f.good, f.good, "--max-regression", "client.e2e.median=NaN%"}, []string{`"NaN%"`, "not a number"}},
		{"sweep rate NaN level", []string{"sweep", "--base-url", u, "--rate", "1,NaN"}, []string{"--rate NaN", "> 0"}},
		{"compare alpha 0", []string{"compare", f.good, f.good, "--alpha", "0"}, []string{"--alpha 0", "(0, 1)"}},
		{"compare format bogus", []string{"compare", f.good, f.good, "--format", "bogus"}, []string{`--format "bogus"`, "junit"}},
		{"compare threshold not a number", []string{"compare", f.good, f.good, "--max-regression", "client.e2e.median=ten%"}, []string{`"client.e2e.median=ten%"`, `"ten"`, "10%"}},
		{"compare threshold without unit", []string{"compare", f.good, f.good, "--max-regression", "client.e2e.median=10"}, []string{`"client.e2e.median=10"`, "unit"}},
		{"compare threshold unknown quantity", []string{"compare", f.good, f.good, "--max-regression", "client.bogus.median=10%"}, []string{`"client.bogus"`, "known:"}},
		{"compare threshold unknown statistic", []string{"compare", f.good, f.good, "--max-regression", "client.e2e.p42=10%"}, []string{`"p42"`, "median"}},
		{"compare threshold without =", []string{"compare", f.good, f.good, "--max-regression", "client.e2e.median"}, []string{`"client.e2e.median"`, "QUANTITY.STAT=LIMIT"}},
		{"compare threshold negative", []string{"compare", f.good, f.good, "--max-regression", "client.e2e.median=-10%"}, []string{`"-10%"`, "negative"}},
		{"compare threshold bad unit", []string{"compare", f.good, f.good, "--max-regression", "client.e2e.median=+5parsecs"}, []string{`"+5parsecs"`, "ms"}},

		// --- scrape: /metrics files and URLs
		{"scrape nothing", []string{"scrape"}, []string{"URL", "--file"}},
		{"scrape file missing", []string{"scrape", "--file", missing}, []string{missing, "no such file"}},
		{"scrape file garbage", []string{"scrape", "--file", f.metricsGarbage}, []string{f.metricsGarbage, "line 1"}},
		{"scrape file empty", []string{"scrape", "--file", f.metricsEmpty}, []string{f.metricsEmpty, "vLLM"}},
		{"scrape file is a directory", []string{"scrape", "--file", f.dir}, []string{f.dir, "directory"}},
		{"scrape file and URL", []string{"scrape", "--file", f.metricsEmpty, u}, []string{"URLs or --file"}},
		{"scrape format bogus", []string{"scrape", "--file", f.metricsEmpty, "--format", "bogus"}, []string{`--format "bogus"`, "text, json"}},
		{"scrape URL not a URL", []string{"scrape", "not a url"}, []string{`"not a url"`, "http://host"}},
		{"scrape URL ftp", []string{"scrape", "ftp://x"}, []string{`"ftp://x"`, "http://host"}},
		{"scrape URL without host", []string{"scrape", "http://"}, []string{`"http://"`, "http://host"}},
		{"scrape timeout 0", []string{"scrape", "--timeout", "0", u}, []string{"--timeout 0s", "positive"}},

		// --- engine: the bundled engine's own flags
		{"engine gpu unknown", engine("--gpu", "nope"), []string{`"nope"`, "rtx3060-12gb"}},
		{"engine model unknown", engine("--model", "nope"), []string{`"nope"`, "qwen2.5-7b-instruct"}},
		{"engine model does not fit", engine("--model", "llama-3.1-8b-instruct"), []string{"does not fit", "rtx3060-12gb"}},
		{"engine kv-role unknown", engine("--kv-role", "both"), []string{`--kv-role "both"`, "producer, consumer"}},
		{"engine kv-allocation unknown", engine("--kv-allocation", "slab"), []string{`--kv-allocation "slab"`, "paged, contiguous"}},
		{"engine tensor parallel not dividing heads", engine("--gpu", "h100-80gb", "--model", "llama-3.1-70b-instruct", "--tensor-parallel-size", "3"),
			[]string{"Total number of attention heads (64) must be divisible by tensor parallel size (3)."}},
		{"engine 70B on one H100", engine("--gpu", "h100-80gb", "--model", "llama-3.1-70b-instruct"),
			[]string{"CUDA out of memory", "131.42 GiB per GPU", "79.18 GiB"}},
		{"engine pd with one pool", engine("--pd-prefill", "1"), []string{"--pd-prefill 1 --pd-decode 0", "at least one"}},
		{"engine pd with one pool, validating", engine("--pd-prefill", "1", "--validate"), []string{"--pd-prefill 1 --pd-decode 0", "at least one"}},
		{"engine pd with a kv-role", engine("--pd-prefill", "1", "--pd-decode", "1", "--kv-role", "producer", "--validate"), []string{"--kv-role", "each P/D pool"}},
		{"run prefill without server pd", []string{"run", "--prefill", "2"}, []string{"--prefill and --decode", "--server pd"}},
		{"engine gpu-memory-utilization 1.5", engine("--gpu-memory-utilization", "1.5"), []string{"1.5", "(0, 1]"}},
		{"engine gpu-memory-utilization 0", engine("--gpu-memory-utilization", "0"), []string{"0", "(0, 1]"}},
		{"engine max-model-len -1", engine("--max-model-len", "-1"), []string{"-1", "positive"}},
		{"engine vllm-version latest", engine("--vllm-version", "latest"), []string{`--vllm-version "latest"`, "MAJOR.MINOR"}},
		{"engine max-num-seqs -1", engine("--max-num-seqs", "-1"), []string{"-1", "positive"}},
		{"engine prefix caching on and off", engine("--enable-prefix-caching", "--no-enable-prefix-caching"), []string{"--enable-prefix-caching", "--no-enable-prefix-caching", "contradict"}},
		{"engine fault unknown", engine("--fault", "bogus"), []string{`"bogus"`, "http-error=RATE:STATUS"}},
		{"engine fault rate over 1", engine("--fault", "http-error=2:500"), []string{`"http-error=2:500"`, "[0,1]"}},
		{"engine fault status not an error", engine("--fault", "http-error=0.1:200"), []string{`"http-error=0.1:200"`, "400-599"}},
		{"engine fault count not a number", engine("--fault", "crash-after=x"), []string{`"crash-after=x"`, "N >= 1"}},
		{"engine fault bad duration", engine("--fault", "stall-after=3:forever"), []string{`"stall-after=3:forever"`, "duration"}},
		{"engine port 70000", engine("--port", "70000"), []string{"70000", "0-65535"}},
		{"engine speedup 0", engine("--speedup", "0"), []string{"0", "(0, 1e6]"}},
		{"engine speedup -1", engine("--speedup", "-1"), []string{"-1", "(0, 1e6]"}},
		{"engine speedup NaN", engine("--speedup", "NaN"), []string{"NaN", "(0, 1e6]"}},
		{"engine gpu-memory-utilization NaN", engine("--gpu-memory-utilization", "NaN"), []string{"NaN", "(0, 1]"}},
		{"engine fault rate NaN", engine("--fault", "http-error=NaN:500"), []string{`"http-error=NaN:500"`, "[0,1]"}},
		{"engine startup-speedup NaN", engine("--startup-speedup", "NaN"), []string{"NaN", "(0, 1e6]"}},
		{"engine health-during-load bogus", engine("--health-during-load", "maybe"), []string{`"maybe"`, `"503"`}},
		{"engine host unresolvable", engine("--host", "not a host"), []string{`not a host`}},

		// --- probe
		{"probe no name", []string{"probe"}, []string{"one probe name", "cancel"}},
		{"probe unknown name", []string{"probe", "bogus"}, []string{`"bogus"`, "cancel, midstream-error"}},
		{"probe format bogus", []string{"probe", "cancel", "--base-url", u, "--format", "bogus"}, []string{`--format "bogus"`, "text, json"}},
		{"probe endpoint bogus", []string{"probe", "cancel", "--base-url", u, "--endpoint", "bogus"}, []string{`--endpoint "bogus"`, "chat or completions"}},
		{"probe after 0", []string{"probe", "cancel", "--base-url", u, "--after", "0"}, []string{"--after 0", "at least 1"}},
		{"probe after over max-tokens", []string{"probe", "cancel", "--base-url", u, "--after", "10", "--max-tokens", "5"}, []string{"--after 10", "--max-tokens 5"}},
		{"probe max-tokens -1", []string{"probe", "cancel", "--base-url", u, "--max-tokens", "-1"}, []string{"--max-tokens -1", ">= 0"}},
		{"probe max-model-len -1", []string{"probe", "limits", "--base-url", u, "--max-model-len", "-1"}, []string{"--max-model-len -1", ">= 0"}},
		{"probe watch 0", []string{"probe", "cancel", "--base-url", u, "--watch", "0"}, []string{"--watch 0s", "positive"}},
		{"probe settle negative", []string{"probe", "cancel", "--base-url", u, "--settle", "-1s"}, []string{"--settle -1s", "positive"}},
		{"probe speedup NaN", []string{"probe", "cancel", "--speedup", "NaN", "--ready-timeout", "20s"}, []string{"--speedup NaN", "> 0"}},
		{"probe speedup -1", []string{"probe", "cancel", "--speedup", "-1"}, []string{"--speedup -1", "> 0"}},
		{"probe speedup 0 given explicitly", []string{"probe", "limits", "--speedup", "0", "--ready-timeout", "5s"}, []string{"--speedup 0", "> 0"}},
		{"probe base-url not a URL", []string{"probe", "cancel", "--base-url", "not a url"}, []string{`"not a url"`, "http://HOST:PORT"}},
		{"probe base-url ftp", []string{"probe", "cancel", "--base-url", "ftp://x"}, []string{`"ftp://x"`, "http://HOST:PORT"}},
		{"probe prometheus-selector without url", []string{"probe", "cancel", "--base-url", u, "--prometheus-selector", `{job="x"}`}, []string{"--prometheus-selector without --prometheus-url"}},
		{"probe metrics-url not a URL", []string{"probe", "cancel", "--base-url", u, "--metrics-url", "not a url"}, []string{`"not a url"`}},

		{"probe engine-arg unknown flag", []string{"probe", "limits", "--speedup", "1000", "--ready-timeout", "20s", "--engine-arg=--bogus"}, []string{"--bogus"}},

		// --- startup
		{"startup repeat 0", []string{"startup", "--repeat", "0"}, []string{"--repeat 0", "1 or more"}},
		{"startup poll-interval 0", []string{"startup", "--poll-interval", "0"}, []string{"--poll-interval 0s", "> 0"}},
		{"startup ready-timeout negative", []string{"startup", "--ready-timeout", "-1s"}, []string{"--ready-timeout -1s", "> 0"}},
		{"startup format bogus", []string{"startup", "--format", "bogus"}, []string{`--format "bogus"`, "text, json"}},
		{"startup speedup -1", []string{"startup", "--speedup", "-1"}, []string{"--speedup -1", "> 0"}},
		{"startup speedup NaN", []string{"startup", "--speedup", "NaN"}, []string{"--speedup NaN", "> 0"}},
		{"startup speedup Inf", []string{"startup", "--speedup", "Inf"}, []string{"--speedup +Inf", "> 0", "1e6"}},
		{"startup speedup 0 given explicitly", []string{"startup", "--speedup", "0", "--ready-timeout", "5s"}, []string{"--speedup 0", "> 0"}},
		{"startup server preset bogus", []string{"startup", "--server", "bogus"}, []string{`"bogus"`, "bundled, vllm"}},
		{"startup server-cmd unterminated quote", []string{"startup", "--server-cmd", "vllm 'serve"}, []string{"--server-cmd", "unterminated"}},
		{"startup base-url not a URL", []string{"startup", "--server-cmd", "x", "--base-url", "not a url"}, []string{"--base-url", `"not a url"`, "http://HOST:PORT"}},
		{"startup health-path without slash", []string{"startup", "--server-cmd", "x", "--health-path", "health"}, []string{`"health"`, "starting with /"}},
		{"startup gpu unknown", []string{"startup", "--speedup", "1000", "--gpu", "nope"}, []string{"--gpu", `"nope"`, "rtx3060-12gb"}},
		{"startup model unknown", []string{"startup", "--speedup", "1000", "--model", "nope"}, []string{"--model", `"nope"`, "qwen2.5-7b-instruct"}},
		{"startup engine-arg unknown flag", []string{"startup", "--quiet", "--out", f.path("startup-out"), "--speedup", "1000", "--ready-timeout", "20s", "--engine-arg=--bogus"}, []string{"refused its flags", "--bogus"}},
		{"startup from-log missing", []string{"startup", "--from-log", missing}, []string{"--from-log", missing}},
		{"startup from-log is a directory", []string{"startup", "--from-log", f.dir}, []string{"--from-log", f.dir, "directory"}},
		{"startup out not creatable", []string{"startup", "--speedup", "1000", "--out", "/proc/servebench-nope"}, []string{"--out", "/proc/servebench-nope"}},
	}
}

// TestBadInput runs every command with each kind of bad flag and file it
// reads: each must exit 2 before measuring anything, with stderr naming the
// bad value and what was expected.
func TestBadInput(t *testing.T) {
	f := makeBadInputFiles(t)
	// A row that slips through writes servebench-results/ under the working
	// directory: keep that out of the source tree.
	t.Chdir(t.TempDir())
	seen := map[string]bool{}
	for _, c := range badInputCases(f) {
		if seen[c.name] {
			t.Fatalf("duplicate row %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runMain(c.args...)
			if code != exitUsage {
				t.Errorf("servebench %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), code, exitUsage, stdout, stderr)
				return
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("servebench %s: stderr lacks %q:\n%s", strings.Join(c.args, " "), w, stderr)
				}
			}
			if n := strings.Count(stderr, "\n"); n > 4 && !strings.Contains(stderr, "known:") {
				t.Errorf("a usage error should be short, got %d lines:\n%s", n, stderr)
			}
		})
	}
}

// TestBadInputAgainstServer: input that only a running server can show to
// be wrong (a model it does not serve, more tokens than its context) is
// still bad input: exit 2 before the run, naming the value and what the
// server offers, rather than a run of failed requests.
func TestBadInputAgainstServer(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.Speedup = 200 })
	t.Chdir(t.TempDir())
	u := e.BaseURL()
	for _, c := range []badInputCase{
		{"run model not served", []string{"run", "--base-url", u, "--model", "nope", "--requests", "2", "--max-tokens", "4"},
			[]string{`"nope"`, "Qwen/Qwen2.5-7B-Instruct-AWQ"}},
		{"run max-tokens over the context", []string{"run", "--base-url", u, "--max-tokens", "5000", "--requests", "1"},
			[]string{"--max-tokens 5000", "4096"}},
		{"probe model not served", []string{"probe", "limits", "--base-url", u, "--model", "nope"},
			[]string{`"nope"`, "Qwen/Qwen2.5-7B-Instruct-AWQ"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runMain(c.args...)
			if code != exitUsage {
				t.Fatalf("servebench %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), code, exitUsage, stdout, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
	// When every request failed, stderr says why (the server's message),
	// not only the error classes.
	t.Run("every request failed says why", func(t *testing.T) {
		// A server that lists no models (so --model is taken at its word)
		// and refuses every request, as a proxy in front of vLLM might.
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error": {"message": "The model `+"`nope`"+` does not exist.", "code": 404}}`)
		}))
		defer srv.Close()
		code, _, stderr := runMain("run", "--base-url", srv.URL, "--model", "nope", "--requests", "2", "--max-tokens", "4", "--quiet")
		if code != exitInvalidRun || !strings.Contains(stderr, "does not exist") || strings.Contains(stderr, "map[") {
			t.Errorf("exit %d (want 3); stderr should give the server's reason without a Go map:\n%s", code, stderr)
		}
	})
}
