package sim

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

func seqIDs(from, n int) []uint32 {
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = uint32(from + i)
	}
	return ids
}

func TestHashChain(t *testing.T) {
	a := seqIDs(0, 50) // 3 full blocks, 2 tokens over
	ha := appendHashes(nil, a, 16)
	if len(ha) != 3 {
		t.Fatalf("%d hashes for 50 tokens, want 3 (full blocks only)", len(ha))
	}
	// Incremental hashing as tokens arrive gives the same chain.
	inc := appendHashes(nil, a[:20], 16)
	inc = appendHashes(inc, a, 16)
	if !slices.Equal(inc, ha) {
		t.Errorf("incremental chain %x, want %x", inc, ha)
	}
	// A token changed in block 1: block 0 still matches, 1 and 2 do not
	// (block 2's own tokens are equal, its prefix is not).
	b := slices.Clone(a)
	b[20]++
	hb := appendHashes(nil, b, 16)
	if hb[0] != ha[0] || hb[1] == ha[1] || hb[2] == ha[2] {
		t.Errorf("block 1 differs: hashes %x vs %x; want only block 0 equal", hb, ha)
	}
	// The same tokens at another position are another block.
	if h := appendHashes(nil, a[16:32], 16); h[0] == ha[1] {
		t.Error("block 1's tokens hashed alone match block 1 in its chain")
	}
}

// hold allocates blocks for ids as a request would and caches its full ones.
func hold(p *blockPool, ids []uint32) (table []int32, hit int) {
	hashes := appendHashes(nil, ids, p.bs)
	hit = p.lookup(hashes, (len(ids)-1)/p.bs)
	for _, h := range hashes[:hit] {
		table = append(table, p.touch(h))
	}
	for len(table)*p.bs < len(ids) {
		table = append(table, p.take())
	}
	for i := hit; i < len(hashes); i++ {
		p.cache(table[i], hashes[i])
	}
	return table, hit
}

func TestBlockPoolHitsAndLRU(t *testing.T) {
	p := newBlockPool(8, 16, true)
	a := seqIDs(0, 40) // 3 blocks, 2 full
	ta, hit := hold(p, a)
	if hit != 0 || p.free != 5 {
		t.Fatalf("first request: hit %d, free %d; want 0, 5", hit, p.free)
	}
	// While a holds them, a request with the same prefix shares the blocks.
	tb, hit := hold(p, seqIDs(0, 33))
	if hit != 2 || tb[0] != ta[0] || tb[1] != ta[1] || p.free != 4 {
		t.Errorf("shared prefix: hit %d blocks %v (a %v), free %d; want 2 shared, free 4", hit, tb, ta, p.free)
	}
	p.release(tb)
	p.release(ta)
	if p.free != 8 || p.used() != 0 {
		t.Fatalf("all released: free %d used %d", p.free, p.used())
	}
	// Freed blocks stay cached, and the lookup stops one token short of the
	// end: 32 tokens can hit only one block, 33 two.
	if n := p.lookup(appendHashes(nil, seqIDs(0, 32), 16), 31/16); n != 1 {
		t.Errorf("32-token prompt: %d blocks hit, want 1 (the last token is always computed)", n)
	}
	// Eviction is LRU from the free queue's head: the 4 never-used blocks
	// first, then b's own block (b was freed first), then a's blocks, last
	// block first (a request frees in reverse).
	var order []int32
	for range 8 {
		order = append(order, p.take())
	}
	want := []int32{4, 5, 6, 7, tb[2], ta[2], ta[1], ta[0]}
	if !slices.Equal(order, want) {
		t.Errorf("eviction order %v, want %v", order, want)
	}
	if len(p.cached) != 0 {
		t.Errorf("%d hashes still cached after every block was taken", len(p.cached))
	}
}

