package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/reporttest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixture is a small two-run result set: three streaming requests of four
// tokens plus one that failed (and a warm-up that must not appear), two
// non-streaming ones.
func fixture() (*result.Results, []result.Record) {
	res, recs := reporttest.Build("vllm",
		reporttest.RunSpec{Name: "streaming", Stream: true, N: 3, Tokens: 4, FirstVisible: 0.03, PerToken: 0.015, EngineTTFT: 0.028},
		reporttest.RunSpec{Name: "non-streaming", N: 2, Tokens: 4, FirstVisible: 0.03, PerToken: 0.015, EngineTTFT: 0.028})
	st := res.Runs[0].StartedAt
	recs = append(recs,
		result.Record{Run: "streaming", Index: 3, Stream: true, Start: st.Add(2e9), Status: 503, TTFBS: 0.001, E2ES: 0.002,
			Error: "http_status", ErrorText: "503 Service Unavailable, \"overloaded\""},
		result.Record{Run: "streaming", Index: 0, Warmup: true, Stream: true, Start: st, E2ES: 9, FirstTokenS: 9, OutputTokens: 4})
	res.Runs[0].Requests, res.Runs[0].Errors = 4, map[string]int{"http_status": 1}
	recs[0].Session, recs[0].Turn = "s1", 2 // a turn of a multi-turn session
	res.Runs[0].Goodput = &result.Goodput{SLO: "ttft=200ms", Attained: 3, Requests: 4, Attainment: 75, RatePerS: 12.5}
	return res, recs
}

// vllmKeys are the keys of `vllm bench serve --save-result --save-detailed`
// (vllm/benchmarks/serve.py: main_async's result_json, benchmark()'s
// result dict and process_one_metric's keys for --percentile-metrics
// ttft,tpot,itl,e2el --metric-percentiles 99), in the order vLLM writes them.
var vllmKeys = []string{
	"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
	"request_rate", "burstiness", "max_concurrency",
	"duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
	"request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
	"input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "queue_times",
	"generated_texts", "errors", "max_output_tokens_per_s", "max_concurrent_requests", "rtfx",
	"mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms",
	"mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "p99_tpot_ms",
	"mean_itl_ms", "median_itl_ms", "std_itl_ms", "p99_itl_ms",
	"mean_e2el_ms", "median_e2el_ms", "std_e2el_ms", "p99_e2el_ms",
}

// objectLines decodes b as vLLM's --append-result leaves a file: one JSON
// object per line, each line decoded on its own.
func objectLines(t *testing.T, b []byte) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d: not one JSON object: %v", i+1, err)
		}
		out = append(out, json.RawMessage(line))
	}
	return out
}

// topKeys lists the keys of each JSON object in b (one per line), in order.
func topKeys(t *testing.T, b []byte) [][]string {
	t.Helper()
	var out [][]string
	for _, r := range objectLines(t, b) {
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.Token() // {
		var keys []string
		for dec.More() {
			k, _ := dec.Token()
			keys = append(keys, k.(string))
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, keys)
	}
	return out
}

func TestVLLM(t *testing.T) {
	res, recs := fixture()
	var b bytes.Buffer
	if err := VLLM(&b, res, recs, Options{}); err != nil {
		t.Fatal(err)
	}
	reporttest.CheckGolden(t, filepath.Join("testdata", t.Name()+".golden"), b.Bytes(), *update)

	for i, keys := range topKeys(t, b.Bytes()) {
		want := append(slices.Clone(vllmKeys), ExtraKey)
		if !slices.Equal(keys, want) {
			t.Errorf("run %d keys:\n got %v\nwant %v", i, keys, want)
		}
	}
	var runs []map[string]any
	for _, line := range objectLines(t, b.Bytes()) {
		var m map[string]any
		json.Unmarshal(line, &m)
		runs = append(runs, m)
	}
	if len(runs) != 2 {
		t.Fatalf("%d objects, want one per run (2)", len(runs))
	}
	s := runs[0]
	// The failed request is in the arrays (vLLM keeps every request), not in the figures.
	if s["num_prompts"] != 4.0 || s["completed"] != 3.0 || s["failed"] != 1.0 {
		t.Errorf("num_prompts/completed/failed = %v/%v/%v, want 4/3/1", s["num_prompts"], s["completed"], s["failed"])
	}
	if errs := s["errors"].([]any); errs[3] == "" || errs[0] != "" {
		t.Errorf("errors = %v: want the fourth request's class and text only", errs)
	}
	// Units: *_ms keys in milliseconds, arrays in seconds, from the records.
	stream := recs[:3]
	wantTTFT := (stream[0].FirstTokenS + stream[1].FirstTokenS + stream[2].FirstTokenS) / 3 * 1000
	if got := s["mean_ttft_ms"].(float64); math.Abs(got-wantTTFT) > 1e-9 {
		t.Errorf("mean_ttft_ms = %v, want %v (mean client first_token in ms)", got, wantTTFT)
	}
	if got := s["ttfts"].([]any)[1].(float64); got != stream[1].FirstTokenS {
		t.Errorf("ttfts[1] = %v, want %v s", got, stream[1].FirstTokenS)
	}
	if got := len(s["itls"].([]any)[0].([]any)); got != 3 {
		t.Errorf("itls[0] has %d gaps, want 3 (4 token events)", got)
	}
	if s["request_goodput"] != 12.5 || runs[1]["request_goodput"] != nil {
		t.Errorf("request_goodput = %v, %v: want the --slo goodput, null without one", s["request_goodput"], runs[1]["request_goodput"])
	}
	if s["max_concurrency"] != 1.0 || s["request_rate"] != "inf" || s["backend"] != "openai-chat" {
		t.Errorf("traffic = rate %v, max_concurrency %v, backend %v: want inf, 1, openai-chat", s["request_rate"], s["max_concurrency"], s["backend"])
	}
	if x := s[ExtraKey].(map[string]any); x["run"] != "streaming" || x["engine"].(map[string]any)["ttft_s"] == nil {
		t.Errorf("%s = %v: want the run name and the engine figures", ExtraKey, x)
	}
}

