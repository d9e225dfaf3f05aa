package sim_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

// withFaults starts an engine with the faults, quick start-up and the given
// step speedup.
func withFaults(speedup float64, faults ...string) func(*sim.Options) {
	return func(o *sim.Options) {
		o.Faults = faults
		o.Speedup = speedup
		o.StartupSpeedup = 1000
	}
}

// rawStream posts a streaming chat request and returns each SSE data
// payload with its arrival time, and the read error that ended it (nil
// for a clean EOF).
func rawStream(t *testing.T, e *sim.Engine, maxTokens int) (evs []string, at []time.Time, err error) {
	t.Helper()
	resp := post(t, e, "/v1/chat/completions", chat("fault", maxTokens, true))
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %s", resp.Status)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return evs, at, err
		}
		if d, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "data: "); ok {
			evs = append(evs, d)
			at = append(at, time.Now())
		}
	}
}

func TestFaultParseErrorsNameTheValue(t *testing.T) {
	for _, bad := range []string{"crash-after=0", "crash-after", "http-error=2:500", "http-error=0.1", "http-error=0.1:200",
		"mid-stream-error-after=-1", "stall-after=3", "stall-after=3:soon", "buffer-stream=0", "never-ready=1", "metrics-reset=x", "chaos"} {
		o := sim.DefaultOptions()
		o.Faults = []string{"buffer-stream=4", bad}
		_, err := sim.New(o)
		if err == nil || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("fault %q: error %v, want one quoting the value", bad, err)
		}
	}
}

func TestFaultNeverReady(t *testing.T) {
	var log syncBuffer
	e, errc := simtest.StartNoWait(t, func(o *sim.Options) {
		withFaults(100, "never-ready")(o)
		o.HealthDuringLoad = sim.Health503
		o.Log = io.MultiWriter(o.Log, &log)
	})
	// Start-up reaches the fault in ~90 ms at 1000x, later on a slow host.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), "fault never-ready"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no never-ready line 10 s after start:\n%s", log.String())
		}
	}
	// Past the fault only the API server's last ~2 ms phase would be left.
	select {
	case <-e.Ready():
		t.Fatal("ready despite never-ready")
	case err := <-errc:
		t.Fatalf("Run returned %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	resp, err := http.Get(e.BaseURL() + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("/health: %s, want 503", resp.Status)
	}
}

