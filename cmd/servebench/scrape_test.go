package main

import (
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/sim/simtest"
)

// The -update flag may be declared by another command's test in this
// package; register it only if nobody has (package vars run before init).
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite testdata/*.golden from the current output")
	}
}

func scrapeUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

const scrapeFixtures = "../../testdata/fixtures/"

// TestScrapeFileJSON is the golden test of `servebench scrape --file
// --format json` on the real vLLM scrape.
func TestScrapeFileJSON(t *testing.T) {
	code, out, errOut := runMain("scrape", "--file", scrapeFixtures+"vllm_v1_metrics_qwen2.5-1.5b.txt", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	golden := filepath.Join("testdata", t.Name()+".golden")
	if scrapeUpdate() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if out != string(want) {
		t.Errorf("output differs from %s (run with -update after checking):\n%s", golden, out)
	}
	// The documented shape, independent of the golden bytes.
	var doc struct {
		Dialect    string                        `json:"dialect"`
		Quantities map[string]map[string]float64 `json:"quantities"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Dialect != "vllm" || len(doc.Quantities) != 15 {
		t.Errorf("dialect %q with %d quantities, want vllm with all 15 it maps", doc.Dialect, len(doc.Quantities))
	}
	for k, v := range doc.Quantities {
		keys := make([]string, 0, len(v))
		for f := range v {
			keys = append(keys, f)
		}
		slices.Sort(keys)
		want := []string{"value"}
		if strings.HasSuffix(k, "_s") {
			want = []string{"count", "mean", "sum"}
		}
		if !slices.Equal(keys, want) {
			t.Errorf("%s has fields %v, want %v", k, keys, want)
		}
	}
	if ttft := doc.Quantities["engine.ttft_s"]; ttft["count"] != 10 || ttft["sum"] != 1.4721317291259766 {
		t.Errorf("engine.ttft_s = %v, want count 10 and the fixture's sum 1.4721317291259766", ttft)
	}
}

// TestScrapeText: the text form names the dialect, says the figures are
// cumulative, and lists what TGI does not export.
func TestScrapeText(t *testing.T) {
	code, out, _ := runMain("scrape", "--file", scrapeFixtures+"tgi_metrics_constructed.txt")
	for _, want := range []string{"dialect: tgi", "Cumulative totals since the server started", "not exported: engine.ttft_s", "engine.ttft is unavailable", "tgi_request_duration"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d; output lacks %q:\n%s", code, want, out)
		}
	}
}

// TestScrapeURL fetches over HTTP; a base URL gets /metrics appended, and
// two URLs are summed.
func TestScrapeURL(t *testing.T) {
	raw, err := os.ReadFile(scrapeFixtures + "sglang_metrics_docs_example.txt")
	if err != nil {
		t.Fatal(err)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Write(raw)
	})
	srv, srv2 := httptest.NewServer(handler), httptest.NewServer(handler)
	defer srv.Close()
	defer srv2.Close()
	quantity := func(args ...string) map[string]float64 {
		code, out, errOut := runMain(append([]string{"scrape", "--format", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d, %s", args, code, errOut)
		}
		var doc struct {
			Dialect    string
			Quantities map[string]map[string]float64
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Dialect != "sglang" {
			t.Fatalf("%v: %v, dialect %q", args, err, doc.Dialect)
		}
		return doc.Quantities["engine.generation_tokens"]
	}
	// sglang:generation_tokens_total is 7.557572e+06 in the fixture.
	if v := quantity(srv.URL)["value"]; v != 7557572 {
		t.Errorf("one URL: generation tokens %g, want 7557572", v)
	}
	if v := quantity(srv.URL+"/metrics", srv2.URL)["value"]; v != 2*7557572 {
		t.Errorf("two replicas: generation tokens %g, want twice 7557572", v)
	}
}

// TestScrapeErrors: bad input exits 2 with a message naming it.
func TestScrapeErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	unknown := filepath.Join(dir, "unknown.txt")
	os.WriteFile(bad, []byte("# TYPE a counter\na{x=\"1\" 1\n"), 0o644)
	os.WriteFile(unknown, []byte("process_open_fds 5\n"), 0o644)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"missing file", []string{"--file", filepath.Join(dir, "nope.txt")}, []string{"nope.txt"}},
		{"unparsable file", []string{"--file", bad}, []string{bad, "line 2"}},
		{"no server metrics", []string{"--file", unknown}, []string{unknown, "no vLLM, SGLang, TGI or llama.cpp metrics"}},
		{"not a URL", []string{"localhost:8000"}, []string{`"localhost:8000"`, "http://"}},
		{"bad format", []string{"--format", "yaml", "--file", bad}, []string{`"yaml"`, "text, json"}},
		{"bad timeout", []string{"--timeout", "0s", closed.URL}, []string{"--timeout"}},
		{"both", []string{"--file", bad, closed.URL}, []string{"not both"}},
		{"neither", nil, []string{"--file"}},
	}
	for _, c := range cases {
		code, _, errOut := runMain(append([]string{"scrape"}, c.args...)...)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want %d; stderr %q", c.name, code, exitUsage, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: stderr %q lacks %q", c.name, errOut, w)
			}
		}
	}
	// A well-formed URL nothing answers at is an unreachable server (exit
	// 3, as run, table and probe say), not bad input.
	code, _, errOut := runMain("scrape", closed.URL)
	if code != exitInvalidRun || !strings.Contains(errOut, closed.URL+"/metrics") {
		t.Errorf("nothing listening: exit %d, want %d naming the URL; stderr %q", code, exitInvalidRun, errOut)
	}
}

// TestScrapeModelFilter: an unknown --model leaves the JSON shape intact and
// warns on stderr.
func TestScrapeModelFilter(t *testing.T) {
	file := scrapeFixtures + "vllm_v1_metrics_qwen2.5-1.5b.txt"
	code, out, errOut := runMain("scrape", "--file", file, "--format", "json", "--model", "other")
	if code != 0 || !strings.Contains(errOut, `"other" matches no series`) || !strings.Contains(errOut, `"qwen2.5-1.5b"`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if strings.Contains(out, "engine.ttft_s") {
		t.Errorf("model other has no TTFT, output:\n%s", out)
	}
	_, out2, _ := runMain("scrape", "--file", file, "--format", "json", "--model", "qwen2.5-1.5b")
	_, all, _ := runMain("scrape", "--file", file, "--format", "json")
	if out2 != all {
		t.Errorf("the only model selected should equal no filter:\n%s\nvs\n%s", out2, all)
	}
}

// TestScrapeBundledEngine reads the bundled engine's /metrics through the
// command, from its base URL.
func TestScrapeBundledEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the bundled engine")
	}
	e := simtest.Start(t, nil)
	code, out, errOut := runMain("scrape", e.BaseURL())
	if code != 0 || !strings.Contains(out, "dialect: vllm") || !strings.Contains(out, "engine.ttft_s") {
		t.Errorf("exit %d, stderr %q, output:\n%s", code, errOut, out)
	}
}
