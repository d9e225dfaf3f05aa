package sim

import "sync"

// Automatic prefix caching, as vLLM V1 does it (vllm/v1/core/block_pool.py,
// kv_cache_manager.py, kv_cache_utils.py):
//
//   - The KV cache is a pool of blocks of blockSize tokens. A request holds a
//     table of blocks; a block is shared by every request whose prefix it
//     caches (a reference count).
//   - A full block is identified by a hash chain over token ids:
//     hash(parent block's hash, the block's token ids). Two blocks match only
//     when their whole prefixes match; a partial block is never cached.
//   - Blocks are cached (their hash registered) when they are allocated for
//     tokens the scheduler knows, as vLLM's allocate_slots does, so a request
//     admitted later in the same step already hits them (n > 1 siblings do).
//   - A freed block (reference count 0) keeps its hash and sits in the free
//     queue; it is evicted (its hash dropped) only when the queue's head is
//     taken for a new block: LRU, since freed blocks join the tail, a
//     request's blocks in reverse order so that its last blocks go first.
//   - A cache hit on a free block takes it out of the free queue ("touch").
//   - A lookup may cover at most numTokens-1 tokens: the last token is always
//     computed, to get its logits.
//
// With caching off the same pool runs without hashes: blocks are plain
// counts of free memory, as before.

// blockPool is the KV block pool. It is owned by the scheduler goroutine.
type blockPool struct {
	bs      int
	caching bool
	blocks  []kvBlock
	// The free queue: a doubly linked list through kvBlock.prev/next, head
	// first out (least recently freed), -1 terminated.
	head, tail int32
	free       int
	cached     map[uint64]int32 // block hash -> block holding it
}

type kvBlock struct {
	ref        int32
	prev, next int32
	hash       uint64 // registered in cached when hashed is true
	hashed     bool
}

func newBlockPool(n, bs int, caching bool) *blockPool {
	p := &blockPool{bs: bs, caching: caching, blocks: make([]kvBlock, n), head: -1, tail: -1}
	if caching {
		p.cached = make(map[uint64]int32, n)
	}
	for i := range p.blocks {
		p.blocks[i] = kvBlock{prev: -1, next: -1}
		p.pushTail(int32(i))
	}
	return p
}

func (p *blockPool) pushTail(id int32) {
	b := &p.blocks[id]
	b.prev, b.next = p.tail, -1
	if p.tail >= 0 {
		p.blocks[p.tail].next = id
	} else {
		p.head = id
	}
	p.tail = id
	p.free++
}

func (p *blockPool) unlink(id int32) {
	b := &p.blocks[id]
	if b.prev >= 0 {
		p.blocks[b.prev].next = b.next
	} else {
		p.head = b.next
	}
	if b.next >= 0 {
		p.blocks[b.next].prev = b.prev
	} else {
		p.tail = b.prev
	}
	b.prev, b.next = -1, -1
	p.free--
}

// take pops the free queue's head for a new block, evicting the prefix it
// cached, if any.
func (p *blockPool) take() int32 {
	id := p.head
	p.unlink(id)
	b := &p.blocks[id]
	if b.hashed {
		delete(p.cached, b.hash)
		b.hashed = false
	}
	b.ref = 1
	return id
}

// lookup returns how many leading blocks of hashes are cached, stopping at
// the first miss and at maxBlocks.
func (p *blockPool) lookup(hashes []uint64, maxBlocks int) int {
	if !p.caching {
		return 0
	}
	n := 0
	for n < len(hashes) && n < maxBlocks {
		if _, ok := p.cached[hashes[n]]; !ok {
			break
		}
		n++
	}
	return n
}

// evictableHits counts the first n cached blocks of hashes that sit in the
// free queue: touching them uses up free blocks too.
func (p *blockPool) evictableHits(hashes []uint64, n int) int {
	c := 0
	for _, h := range hashes[:n] {
		if p.blocks[p.cached[h]].ref == 0 {
			c++
		}
	}
	return c
}

// touch takes a reference on the cached block for h and returns it.
func (p *blockPool) touch(h uint64) int32 {
	id := p.cached[h]
	b := &p.blocks[id]
	if b.ref == 0 {
		p.unlink(id)
	}
	b.ref++
	return id
}