func TestFaultExitDuringLoad(t *testing.T) {
	_, errc := simtest.StartNoWait(t, withFaults(100, "exit-during-load"))
	select {
	case err := <-errc:
		if !errors.Is(err, sim.ErrLoadFailed) {
			t.Errorf("Run: %v, want ErrLoadFailed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still running 5 s after start with exit-during-load")
	}
}

func TestFaultCrashAfter(t *testing.T) {
	e, errc := simtest.StartNoWait(t, withFaults(20, "crash-after=2"))
	<-e.Ready()
	// A long stream in flight when the crash comes is cut off.
	resp := post(t, e, "/v1/chat/completions", chat("long", 2000, true))
	defer resp.Body.Close()
	for i := 0; i < 2; i++ {
		r := post(t, e, "/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 3})
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if r.StatusCode != 200 {
			t.Fatalf("request %d before the crash: %s", i, r.Status)
		}
	}
	select {
	case err := <-errc:
		if !errors.Is(err, sim.ErrCrashed) {
			t.Errorf("Run: %v, want ErrCrashed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no crash 5 s after 2 requests with crash-after=2")
	}
	b, err := io.ReadAll(resp.Body)
	if err == nil || strings.Contains(string(b), "[DONE]") {
		t.Errorf("in-flight stream ended cleanly (err %v), want it cut off", err)
	}
	if _, err := http.Get(e.BaseURL() + "/health"); err == nil {
		t.Errorf("still answering after the crash")
	}
}

// A request that reaches the engine after the crash, on a kept-alive
// connection, gets no answer at all: pipelined behind the crashing
// response, it is read by the same connection before the server closes.
func TestFaultCrashAfterNoLateAnswer(t *testing.T) {
	e, errc := simtest.StartNoWait(t, withFaults(20, "crash-after=1"))
	<-e.Ready()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.BaseURL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	// The late request streams: a stream's head goes out before its
	// first token, so an engine that started it would answer 200.
	req := func(body string) string {
		return "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
			"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	}
	pipelined := req(`{"prompt":"hi","max_tokens":2}`) + req(`{"prompt":"hi","max_tokens":2,"stream":true}`)
	if _, err := io.WriteString(conn, pipelined); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	first, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the crashing request itself: %v", err)
	}
	io.Copy(io.Discard, first.Body)
	if first.StatusCode != http.StatusOK {
		t.Fatalf("the crashing request itself: %s", first.Status)
	}
	if late, err := http.ReadResponse(br, nil); err == nil {
		t.Errorf("a request after the crash was answered %s, want the connection dropped", late.Status)
	}
	if err := <-errc; !errors.Is(err, sim.ErrCrashed) {
		t.Errorf("Run: %v, want ErrCrashed", err)
	}
}

func TestFaultHTTPError(t *testing.T) {
	e := simtest.Start(t, withFaults(100, "http-error=0.5:429"))
	counts := map[int]int{}
	for i := 0; i < 40; i++ {
		r := post(t, e, "/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 1})
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		counts[r.StatusCode]++
		if r.StatusCode == 429 {
			var out struct{ Error struct{ Code int } }
			if r.Header.Get("Retry-After") != "1" || json.Unmarshal(b, &out) != nil || out.Error.Code != 429 {
				t.Errorf("429 without Retry-After or error JSON: %v %s", r.Header, b)
			}
		}
	}
	if counts[429] < 8 || counts[200] < 8 || counts[429]+counts[200] != 40 {
		t.Errorf("statuses %v, want about half 429 and half 200", counts)
	}
}

func TestFaultMidStreamError(t *testing.T) {
	e := simtest.Start(t, withFaults(20, "mid-stream-error-after=3"))
	before := scrape(t, e)
	evs, _, err := rawStream(t, e, 1000) // 0.75 s: the error comes long before the end
	if err != nil {
		t.Fatal(err)
	}
	// role, 3 tokens, the error, [DONE]
	if len(evs) != 6 || evs[5] != "[DONE]" {
		t.Fatalf("events %q", evs)
	}
	if c := decodeChunk(t, evs[4]); c.Error == nil || c.Error.Message == "" {
		t.Errorf("event 4 is not an error: %s", evs[4])
	}
	var d float64
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		after := scrape(t, e)
		d = value(after, "vllm:request_success_total", "finished_reason", "error") -
			value(before, "vllm:request_success_total", "finished_reason", "error")
		if d != 0 {
			break
		}
	}
	if d != 1 {
		t.Errorf("finished_reason=error delta %v, want 1", d)
	}
}

func TestFaultDropConnection(t *testing.T) {
	e := simtest.Start(t, withFaults(100, "drop-connection-after=4"))
	evs, _, err := rawStream(t, e, 20)
	if err == nil {
		t.Fatalf("stream ended cleanly: %q", evs)
	}
	if len(evs) != 5 { // role + 4 tokens
		t.Errorf("got %d events before the drop, want 5: %q", len(evs), evs)
	}
}

// TestFaultStall: the stream writes nothing for 400 ms after 2 tokens while
// generation goes on (40 steps of 3.75 ms, all done within the stall), then
// the tokens made meanwhile arrive in one burst, not paced out over the
// ~140 ms their 37 steps took.
func TestFaultStall(t *testing.T) {
	e := simtest.Start(t, withFaults(4, "stall-after=2:400ms"))
	evs, at, err := rawStream(t, e, 40)
	if err != nil || len(evs) != 1+40+2 { // role, tokens, usage, [DONE]
		t.Fatalf("err %v, %d events", err, len(evs))
	}
	// events: role(0), t1(1), t2(2), then the stall, t3(3)...
	// at[0] (the role chunk) arrived before the stall began, whatever a
	// loaded host did to the client's reads.
	stall := at[3].Sub(at[0])
	if stall < 400*time.Millisecond {
		t.Errorf("token 3 came %v after the first event, want >= 400ms (the stall)", stall)
	}
	// Measured against the stall, not a fixed bound: a burst is two flushes
	// back to back, pacing would spread the tokens over a third of it.
	if burst := at[40].Sub(at[3]); burst > stall/4 {
		t.Errorf("tokens made during the %v stall took %v to arrive, want one burst (under a quarter of the stall)", stall, burst)
	}
}

func TestFaultMalformedEvent(t *testing.T) {
	e := simtest.Start(t, withFaults(100, "malformed-event-after=2"))
	evs, _, err := rawStream(t, e, 6)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, ev := range evs {
		if ev != "[DONE]" && !json.Valid([]byte(ev)) {
			bad++
		}
	}
	if bad != 1 || len(evs) != 1+1+6+2 || evs[len(evs)-1] != "[DONE]" {
		t.Errorf("%d malformed of %d events, want 1 and a complete stream: %q", bad, len(evs), evs)
	}
}

// TestFaultBufferStream: tokens arrive in bursts of 8 instead of one per
// step (15 ms of model time, 3 ms here).
func TestFaultBufferStream(t *testing.T) {
	e := simtest.Start(t, withFaults(5, "buffer-stream=8"))
	evs, at, err := rawStream(t, e, 32)
	if err != nil || len(evs) != 1+32+2 {
		t.Fatalf("err %v, %d events", err, len(evs))
	}
	// Tokens flushed together arrive together: count arrival groups
	// (a new group after a gap over 1 ms). 32 tokens in bursts of 8 make
	// 4; a plain stream, one token per 3 ms step, makes ~32.
	groups := 1
	for i := 2; i < 34; i++ { // between content tokens
		if at[i].Sub(at[i-1]) > time.Millisecond {
			groups++
		}
	}
	if groups > 8 {
		t.Errorf("tokens arrived in %d groups, want about 4 (bursts of 8)", groups)
	}
}

func TestFaultMetricsUnavailable(t *testing.T) {
	e := simtest.Start(t, withFaults(100, "metrics-unavailable"))
	resp, err := http.Get(e.BaseURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("/metrics: %s, want 404", resp.Status)
	}
}

func TestFaultMetricsReset(t *testing.T) {
	e := simtest.Start(t, withFaults(100, "metrics-reset=2"))
	one := func() {
		r := post(t, e, "/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 2, "ignore_eos": true})
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	one()
	if n := value(scrape(t, e), "vllm:request_success_total"); n != 1 {
		t.Fatalf("after 1 request: %v", n)
	}
	one() // the second completes the reset (just after its response is written)
	var n, g float64
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		m := scrape(t, e)
		if n, g = value(m, "vllm:request_success_total"), value(m, "vllm:generation_tokens_total"); n == 0 {
			break
		}
	}
	if n != 0 || g != 0 {
		t.Errorf("after the reset: requests %v, tokens %v; want 0, 0", n, g)
	}
	one()
	if n := value(scrape(t, e), "vllm:request_success_total"); n != 1 {
		t.Errorf("after the reset and 1 more request: %v, want 1", n)
	}
}