func TestVLLMOneRunIsAnObject(t *testing.T) {
	res, recs := fixture()
	res.Runs = res.Runs[:1]
	var b bytes.Buffer
	if err := VLLM(&b, res, recs, Options{Percentiles: []float64{50, 99.9}}); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatalf("one run: want one JSON object as vLLM writes: %v", err)
	}
	for _, k := range []string{"p50_ttft_ms", "p99.9_itl_ms", "p50_e2el_ms"} {
		if _, ok := m[k]; !ok {
			t.Errorf("--metric-percentiles 50,99.9: key %s missing", k)
		}
	}
	if _, ok := m["p99_ttft_ms"]; ok {
		t.Error("p99_ttft_ms written though 99 was not asked for")
	}
}

func TestCSV(t *testing.T) {
	res, recs := fixture()
	var b bytes.Buffer
	if err := CSV(&b, res, recs); err != nil {
		t.Fatal(err)
	}
	reporttest.CheckGolden(t, filepath.Join("testdata", t.Name()+".golden"), b.Bytes(), *update)
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatalf("not RFC 4180: %v", err)
	}
	if len(rows) != 1+4+2 {
		t.Fatalf("%d rows, want header + 4 streaming + 2 non-streaming (no warm-up)", len(rows))
	}
	if !slices.Equal(rows[0], CSVHeader) {
		t.Errorf("header %v", rows[0])
	}
	if r := rows[4]; r[5] != "http_status" || r[4] != "503" || r[11] != "0.002000" || r[12] != "" {
		t.Errorf("failed request row = %v", r)
	}
	if r := rows[1]; r[12] == "" || r[13] == "" || r[2] != "s1" || r[3] != "2" {
		t.Errorf("streaming row without tpot or mean ITL: %v", r)
	}
}

func TestPercentileIsNumpys(t *testing.T) {
	s := []float64{1, 2, 3, 4}
	// np.percentile([1,2,3,4], [0, 50, 99, 100]) = [1, 2.5, 3.97, 4]
	for p, want := range map[float64]float64{0: 1, 50: 2.5, 99: 3.97, 100: 4} {
		if got := Percentile(s, p); math.Abs(got-want) > 1e-12 {
			t.Errorf("Percentile(%v) = %v, want %v", p, got, want)
		}
	}
	if Percentile(nil, 99) != 0 {
		t.Error("no samples: want 0, as np.percentile(xs or 0)")
	}
}

