package sim_test

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// loraChat is a chat body naming an adapter as its model.
func loraChat(adapter string, maxTokens int, stream bool) map[string]any {
	b := chat("tell me", maxTokens, stream)
	b["model"] = adapter
	return b
}

func drain(t testing.TB, resp *http.Response) {
	t.Helper()
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %s", resp.Status)
	}
}

// TestLoRAModels: adapters are models of their own in /v1/models (root
// their path, parent the base model), a request may name one, an unknown
// name is 404, and --max-loras without adapters is refused.
func TestLoRAModels(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.LoRAModules = []string{"sql=/adapters/sql", "chat"} })
	resp, err := http.Get(e.BaseURL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []struct {
			ID, Root string
			Parent   *string
		}
	}
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list.Data) != 3 || list.Data[1].ID != "sql" || list.Data[1].Root != "/adapters/sql" ||
		list.Data[1].Parent == nil || *list.Data[1].Parent != servedModel || list.Data[2].ID != "chat" {
		t.Errorf("models %+v", list.Data)
	}
	drain(t, post(t, e, "/v1/chat/completions", loraChat("sql", 3, false)))
	if r := post(t, e, "/v1/chat/completions", loraChat("nope", 3, false)); r.StatusCode != 404 {
		t.Errorf("unknown adapter: %s", r.Status)
	}
	o := sim.DefaultOptions()
	o.MaxLoRAs = 2
	if _, err := sim.New(o); !isFieldError(err, "MaxLoRAs") || !strings.Contains(err.Error(), "needs LoRAModules") {
		t.Errorf("--max-loras without adapters: %v", err)
	}
}

// TestLoRAMaxLoRAs: four requests on four adapters at once run together
// with --max-loras 4 and one adapter at a time with --max-loras 1, where the
// others wait (engine queue time) while vllm:lora_requests_info names the
// running adapter and the waiting ones. Requests are 512 tokens long: with
// four slots a request still waits up to a step for the batch to take it,
// longer when a loaded host runs the loop late (0.009 s summed over four,
// against 0.056 s with one slot at 64 tokens); that wait does not grow with
// the request, the wait behind whole requests does.
func TestLoRAMaxLoRAs(t *testing.T) {
	queue := map[int]float64{}
	for _, slots := range []int{1, 4} {
		e := simtest.Start(t, func(o *sim.Options) {
			o.LoRAModules, o.MaxLoRAs = []string{"a", "b", "c", "d"}, slots
		})
		var wg sync.WaitGroup
		for _, a := range []string{"a", "b", "c", "d"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				drain(t, post(t, e, "/v1/chat/completions", loraChat(a, 512, false)))
			}()
		}
		wg.Wait()
		fams := scrape(t, e)
		queue[slots] = histSum(fams, "vllm:request_queue_time_seconds")
		info := fams["vllm:lora_requests_info"]
		if info == nil {
			t.Fatalf("max-loras %d: no vllm:lora_requests_info", slots)
		}
		waitedWith := false
		for _, m := range info.Metric {
			l := map[string]string{}
			for _, p := range m.Label {
				l[p.GetName()] = p.GetValue()
			}
			if l["max_lora"] != string(rune('0'+slots)) {
				t.Errorf("max_lora label %q, want %d", l["max_lora"], slots)
			}
			if slots == 1 && strings.Count(l["running_lora_adapters"], ",") == 0 && strings.Count(l["waiting_lora_adapters"], ",") >= 1 {
				waitedWith = true
			}
			if slots == 1 && strings.Contains(l["running_lora_adapters"], ",") {
				t.Errorf("max-loras 1 ran adapters %q together", l["running_lora_adapters"])
			}
		}
		if slots == 1 && !waitedWith {
			t.Errorf("max-loras 1: no series shows one adapter running while others wait: %v", info.Metric)
		}
	}
	// One at a time: the 2nd, 3rd and 4th wait 1, 2 and 3 requests' worth.
	if queue[1] < 0.16 || queue[1] < 10*queue[4] {
		t.Errorf("engine queue time sum %.3f s with one slot, %.3f s with four: want far more with one", queue[1], queue[4])
	}
}

// TestLoRASwapCost: with one slot, requests alternating between two
// adapters each copy theirs in, requests on one adapter only the first
// time: the engine's TTFT sum differs by three swaps (a rank-256 adapter
// of the 7B model: ~16.5 ms each at real speed).
func TestLoRASwapCost(t *testing.T) {
	ttft := map[string]float64{}
	for _, order := range []string{"abab", "aaaa"} {
		e := simtest.Start(t, func(o *sim.Options) {
			o.Speedup, o.LoRAModules, o.MaxLoRARank = 1, []string{"a", "b"}, 256
			quick(o)
		})
		for _, a := range order {
			drain(t, post(t, e, "/v1/chat/completions", loraChat(string(a), 1, false)))
		}
		ttft[order] = histSum(scrape(t, e), "vllm:time_to_first_token_seconds")
	}
	swap := sim.LoRASwapTime(28, 3584, 256).Seconds()
	if got := ttft["abab"] - ttft["aaaa"]; math.Abs(got-3*swap) > 0.3*3*swap {
		t.Errorf("TTFT sums %.4f (alternating) and %.4f (one adapter) differ by %.4f s, want 3 swaps = %.4f s",
			ttft["abab"], ttft["aaaa"], got, 3*swap)
	}
}

// TestLoRAPrefixCache: the same prompt on the same adapter hits the
// prefix cache, on another adapter (or the base model) it does not: an
// adapter's blocks are its own, as vLLM hashes the adapter into them.
func TestLoRAPrefixCache(t *testing.T) {
	e := simtest.Start(t, func(o *sim.Options) { o.LoRAModules, o.MaxLoRAs = []string{"a", "b"}, 2 })
	long := strings.Repeat("the model server answers ", 20)
	hits := func() float64 { return value(scrape(t, e), "vllm:prefix_cache_hits_total") }
	send := func(model string) {
		b := chat(long, 2, false)
		b["model"] = model
		drain(t, post(t, e, "/v1/chat/completions", b))
	}
	send("a")
	send("b")
	send(servedModel)
	if h := hits(); h != 0 {
		t.Errorf("%v prefix cache hits across adapters and the base model, want 0", h)
	}
	send("a")
	if h := hits(); h < 64 {
		t.Errorf("%v prefix cache hits for the same prompt on the same adapter, want its full blocks", h)
	}
}
