package probe_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/probe"
	"github.com/servebench/servebench/client"
)

// paced builds n one-token events: event i arrives at at(i).
func paced(n int, at func(i int) time.Duration) []client.Event {
	evs := make([]client.Event, n)
	for i := range evs {
		evs[i] = client.Event{At: at(i), Tokens: 1}
	}
	return evs
}

const itl = 10 * time.Millisecond

func TestAnalyzeBursts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		events    []client.Event
		ref       time.Duration
		buffered  bool
		maxGroup  int
		meanGroup float64 // within 0.05; 0: not checked
	}{
		// One token per ITL: every token its own arrival.
		{"token by token", paced(64, func(i int) time.Duration { return time.Duration(i) * itl }), itl, false, 1, 1},
		// A proxy flushing every 8 tokens: 8 arrive within microseconds, then 8 ITL of nothing.
		{"flush every 8", paced(64, func(i int) time.Duration {
			return time.Duration(i/8)*8*itl + time.Duration(i%8)*time.Microsecond
		}), itl, true, 8, 8},
		// One client stall of 100 ms: 10 tokens bunch up once; most still arrive paced.
		{"one stall", paced(64, func(i int) time.Duration {
			if i >= 20 && i < 30 {
				return 30*itl + time.Duration(i)*time.Microsecond
			}
			return time.Duration(i) * itl
		}), itl, false, 11, 0},
		// Without the engine's ITL the client's own pace is the reference, and the bursts still show.
		{"flush every 16, no engine ITL", paced(64, func(i int) time.Duration {
			return time.Duration(i/16)*16*itl + time.Duration(i%16)*time.Microsecond
		}), 0, true, 16, 16},
		// Events carrying several tokens each (a server batching in its chunks) count as bursts.
		{"4 tokens per event", []client.Event{{At: 0, Tokens: 4}, {At: 4 * itl, Tokens: 4}, {At: 8 * itl, Tokens: 4}, {At: 12 * itl, Tokens: 4}}, itl, true, 4, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := probe.AnalyzeBursts(tc.events, tc.ref)
			if b.Buffered != tc.buffered || b.MaxGroup != tc.maxGroup {
				t.Errorf("buffered %v, max group %d; want %v, %d (%+v)", b.Buffered, b.MaxGroup, tc.buffered, tc.maxGroup, b)
			}
			if tc.meanGroup > 0 && (b.MeanGroup < tc.meanGroup-0.05 || b.MeanGroup > tc.meanGroup+0.05) {
				t.Errorf("mean group %.2f, want %.2f", b.MeanGroup, tc.meanGroup)
			}
		})
	}
}

func TestAnalyzeBurstsTooFew(t *testing.T) {
	b := probe.AnalyzeBursts([]client.Event{{At: 0, Tokens: 1}}, itl)
	if b.Buffered || b.Groups != 0 || b.Tokens != 1 {
		t.Errorf("one event: %+v; want nothing judged", b)
	}
}

func TestStalledGaps(t *testing.T) {
	start := time.Unix(1000, 0)
	evs := []client.Event{{At: 0}, {At: itl}, {At: 5 * itl}, {At: 6 * itl}, {At: 10 * itl}}
	// Two long gaps: 1->5 ITL and 6->10 ITL. The process stalled across the first only.
	stalls := []probe.Span{{From: start.Add(itl + itl/2), To: start.Add(5 * itl)}}
	long, stalled := probe.StalledGaps(evs, start, itl, stalls)
	if long != 2 || stalled != 1 {
		t.Errorf("long %d, stalled %d; want 2, 1", long, stalled)
	}
	// A short stall inside a long gap does not explain it.
	long, stalled = probe.StalledGaps(evs, start, itl, []probe.Span{{From: start.Add(2 * itl), To: start.Add(2*itl + time.Millisecond)}})
	if long != 2 || stalled != 0 {
		t.Errorf("short stall: long %d, stalled %d; want 2, 0", long, stalled)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		tr   client.Trace
		want probe.Delivery
	}{
		{client.Trace{Status: 200}, probe.DeliveredNone},
		{client.Trace{Status: 400, Error: client.ErrHTTPStatus}, probe.DeliveredStatus},
		{client.Trace{Status: 200, Error: client.ErrStreamError}, probe.DeliveredEvent},
		// An error object with a non-2xx status and no stream: the status carried it.
		{client.Trace{Status: 500, Error: client.ErrStreamError}, probe.DeliveredStatus},
		{client.Trace{Status: 200, Error: client.ErrTruncated}, probe.DeliveredTruncated},
		{client.Trace{Status: 200, Error: client.ErrMalformed}, probe.DeliveredMalformed},
		{client.Trace{Status: 200, Error: client.ErrTimeout}, probe.DeliveredStalled},
		{client.Trace{Error: client.ErrConnect}, probe.DeliveredOther},
	} {
		if got := probe.Classify(&tc.tr); got != tc.want {
			t.Errorf("Classify(status %d, %s) = %s, want %s", tc.tr.Status, tc.tr.Error, got, tc.want)
		}
	}
}

func TestWriteText(t *testing.T) {
	rs := []*probe.Result{
		{Probe: "cancel", Verdict: probe.Fail, Summary: "keeps generating, 496 tokens wasted",
			Evidence: []probe.Item{{Key: "tokens_wasted", Value: 496, Text: "496 generated and never read"}, {Key: "max_tokens", Value: 512}},
			Warnings: []string{"1 requests were already running"}},
		{Probe: "limits", Verdict: probe.Pass, Summary: "rejected with 400"},
	}
	var b bytes.Buffer
	if err := probe.Write(&b, rs, "text"); err != nil {
		t.Fatal(err)
	}
	want := `probe cancel: FAIL: keeps generating, 496 tokens wasted
  tokens_wasted                      496 generated and never read
  max_tokens                         512
  warning: 1 requests were already running

probe limits: PASS: rejected with 400
`
	if b.String() != want {
		t.Errorf("text output:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := probe.Write(&b, rs, "json"); err != nil || !strings.Contains(b.String(), `"verdict": "fail"`) {
		t.Errorf("json output (err %v):\n%s", err, b.String())
	}
}