func TestBlockPoolTouchLeavesFreeQueue(t *testing.T) {
	p := newBlockPool(4, 16, true)
	ta, _ := hold(p, seqIDs(0, 32))
	p.release(ta)
	// A hit on a free cached block takes it out of the queue: the next new
	// block cannot be it.
	tb, hit := hold(p, seqIDs(0, 40))
	if hit != 2 || p.free != 1 {
		t.Fatalf("hit %d free %d, want 2, 1", hit, p.free)
	}
	if x := p.take(); x == tb[0] || x == tb[1] || x == tb[2] {
		t.Errorf("took block %d, which request b holds (%v)", x, tb)
	}
}

func TestBlockPoolCachingOff(t *testing.T) {
	p := newBlockPool(4, 16, false)
	ta, _ := hold(p, seqIDs(0, 32))
	p.release(ta)
	if n := p.lookup(appendHashes(nil, seqIDs(0, 40), 16), 2); n != 0 {
		t.Errorf("caching off: %d blocks hit", n)
	}
}

// TestHitWindow checks the logged hit rate's window against vLLM's
// CachingMetrics: it covers the latest steps up to 1,000 requests.
func TestHitWindow(t *testing.T) {
	var w hitWindow
	if w.rate() != 0 {
		t.Errorf("empty window rate %g", w.rate())
	}
	w.observe(cacheStats{requests: 600, queries: 1000, hits: 0})
	w.observe(cacheStats{requests: 600, queries: 1000, hits: 500})
	if r := w.rate(); r != 0.5 {
		t.Errorf("rate %g after 1,200 requests, want 0.5 (the first step dropped)", r)
	}
	w.observe(cacheStats{requests: 5000, queries: 100, hits: 100})
	if r := w.rate(); r != 1 {
		t.Errorf("rate %g, want 1: the newest step stays even over the limit", r)
	}
}

// TestStatsLogLine runs requests with a short stats period and checks the
// periodic line against vLLM 0.11's format (LoggingStatLogger.log).
func TestStatsLogLine(t *testing.T) {
	e, log := startStatsLogged(t, nil)
	body := `{"prompt":[` + strings.Trim(strings.Repeat("7,", 100), ",") + `],"max_tokens":64,"ignore_eos":true}`
	for range 2 {
		resp, err := http.Post(e.BaseURL()+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	time.Sleep(50 * time.Millisecond)
	line := regexp.MustCompile(`\[loggers\.py:\d+\] Engine 000: Avg prompt throughput: \d+\.\d tokens/s, Avg generation throughput: \d+\.\d tokens/s, Running: \d+ reqs, Waiting: \d+ reqs, GPU KV cache usage: \d+\.\d%, Prefix cache hit rate: (\d+\.\d)%`)
	ms := line.FindAllStringSubmatch(log.String(), -1)
	if len(ms) == 0 {
		t.Fatalf("no stats line in the log:\n%s", log.String())
	}
	// Two requests of 100 equal ids: the second finds 96 of 100 cached.
	if got, want := ms[len(ms)-1][1], fmt.Sprintf("%.1f", 100*96.0/200); got != want {
		t.Errorf("last stats line's hit rate %s%%, want %s%%", got, want)
	}
}

// startStatsLogged runs an engine (DefaultOptions at --speedup 100 on a
// free port, mutate applied) with no start-up phases and a 20 ms stats
// period, logging into the returned buffer; it stops when the test ends.
func startStatsLogged(t *testing.T, mutate func(*Options)) (*Engine, *SyncBuffer) {
	t.Helper()
	o := DefaultOptions()
	o.Port, o.Speedup = 0, 100
	if mutate != nil {
		mutate(&o)
	}
	log := &SyncBuffer{}
	o.Log, o.LogStatsInterval = log, 20*time.Millisecond
	quickStart(&o)
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	<-e.Ready()
	return e, log
}

// BenchmarkAdmitPrefixHit is the engine loop's cost of admitting a request
// whose 250-token prompt has 15 blocks cached (lookup, touch, allocate the
// last block, cache it) and freeing it again, against the same with
// prefix caching off: the loop's steps take milliseconds.
//
//	go test ./engine/sim -run '^$' -bench AdmitPrefixHit
func BenchmarkAdmitPrefixHit(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("caching=%v", on), func(b *testing.B) {
			s := &scheduler{pool: newBlockPool(4096, blockSize, on), bs: blockSize}
			r := &request{prompt: 250, ids: seqIDs(0, 250), cached: -1}
			r.hashes = appendHashes(nil, r.ids, blockSize)
			var st cacheStats
			s.admit(r, 2048, &st)
			s.freeBlocks(r)
			b.ReportAllocs()
			for b.Loop() {
				r.computed = 0
				if _, ok := s.admit(r, 2048, &st); !ok {
					b.Fatal("not admitted")
				}
				s.freeBlocks(r)
			}
			if on && r.computed != 240 {
				b.Fatalf("%d tokens hit, want 240", r.computed)
			}
		})
	}
}

