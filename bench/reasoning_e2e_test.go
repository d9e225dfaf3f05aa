package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/engine/sim"
)

// engineCounter reads one unlabelled-by-us counter from the engine's
// /metrics, summed over its series.
func engineCounter(t *testing.T, e *sim.Engine, name string) float64 {
	t.Helper()
	resp, err := http.Get(e.BaseURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		sum += v
	}
	return sum
}

// TestReasoningEndToEnd runs the seed's two runs against a bundled engine
// that thinks, for each parser and both field names: every request's
// reasoning and answer tokens add up to its output, its reasoning count is
// the engine's own, its first answer comes after its thinking, and the
// output tokens of all requests are the engine's generation-token counter.
func TestReasoningEndToEnd(t *testing.T) {
	for _, tc := range []struct{ parser, field string }{
		{sim.ParserQwen3, ""},                      // delta.reasoning_content, vLLM 0.11
		{sim.ParserDeepSeekR1, sim.FieldReasoning}, // delta.reasoning, newer vLLM
		{sim.ParserOpenAI, sim.FieldReasoning},
	} {
		t.Run(tc.parser+"/"+tc.field, func(t *testing.T) {
			e := startEngine(t, func(o *sim.Options) {
				o.StartupSpeedup, o.DebugRequests = 1000, true
				o.ReasoningParser, o.ReasoningTokens, o.ReasoningField = tc.parser, "uniform:20-60", tc.field
			})
			res, recs, err := Execute(context.Background(), Config{
				Server: ServerOptions{BaseURL: e.BaseURL()}, Runs: seqRuns(4, 100), Dir: t.TempDir(), RequestIDs: true,
				Args: []string{"servebench", "test"}, Version: "test", FailOnErrorRate: -1,
			})
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			engine := map[string]sim.RequestRecord{}
			for _, r := range e.Requests() {
				engine[r.ID] = r
			}
			out := 0
			for _, r := range recs {
				er, ok := engine["chatcmpl-"+r.RequestID]
				switch {
				case r.Error != "":
					t.Fatalf("request %s failed: %s %s", r.RequestID, r.Error, r.ErrorText)
				case !ok:
					t.Fatalf("request %s: no engine record", r.RequestID)
				case r.ReasoningTokens != er.ReasoningTokens || r.ReasoningTokens < 20 || r.ReasoningTokens > 60:
					t.Errorf("request %s: %d reasoning tokens, engine %d (want 20-60)", r.RequestID, r.ReasoningTokens, er.ReasoningTokens)
				case r.ReasoningTokens+r.AnswerTokens != r.OutputTokens || r.OutputTokens != er.OutputTokens:
					t.Errorf("request %s: reasoning %d + answer %d != output %d (engine %d)", r.RequestID, r.ReasoningTokens, r.AnswerTokens, r.OutputTokens, er.OutputTokens)
				case r.Stream && !(r.FirstTokenS > 0 && r.FirstReasoningS == r.FirstTokenS && r.LastReasoningS > r.FirstReasoningS && r.FirstVisibleS > r.LastReasoningS):
					t.Errorf("request %s: first token %g, reasoning %g-%g, first answer %g: want thinking first, then the answer",
						r.RequestID, r.FirstTokenS, r.FirstReasoningS, r.LastReasoningS, r.FirstVisibleS)
				}
				out += r.OutputTokens
			}
			if gen := engineCounter(t, e, "vllm:generation_tokens_total"); gen != float64(out) {
				t.Errorf("engine generated %g tokens, requests.jsonl counts %d", gen, out)
			}
			for _, run := range res.Runs {
				c := run.Client
				if c.ReasoningTokens == nil || c.AnswerTokens == nil || run.Stream != (c.FirstReasoningS != nil) {
					t.Fatalf("run %s: reasoning summaries missing: %+v", run.Name, c)
				}
				if run.Stream && (c.ThinkingS == nil || c.AnswerTPOTS == nil || c.FirstVisibleS.Median <= c.FirstTokenS.Median+c.ThinkingS.Median*0.9) {
					t.Errorf("run %s: first answer %v, first token %v, thinking %v: want the answer after the thinking", run.Name, c.FirstVisibleS, c.FirstTokenS, c.ThinkingS)
				}
			}
		})
	}
}

// TestReasoningOtherField: a server that streams its thinking under a name
// servebench does not count gets one warning per run naming the field; a
// name it knows (reasoning, OpenAI-compatible servers') is counted, with
// no warning.
func TestReasoningOtherField(t *testing.T) {
	for _, tc := range []struct {
		field      string
		counted    bool
		warnsNamed string
	}{
		{"thinking", false, "thinking"}, // Ollama's native name, not an OpenAI-compatible one
		{"reasoning", true, ""},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/v1/models":
				fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			case "/v1/chat/completions":
				w.Header().Set("Content-Type", "text/event-stream")
				for range 3 {
					fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{%q:\" hm\"}}]}\n\n", tc.field)
				}
				fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" yes\"},\"finish_reason\":\"stop\"}]}\n\n")
				fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4,\"total_tokens\":9}}\n\ndata: [DONE]\n\n")
			default:
				http.NotFound(w, r)
			}
		}))
		run := RunSpec{Name: "streaming", Workload: workload.Workload{Mode: workload.ModeSequential, Requests: 3},
			Request: RequestSpec{MaxTokens: 4, Stream: true}}
		res, recs, err := Execute(context.Background(), Config{Server: ServerOptions{BaseURL: srv.URL}, Runs: []RunSpec{run},
			Dir: t.TempDir(), Args: []string{"servebench", "test"}, Version: "test", FailOnErrorRate: -1})
		srv.Close()
		if err != nil {
			t.Fatalf("%s: %v", tc.field, err)
		}
		var warned []string
		for _, w := range res.Runs[0].Warnings {
			if strings.Contains(w, "does not count as reasoning") {
				warned = append(warned, w)
			}
		}
		r := recs[len(recs)-1]
		switch {
		case tc.counted && (r.ReasoningTokens != 3 || r.AnswerTokens != 1 || len(warned) != 0):
			t.Errorf("delta.%s: %d reasoning, %d answer tokens, warnings %q; want 3, 1, none", tc.field, r.ReasoningTokens, r.AnswerTokens, warned)
		case !tc.counted && (r.ReasoningTokens != 0 || r.OtherReasoning != tc.field || len(warned) != 1 || !strings.Contains(warned[0], tc.warnsNamed)):
			t.Errorf("delta.%s: %d reasoning tokens, record names %q, warnings %q; want 0, the field, one warning naming it", tc.field, r.ReasoningTokens, r.OtherReasoning, warned)
		}
	}
}