func TestReadVLLM(t *testing.T) {
	res, recs := fixture()
	var b bytes.Buffer
	if err := VLLM(&b, res, recs, Options{}); err != nil {
		t.Fatal(err)
	}
	vs, err := ReadVLLM("x.json", b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].Servebench.Run != "streaming" {
		t.Fatalf("read %d results", len(vs))
	}
	back := vs[0].Records("streaming", res.Runs[0].StartedAt)
	if len(back) != 4 || back[3].Error != ErrorClass || back[0].FirstTokenS != recs[0].FirstTokenS ||
		back[0].E2ES != recs[0].E2ES || len(back[0].Events) != len(recs[0].Events) {
		t.Errorf("records back: %+v", back[0])
	}
	if wl := vs[0].Workload(); wl.Mode != "sequential" || wl.Endpoint != "chat" || wl.Model != res.Runs[0].Workload.Model {
		t.Errorf("workload back: %+v", wl)
	}

	// vLLM's --append-result: objects one after another.
	one, _ := json.Marshal(map[string]any{"ttfts": []float64{0.1}, "itls": [][]float64{{}}, "input_lens": []int{5},
		"output_lens": []int{1}, "errors": []string{""}, "request_rate": 2.5, "burstiness": 0.5})
	vs, err = ReadVLLM("a.json", append(append(one, '\n'), one...))
	if err != nil || len(vs) != 2 {
		t.Fatalf("appended results: %d, %v", len(vs), err)
	}
	if wl := vs[1].Workload(); wl.Mode != "rate" || wl.Rate != 2.5 || wl.Arrival != "gamma" || wl.Burstiness != 0.5 {
		t.Errorf("rate workload: %+v", wl)
	}
	// --burstiness inf: Python's json.dump writes a bare Infinity.
	inf := strings.Replace(string(one), `"burstiness":0.5`, `"burstiness": Infinity`, 1)
	vs, err = ReadVLLM("inf.json", []byte(inf))
	if err != nil || vs[0].Workload().Arrival != "constant" {
		t.Errorf("burstiness Infinity: %v, %+v; want a constant arrival", err, vs)
	}
}

func TestReadVLLMRefusesSummaryOnly(t *testing.T) {
	data := []byte("{\"date\": \"20250101-000000\",\n \"mean_ttft_ms\": 12.5, \"latencies\": [0.1]}\n")
	_, err := ReadVLLM("sum.json", data)
	if !errors.Is(err, ErrNotDetailed) || !errors.Is(err, result.ErrInput) || !strings.Contains(err.Error(), "--save-detailed") ||
		!strings.HasPrefix(err.Error(), "sum.json:1:") {
		t.Errorf("err = %v: want sum.json:1 naming --save-detailed", err)
	}
}

// TestVLLMQueueTimes: queue_times is vLLM's client_queue_time, send time
// minus arrival time: from the run's start for a closed loop (vLLM's
// --request-rate inf --max-concurrency N: all arrive at once and wait for a
// slot), the send lag for an open loop (arrival at the intended send time).
func TestVLLMQueueTimes(t *testing.T) {
	res, recs := fixture()
	res.Runs = res.Runs[:1]
	objOf := func() map[string]any {
		t.Helper()
		runs, err := VLLMRuns(res, recs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(runs[0].JSON, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := objOf()
	qs, starts := m["queue_times"].([]any), m["start_times"].([]any)
	if len(qs) != 4 || qs[3].(float64) <= 0 {
		t.Fatalf("closed loop queue_times = %v: want 4, the later ones waiting", qs)
	}
	for i := range qs {
		if qs[i] != starts[i] {
			t.Errorf("closed loop queue_times[%d] = %v, want its send time from the start %v", i, qs[i], starts[i])
		}
	}

	res.Runs[0].Workload.Mode, res.Runs[0].Workload.Rate = "rate", 4
	lags := map[int]float64{}
	for i := range recs {
		if recs[i].Run == "streaming" && !recs[i].Warmup {
			recs[i].IntendedLagS = 0.001 * float64(recs[i].Index+1)
			lags[recs[i].Index] = recs[i].IntendedLagS
		}
	}
	qs = objOf()["queue_times"].([]any)
	for i, q := range qs {
		if q != lags[i] {
			t.Errorf("open loop queue_times[%d] = %v, want the send lag %v", i, q, lags[i])
		}
	}
}

// TestAppended: appending runs leaves a file vLLM's --append-result could
// have written, one object per line, whatever the file held before.
func TestAppended(t *testing.T) {
	res, recs := fixture()
	runs, err := VLLMRuns(res, recs, Options{})
	if err != nil || len(runs) != 2 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	var file []byte
	file = append(file, Appended(file, runs[:1])...)
	if !bytes.HasSuffix(file, []byte("}\n")) {
		t.Errorf("no newline after the object: a text file ends its last line\n%q", file)
	}
	file = append(file, Appended(file, runs)...)
	file = bytes.TrimSuffix(file, []byte("\n")) // a file vLLM appended to last: no final newline
	file = append(file, Appended(file, runs[1:])...)
	if !bytes.HasSuffix(file, []byte("}\n")) || bytes.Contains(file, []byte("\n\n")) {
		t.Errorf("want whole lines, one object each, and no blank line:\n%q", file)
	}
	lines := objectLines(t, file)
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4 objects:\n%s", len(lines), file)
	}
	vs, err := ReadVLLM("appended.json", file)
	if err != nil || len(vs) != 4 || vs[3].Servebench.Run != "non-streaming" {
		t.Errorf("read back: %d results, %v", len(vs), err)
	}
}