// TestPreemptedRequestHitsItsOwnBlocks drives the scheduler step by step
// on a 16-block KV cache: two requests outgrow it, the younger is
// preempted and its blocks go back to the free queue still cached (last
// block first); the older takes the blocks it needs from the queue's
// head, evicting the preempted request's last blocks only; once the older
// one finishes, the preempted one is readmitted and finds the rest of its
// prompt and output cached, as in vLLM. Hits of a preempted request are
// not counted in vllm:prefix_cache_hits_total (vLLM counts them apart).
func TestPreemptedRequestHitsItsOwnBlocks(t *testing.T) {
	o := DefaultOptions()
	o.Port, o.MaxModelLen, o.NumGPUBlocksOverride = 0, 256, 16
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	s := e.sched
	a := e.newRequest(false, "a", "a", seqIDs(0, 64), 100, 0, true)
	b := e.newRequest(false, "b", "b", seqIDs(1000, 64), 190, 0, true)
	s.submit(a, b)
	s.drain()
	now := int64(1)
	var bBlocks, bHashed, aBefore, readmitHit int
	for step := 0; step < 1000 && !b.done.Load(); step++ {
		readmitting := b.state == stateWaiting && b.preemptions > 0
		if b.preemptions == 0 {
			bBlocks, bHashed, aBefore = len(b.table), b.hashedBlocks, len(a.table)
		}
		s.schedule(now)
		if readmitting && b.state == stateRunning {
			readmitHit = b.computed
		}
		now += 1000
		s.complete(now)
	}
	if b.preemptions != 1 || !b.done.Load() || !a.done.Load() {
		t.Fatalf("b preempted %d times, done %v; a done %v: want one preemption, both done", b.preemptions, b.done.Load(), a.done.Load())
	}
	// b freed its blocks last first: its unhashed tail, then its cached
	// blocks from the last. a grew from aBefore to the 11 blocks of its
	// 164 tokens by taking blocks from that end; b keeps the rest.
	aTook := (64+100-1+15)/16 - aBefore // KV for all but its last token
	evicted := max(0, aTook-(bBlocks-bHashed))
	want := (bHashed - evicted) * 16
	t.Logf("b held %d blocks (%d cached) when preempted; a took %d more; b found %d tokens cached on readmission (want %d)", bBlocks, bHashed, aTook, readmitHit, want)
	if readmitHit != want || want <= 64 {
		t.Errorf("readmitted b found %d tokens cached, want %d (past its 64-token prompt)", readmitHit, want)
	}
	var hits float64
	for _, f := range mustGather(t, e) {
		if f.GetName() == "vllm:prefix_cache_hits_total" {
			hits = f.Metric[0].Counter.GetValue()
		}
	}
	if hits != 0 {
		t.Errorf("prefix_cache_hits_total %v, want 0 (only b's readmission hit, and preempted requests count apart)", hits)
	}
}

func mustGather(t *testing.T, e *Engine) []*dto.MetricFamily {
	t.Helper()
	fams, err := e.m().reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return fams
}