// cache registers block id as holding the prefix whose hash is h. When
// another block already holds it (two requests computed the same prefix
// at once), the first stays the one lookups find and id stays unhashed.
func (p *blockPool) cache(id int32, h uint64) {
	if !p.caching {
		return
	}
	if _, dup := p.cached[h]; dup {
		return
	}
	p.cached[h] = id
	p.blocks[id].hash, p.blocks[id].hashed = h, true
}

// release drops a request's references, last block first, so that the
// request's tail is evicted before its head (vLLM frees in reverse).
func (p *blockPool) release(table []int32) {
	for i := len(table) - 1; i >= 0; i-- {
		id := table[i]
		b := &p.blocks[id]
		b.ref--
		if b.ref == 0 {
			p.pushTail(id)
		}
	}
}

// used is the number of blocks referenced by some request (cached blocks
// in the free queue count as free, as in vLLM's usage gauge).
func (p *blockPool) used() int { return len(p.blocks) - p.free }

// chainHash is the hash of one full block given its parent's hash: FNV-1a
// over the token ids, seeded with the parent, finished with splitmix64.
// 64 bits: a collision among the cache's blocks is vanishingly unlikely
// (vLLM's default was Python's built-in hash, 64 bits too, before sha256).
func chainHash(parent uint64, ids []uint32) uint64 {
	h := parent ^ 0xcbf29ce484222325
	for _, t := range ids {
		h ^= uint64(t)
		h *= 0x100000001b3
	}
	return splitmix64(h)
}

// rootHash is the parent hash of a request's first block (vLLM's
// NONE_HASH, a per-process random seed; fixed here so runs repeat).
const rootHash = 0x6a09e667f3bcc908

// appendHashes extends hashes with the hashes of the full blocks of ids
// not hashed yet.
func appendHashes(hashes []uint64, ids []uint32, bs int) []uint64 {
	return appendHashesFrom(hashes, ids, bs, rootHash)
}

// appendHashesFrom is appendHashes with root as the first block's parent:
// a LoRA adapter's requests chain from their own root, so blocks of
// different adapters never match (vLLM puts the adapter in the block hash).
func appendHashesFrom(hashes []uint64, ids []uint32, bs int, root uint64) []uint64 {
	parent := root
	if len(hashes) > 0 {
		parent = hashes[len(hashes)-1]
	}
	for i := len(hashes); (i+1)*bs <= len(ids); i++ {
		parent = chainHash(parent, ids[i*bs:(i+1)*bs])
		hashes = append(hashes, parent)
	}
	return hashes
}

// cacheStats is vLLM's PrefixCacheStats for new (never preempted)
// requests: how many were admitted, the tokens they queried, the tokens
// found cached.
type cacheStats struct{ requests, queries, hits int }

// recordCacheStats adds one step's admissions to the prefix cache counters
// and to the stats log line's window.
func (s *scheduler) recordCacheStats(st cacheStats) {
	if st.requests == 0 {
		return
	}
	m := s.e.m()
	m.prefixQueries.Add(float64(st.queries))
	m.prefixHits.Add(float64(st.hits))
	s.cacheWin.observe(st)
}

// maxRecentRequests is how many recent requests the logged hit rate
// covers (vLLM's CachingMetrics default).
const maxRecentRequests = 1000

// hitWindow is vLLM's CachingMetrics: the hit rate over the most recent
// steps' admissions, dropping the oldest steps while more than
// maxRecentRequests requests are covered (the newest step always stays).
// The loop observes, the stats logger reads.
type hitWindow struct {
	mu  sync.Mutex
	q   []cacheStats
	agg cacheStats
}

func (w *hitWindow) observe(st cacheStats) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.q = append(w.q, st)
	w.agg.requests += st.requests
	w.agg.queries += st.queries
	w.agg.hits += st.hits
	for len(w.q) > 1 && w.agg.requests > maxRecentRequests {
		old := w.q[0]
		w.q = w.q[1:]
		w.agg.requests -= old.requests
		w.agg.queries -= old.queries
		w.agg.hits -= old.hits
	}
}

// rate is the hit rate in [0, 1]; 0 before any query.
func (w *hitWindow) rate() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.agg.queries == 0 {
		return 0
	}
	return float64(w.agg.hits) / float64(w.agg.queries)
}
