package bench

import (
	"context"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/workload"
	"github.com/servebench/servebench/client"
)

// echoDoer answers every request at once with a text naming its message
// count, and keeps the requests it saw.
type echoDoer struct {
	mu   sync.Mutex
	reqs []client.Request
	fail func(*client.Request) bool
}

func (d *echoDoer) Do(_ context.Context, req *client.Request) client.Trace {
	d.mu.Lock()
	r := *req
	r.Messages = append([]client.Message(nil), req.Messages...)
	d.reqs = append(d.reqs, r)
	d.mu.Unlock()
	tr := client.Trace{Start: time.Now(), Stream: req.Stream, Status: 200, OutputTokens: req.MaxTokens,
		FirstToken: time.Millisecond, FirstVisible: time.Millisecond, Done: 2 * time.Millisecond}
	if d.fail != nil && d.fail(req) {
		tr.Error, tr.Status = client.ErrHTTPStatus, 500
	}
	if req.KeepText {
		tr.Text = "answer to " + req.Messages[len(req.Messages)-1].Content[:5]
	}
	return tr
}

// TestSessionsRun: each turn carries the whole history with the previous
// answers as received; records carry session, turn and prefix group;
// --requests counts sessions; a failed turn ends its session.
func TestSessionsRun(t *testing.T) {
	src, _, err := workload.NewSource(workload.SourceOptions{InputTokens: "8", OutputTokens: "uniform:3-9", Turns: "3",
		SharedPrefixTokens: 5, PrefixGroups: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := &echoDoer{}
	r := &Runner{Client: d}
	spec := RunSpec{Name: "s", Workload: workload.Workload{Mode: workload.ModeConcurrent, Concurrency: 3, Requests: 5, Seed: 1,
		ThinkTime: workload.Dist{Kind: workload.DistConst, A: 0.001}}, Request: RequestSpec{MaxTokens: 16, Stream: true}, Source: src}
	run, recs, err := r.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if run.Requests != 15 || len(recs) != 15 {
		t.Fatalf("5 sessions of 3 turns: %d requests, %d records", run.Requests, len(recs))
	}
	if run.Workload.Turns != "3" || run.Workload.ThinkTimeS != "0.001" || run.Workload.Seed != 1 {
		t.Errorf("workload block %+v", run.Workload)
	}
	turns := map[string][]int{}
	for _, rec := range recs {
		turns[rec.Session] = append(turns[rec.Session], rec.Turn)
		if rec.PrefixGroup < 1 || rec.PrefixGroup > 2 || rec.MaxTokens < 3 || rec.MaxTokens > 9 {
			t.Errorf("record %+v: want group 1-2 and max_tokens 3-9", rec)
		}
	}
	if len(turns) != 5 {
		t.Errorf("sessions %v, want 5", turns)
	}
	for _, req := range d.reqs {
		n := len(req.Messages)
		if n%2 != 0 || req.Messages[0].Role != "system" {
			t.Fatalf("turn with %d messages, first %q: want system + (user, assistant)* + user", n, req.Messages[0].Role)
		}
		for k := 2; k < n; k += 2 {
			a, u := req.Messages[k], req.Messages[k-1]
			if a.Role != "assistant" || a.Content != "answer to "+u.Content[:5] {
				t.Errorf("history message %d = %+v, want the answer to %q as received", k, a, u.Content[:5])
			}
		}
		if req.KeepText != (n < 6) {
			t.Errorf("KeepText %v on a turn with %d messages (only the last turn needs no text)", req.KeepText, n)
		}
	}

	// A failed second turn ends the session: one record fewer per failure.
	d2 := &echoDoer{fail: func(r *client.Request) bool { return len(r.Messages) == 4 }}
	r2 := &Runner{Client: d2}
	run, recs, _ = r2.Run(context.Background(), spec)
	if len(recs) != 10 || !strings.Contains(strings.Join(run.Warnings, ";"), "5 sessions stopped at a failed turn") {
		t.Errorf("failed turns: %d records (want 10), warnings %v", len(recs), run.Warnings)
	}
}

// TestClipToMaxModelLen: drawn lengths past the server's context are clipped
// so prompt and output fit, and the run says how many.
func TestClipToMaxModelLen(t *testing.T) {
	src, _, err := workload.NewSource(workload.SourceOptions{InputTokens: "uniform:50-150", OutputTokens: "100", Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	d := &echoDoer{}
	spec := RunSpec{Name: "c", Workload: workload.Workload{Requests: 40}, Request: RequestSpec{MaxTokens: 16, MaxModelLen: 120}, Source: src}
	run, _, err := (&Runner{Client: d}).Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range d.reqs {
		in := len(strings.Fields(req.Messages[0].Content))
		if in > 119 || in+req.MaxTokens > 120 || req.MaxTokens < 1 {
			t.Fatalf("request of %d prompt words and max_tokens %d over max_model_len 120", in, req.MaxTokens)
		}
	}
	if !strings.Contains(strings.Join(run.Warnings, ";"), "clipped to the server's max_model_len 120") {
		t.Errorf("warnings %v", run.Warnings)
	}
}

// TestExactLengthAgainstWhatWasAsked: a request clipped to fit the context
// asks fewer tokens than the run's max_tokens; a server that returns what
// it asked keeps ignore_eos, and the exact-length check says nothing.
func TestExactLengthAgainstWhatWasAsked(t *testing.T) {
	src, _, err := workload.NewSource(workload.SourceOptions{InputTokens: "uniform:50-150", Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	spec := RunSpec{Name: "c", Workload: workload.Workload{Requests: 40},
		Request: RequestSpec{MaxTokens: 64, MaxModelLen: 120, ExactLength: true}, Source: src}
	run, recs, err := (&Runner{Client: &echoDoer{}}).Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	ws := strings.Join(run.Warnings, ";")
	if !strings.Contains(ws, "clipped") {
		t.Fatalf("no request was clipped (warnings %v): the test needs some", run.Warnings)
	}
	if strings.Contains(ws, "ignore_eos") {
		t.Errorf("warnings %v: the server returned what each request asked", run.Warnings)
	}
	clipped := 0
	for _, r := range recs {
		if r.MaxTokens > 0 && r.MaxTokens < 64 {
			clipped++
		}
	}
	if clipped == 0 {
		t.Error("no record says its request asked fewer than max_tokens")
	}
}

// BenchmarkBuild100k builds a 100,000-request workload (lognormal input
// and output lengths, 16 shared-prefix groups of 512 tokens) the way a run
// does: the source, then every conversation drawn and kept (what a
// pre-built schedule holds), then every request's prompt text generated
// once (what the workers do before each send; not kept). It reports the
// build time and heap held (target: under 1 s and 200 MB), the text
// generation time, and a floor measured in the same run: drawing the same
// 200,000 lognormal lengths and nothing else.
func BenchmarkBuild100k(b *testing.B) {
	const n = 100_000
	var buildS, textS, floorS, heldMB, words float64
	for b.Loop() {
		t0 := time.Now()
		rng := rand.New(rand.NewPCG(1, 2))
		d, _ := workload.ParseDist("lognormal:512,256")
		sink := 0
		for range 2 * n {
			sink += d.Int(rng, 1, workload.MaxSyntheticTokens)
		}
		floorS = time.Since(t0).Seconds()

		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		t0 = time.Now()
		src, _, err := workload.NewSource(workload.SourceOptions{InputTokens: "lognormal:512,256", OutputTokens: "lognormal:128,64",
			SharedPrefixTokens: 512, PrefixGroups: 16, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		convs := make([]workload.Conversation, n)
		for i := range convs {
			convs[i] = src.Conversation(i)
		}
		buildS = time.Since(t0).Seconds()
		runtime.GC()
		runtime.ReadMemStats(&after)
		heldMB = float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)

		st := &runState{spec: &RunSpec{Request: RequestSpec{Endpoint: EndpointChat, MaxTokens: 1, MaxModelLen: 32768}, Source: src}}
		t0 = time.Now()
		words = 0
		for i := range convs {
			req := st.request(&convs[i], 0, nil)
			words += float64(len(req.Messages[1].Content)) / 6 // about 6 bytes a word
		}
		textS = time.Since(t0).Seconds()
		runtime.KeepAlive(convs)
		_ = sink
	}
	b.ReportMetric(buildS, "build-s")
	b.ReportMetric(heldMB, "held-MB")
	b.ReportMetric(textS, "text-s")
	b.ReportMetric(floorS, "floor-s")
	b.Logf("100,000 requests (lognormal lengths, 16 prefix groups): built in %.3f s holding %.1f MB (targets 1 s, 200 MB; floor: 200,000 bare lognormal draws %.3f s); "+
		"prompt text for all of them (about %.0f M words) generated in %.3f s", buildS, heldMB, floorS, words/1e6, textS)
}

// TestRunsGetTheirOwnText: two runs of one source (a sweep's levels,
// --stream both) send the same lengths with different text, so the second
// is not served from the prefix cache the first filled; one run name
// always gives the same text.
func TestRunsGetTheirOwnText(t *testing.T) {
	src, _, err := workload.NewSource(workload.SourceOptions{InputTokens: "uniform:20-40", Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	prompts := func(name string) []string {
		d := &echoDoer{}
		spec := RunSpec{Name: name, Workload: workload.Workload{Requests: 3}, Request: RequestSpec{MaxTokens: 1}, Source: src}
		if _, _, err := (&Runner{Client: d}).Run(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range d.reqs {
			out = append(out, r.Messages[0].Content)
		}
		return out
	}
	a, b, again := prompts("c=1"), prompts("c=2"), prompts("c=1")
	for i := range a {
		if a[i] == b[i] || len(strings.Fields(a[i])) != len(strings.Fields(b[i])) || a[i] != again[i] {
			t.Errorf("request %d: runs c=1 and c=2 sent %q and %q (want other words, as many); c=1 again %q", i, a[i], b[i], again[i])
		}
	}
}
