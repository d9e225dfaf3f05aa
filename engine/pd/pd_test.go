package pd_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/servebench/servebench/engine/pd"
	"github.com/servebench/servebench/engine/pd/pdtest"
	"github.com/servebench/servebench/engine/perf"
	"github.com/servebench/servebench/engine/sim"
)

const speedup = 20

// startPD runs a 1 prefill + 1 decode deployment of Llama-3.1-8B on H100s
// with a 10 Gb/s KV link and returns the router's URL and the instances.
func startPD(t *testing.T) (string, []pd.Instance) {
	t.Helper()
	o := sim.DefaultOptions()
	o.GPU, o.Model, o.MaxModelLen = "h100-80gb", "llama-3.1-8b-instruct", 8192
	o.Speedup, o.StartupSpeedup, o.KVLinkGbps = speedup, 1000, 10
	o.Log = io.Discard
	return pdtest.Start(t, pd.Options{Engine: o, Prefill: 1, Decode: 1})
}

// metric is a histogram's sum and count, or a counter, at url.
func metric(t *testing.T, url, name string) (sum, count float64) {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	tp := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := tp.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	f := fams[name]
	if f == nil || len(f.Metric) == 0 {
		return -1, -1
	}
	m := f.Metric[0]
	if h := m.Histogram; h != nil {
		return h.GetSampleSum(), float64(h.GetSampleCount())
	}
	return m.GetCounter().GetValue(), 1
}

// TestPDRequest: one streamed request through the router is prefilled by
// the prefill instance (one token), its prompt KV crosses the 10 Gb/s link
// (vllm:nixl_xfer_time_seconds on the decode instance: prompt x 128 KiB x
// 8 bits / 10 Gb/s), and the decode instance streams the answer. TTFT,
// TPOT and the transfer are printed apart; the client's TTFT holds the
// prefill and the transfer.
func TestPDRequest(t *testing.T) {
	base, inst := startPD(t)
	if len(inst) != 2 || inst[0].Role != "prefill" || inst[1].Role != "decode" {
		t.Fatalf("instances %+v, want one prefill then one decode", inst)
	}
	prompt := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 200)
	body := fmt.Sprintf(`{"prompt":%q,"max_tokens":64,"ignore_eos":true,"stream":true}`, prompt)
	start := time.Now()
	resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var first time.Duration
	events := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: {") {
			if events == 0 {
				first = time.Since(start)
			}
			events++
		}
	}
	resp.Body.Close()
	e2e := time.Since(start)
	if events != 64 {
		t.Fatalf("%d content events, want 64", events)
	}
	p, d := inst[0].URL, inst[1].URL
	gen, _ := metric(t, p, "vllm:generation_tokens_total")
	prompts, _ := metric(t, d, "vllm:prompt_tokens_total")
	pTTFT, _ := metric(t, p, "vllm:time_to_first_token_seconds")
	dTTFT, _ := metric(t, d, "vllm:time_to_first_token_seconds")
	xfer, n := metric(t, d, "vllm:nixl_xfer_time_seconds")
	xbytes, _ := metric(t, d, "vllm:nixl_bytes_transferred")
	m, _ := perf.LookupModel("llama-3.1-8b-instruct")
	want := prompts * float64(m.KVBytesPerToken()) * 8 / 10e9 / speedup
	t.Logf("prompt %.0f tokens: prefill instance TTFT %.1f ms, KV transfer %.1f ms (%.0f MB), decode instance TTFT %.1f ms (transfer included), client TTFT %.1f ms, TPOT %.2f ms (modelled: x%d)",
		prompts, pTTFT*1000*speedup, xfer*1000*speedup, xbytes/1e6, dTTFT*1000*speedup, first.Seconds()*1000*speedup,
		(e2e-first).Seconds()*1000*speedup/63, speedup)
	if gen != 1 {
		t.Errorf("prefill instance generated %.0f tokens, want 1 (max_tokens 1)", gen)
	}
	if n != 1 || xfer < want*0.99 || xfer > want*1.01 {
		t.Errorf("decode instance: %.0f transfers taking %.4f s, want 1 of %.4f s", n, xfer, want)
	}
	if xbytes != prompts*float64(m.KVBytesPerToken()) {
		t.Errorf("%.0f bytes transferred, want %.0f", xbytes, prompts*float64(m.KVBytesPerToken()))
	}
	if first.Seconds() < pTTFT+xfer {
		t.Errorf("client TTFT %.4f s is under prefill %.4f s + transfer %.4f s", first.Seconds(), pTTFT, xfer)
	}
	if dTTFT < xfer {
		t.Errorf("decode instance TTFT %.4f s does not hold the transfer %.4f s", dTTFT, xfer)
	}
}
