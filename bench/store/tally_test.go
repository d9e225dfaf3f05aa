package store

import (
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/client"
)

// TestTallyLateSends: figures from the intended send time appear once a
// send is late and count the on-time requests before it too (the tally
// copies their plain figures then, not before).
func TestTallyLateSends(t *testing.T) {
	recs := []result.Record{
		{Run: "r", FirstVisibleS: 0.1, E2ES: 1},
		{Run: "r", FirstVisibleS: 0.2, E2ES: 2},
		{Run: "r", FirstVisibleS: 0.3, E2ES: 3, IntendedLagS: 0.5},
		{Run: "r", FirstVisibleS: 0.4, E2ES: 4},
	}
	var onTime Tally
	onTime.Add(&recs[0])
	if cs := onTime.Client(); cs.FirstVisibleFromIntendedS != nil || onTime.fvI.N != 0 {
		t.Errorf("no late send, yet figures from the intended send time: %+v", cs.FirstVisibleFromIntendedS)
	}
	cs := ClientSummary(recs)
	fv, e2e := cs.FirstVisibleFromIntendedS, cs.E2EFromIntendedS
	if fv == nil || e2e == nil || fv.N != 4 || e2e.N != 4 || math.Abs(fv.Mean-(1.0+0.5)/4) > 1e-12 || math.Abs(e2e.Mean-(10+0.5)/4) > 1e-12 || e2e.Max != 4 {
		t.Errorf("from intended: first visible %+v, e2e %+v; want 4 samples each, the late one 0.5 s longer", fv, e2e)
	}
}

// TestTallySpillEqualsMemory: a tally whose samples go to files (a bounded
// run's) gives the same client figures, bit for bit, as one that keeps
// them in memory, on the same records: on-time sends then late ones,
// errors, absent timings and non-streamed requests included; read back
// whole (the default selection limit) or by radix selection over the
// files (a limit of 100 samples). Its files are unlinked once created
// (where the system allows it), and close releases them.
func TestTallySpillEqualsMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	recs := make([]result.Record, 5000)
	for i := range recs {
		fv := 0.01 + r.ExpFloat64()*0.02
		rec := result.Record{Run: "r", Stream: i%5 != 0, FirstVisibleS: fv, FirstTokenS: fv * 0.9, TTFBS: fv * 0.5,
			E2ES: fv + r.Float64(), OutputTokens: 1 + r.IntN(128)}
		switch {
		case i%97 == 0:
			rec = result.Record{Run: "r", Error: "timeout"}
		case i%31 == 0:
			rec.TTFBS = 0 // absent
		case i > 2500 && i%3 == 0:
			rec.IntendedLagS = r.Float64() * 0.1 // the sender fell behind
		}
		recs[i] = rec
	}
	for _, limit := range []int{0, 100} {
		dir := t.TempDir()
		var mem Tally
		var disk Tally
		setSelectLimit(t, limit)
		if err := disk.Spill(dir); err != nil {
			t.Fatal(err)
		}
		for _, c := range disk.columns() {
			if c.f == nil {
				t.Fatal("a column kept in memory after spill")
			}
		}
		if files, _ := os.ReadDir(dir); len(files) != 0 && runtime.GOOS != "windows" {
			t.Errorf("%d sample files named in %s, want them unlinked once created", len(files), dir)
		}
		for i := range recs {
			mem.Add(&recs[i])
			disk.Add(&recs[i])
		}
		want, got := mem.Client(), disk.Client()
		if err := disk.SpillErr(); err != nil {
			t.Fatal(err)
		}
		if got.FirstVisibleFromIntendedS == nil || got.TPOTS == nil || got.TTFBS == nil || got.E2ES.N != mem.OK {
			t.Fatalf("limit %d: spilled figures incomplete: %+v", limit, got)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("limit %d: spilled samples give\n%+v\nin memory\n%+v", limit, got, want)
		}
		disk.Close()
		if files, _ := os.ReadDir(dir); len(files) != 0 {
			t.Errorf("%d sample files left after close", len(files))
		}
	}
}

// TestReasoningWarningNamesClientKeys: the warning about an uncounted
// reasoning-like field lists as known exactly the fields the client
// counts as reasoning (client.ReasoningKeys), so the two cannot drift.
func TestReasoningWarningNamesClientKeys(t *testing.T) {
	var tl Tally
	if w := tl.ReasoningWarning(); w != "" {
		t.Fatalf("no other field seen, yet a warning: %q", w)
	}
	tl.Add(&result.Record{Run: "r", E2ES: 1, OtherReasoning: "reasoning_text"})
	w := tl.ReasoningWarning()
	_, rest, ok := strings.Cut(w, "(known: ")
	known, _, ok2 := strings.Cut(rest, ")")
	if !ok || !ok2 || !strings.Contains(w, "reasoning_text") {
		t.Fatalf("warning %q: want the field seen and a (known: ...) list", w)
	}
	want := client.ReasoningKeys()
	if got := strings.Split(known, ", "); len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("warning names %q as known, the client counts %q", got, want)
	}
}

// TestTallyStutter: a run's stutter pools its requests' arrivals, and its
// ITL says when it is computed over bursts; compressed answers are counted.
func TestTallyStutter(t *testing.T) {
	clumped := func(size int) result.Record {
		var evs result.Events
		for i := 0; i < 32; i++ {
			evs = append(evs, [2]float64{0.01 + float64(i/size*size)*0.004 + float64(i%size)*2e-6, 1})
		}
		r := result.Record{Stream: true, OutputTokens: 32, FirstVisibleS: 0.01, E2ES: 0.2, Events: evs}
		r.Stutter = evs.Stutter(0)
		return r
	}
	for _, tt := range []struct {
		size               int
		arrivals, maxPer   int
		share              float64
		bursty, overBursts bool
	}{{1, 64, 1, 0, false, false}, {16, 4, 16, 1, true, true}} {
		var ta Tally
		a, b := clumped(tt.size), clumped(tt.size)
		b.ContentEncoding = "gzip"
		ta.Add(&a)
		ta.Add(&b)
		cs := ta.Client()
		s := cs.Stutter
		if s == nil || s.Requests != 2 || s.Arrivals != tt.arrivals || s.TokensPerArrivalMax != tt.maxPer || s.BurstShare != tt.share ||
			cs.ITLOverBursts() != tt.overBursts || cs.Compressed != 1 || (s.BurstyRequests == 2) != tt.bursty {
			t.Errorf("clumps of %d: stutter %+v, ITL over bursts %v, compressed %d; want %d arrivals, max %d, share %g, over bursts %v, 1 compressed",
				tt.size, s, cs.ITLOverBursts(), cs.Compressed, tt.arrivals, tt.maxPer, tt.share, tt.overBursts)
		}
		if tt.size == 16 && (s.GapP99S < 0.05 || s.GapMaxS < 0.05) {
			t.Errorf("clumps of 16 every 64 ms: gap p99 %g, max %g", s.GapP99S, s.GapMaxS)
		}
	}
}
