package stats

import (
	"errors"
	"fmt"
	"math"
	"slices"

	mstats "github.com/montanaflynn/stats"
)

// Pass calls fn with each of a quantity's values, in the same order on
// every call, and returns the first error reading them. It is how a
// Selector reads a column kept outside memory (a file) without loading it.
type Pass func(fn func(x float64)) error

// Selection bounds: each narrowing pass counts 16 bits of the values' keys
// into 65,536 buckets; a wanted rank's bucket is collected and sorted once
// it holds at most Selector.Limit values.
const (
	selectBits    = 16
	selectBuckets = 1 << selectBits
	// DefaultSelectLimit is Selector.Limit when not set: 128K values (1 MiB).
	DefaultSelectLimit = 128 << 10
)

// errCount says a Pass gave another number of values than announced.
var errCount = errors.New("value count changed between passes")

// Selector computes exact Summaries of values read in passes (Pass) in
// memory that does not depend on their number: n at most Limit are
// collected and summarised in place; more are summarised by radix
// selection (Summarize's mean, min and max in one pass, then one pass per
// 16 bits of the wanted ranks' keys until each rank's bucket holds at most
// Limit values, which are collected and sorted). It holds at most 4
// histograms of 65,536 counts (2 MiB) and 4 buckets of Limit values (4 MiB
// at the default 128K), reused from one call to the next, and reads the
// values at most 6 times. A Selector is not safe for concurrent use; its
// zero value is ready.
type Selector struct {
	Limit int // at most this many values are kept at once (0: DefaultSelectLimit)
	hists [][]uint64
	bufs  [][]float64
}

// target is one wanted rank on its way down: the values whose keys start
// with prefix (depth bits of it) hold it, at rank in their sorted order.
type target struct {
	rank   int
	prefix uint64
	depth  uint
	size   int // values with that prefix
	value  float64
	done   bool
}

// group is the targets that share a prefix: one histogram or bucket.
type group struct {
	prefix  uint64
	depth   uint
	collect bool      // the bucket is small enough to collect
	hist    []uint64  // !collect: counts of the next 16 key bits
	vals    []float64 // collect: the bucket's values
	targets []*target
}

// Summarize is Summarize of the n values that pass yields, bit for bit
// (signed zeros aside, which a sort does not order): the mean is summed in
// pass order, the median averages the middle two for even n and the
// percentiles are nearest-rank, as montanaflynn/stats computes them. A NaN
// among the values falls back to loading them all (Summarize's NaN rules).
// nil when n is 0.
func (s *Selector) Summarize(n int, pass Pass) (*Summary, error) {
	limit := s.Limit
	if limit <= 0 {
		limit = DefaultSelectLimit
	}
	if n == 0 {
		return nil, nil
	}
	if n <= limit {
		xs, err := s.collectAll(n, pass, limit)
		if err != nil {
			return nil, err
		}
		return SummarizeInPlace(xs), nil
	}
	sum := &Summary{N: n}
	targets := make([]*target, 0, 4)
	want := func(rank int) *target {
		t := &target{rank: rank, size: n}
		targets = append(targets, t)
		return t
	}
	var medLo, medHi *target
	if n%2 == 0 {
		medLo, medHi = want(n/2-1), want(n/2)
	} else {
		medLo = want(n / 2)
	}
	p90, p99 := want(nearestRankIndex(n, 90)), want(nearestRankIndex(n, 99))

	nan, err := s.firstPass(n, pass, sum, targets)
	if err != nil {
		return nil, err
	}
	if nan {
		xs, err := s.collectAll(n, pass, limit)
		if err != nil {
			return nil, err
		}
		return Summarize(xs), nil
	}
	for !allDone(targets) {
		if err := s.narrow(n, pass, targets, limit); err != nil {
			return nil, err
		}
	}
	if medHi != nil {
		sum.Median, _ = mstats.Float64Data{medLo.value, medHi.value}.Mean() // as mstats.Median
	} else {
		sum.Median = medLo.value
	}
	sum.P90, sum.P99 = p90.value, p99.value
	return sum, nil
}

// nearestRankIndex is the 0-based index nearestRank picks among n sorted values.
func nearestRankIndex(n int, p float64) int {
	if r := int(math.Ceil(float64(n) * p / 100)); r > 0 {
		return r - 1
	}
	return 0
}

// firstPass reads the values once for the mean, min and max, in pass
// order as mstats computes them, and counts their top 16 key bits for all
// targets (which share the empty prefix). It reports a NaN.
func (s *Selector) firstPass(n int, pass Pass, sum *Summary, targets []*target) (nan bool, err error) {
	g := &group{targets: targets, hist: s.hist(0)}
	var total float64
	count := 0
	err = pass(func(x float64) {
		if count == 0 {
			sum.Min, sum.Max = x, x
		}
		count++
		if math.IsNaN(x) {
			nan = true
			return
		}
		total += x
		if x < sum.Min {
			sum.Min = x
		}
		if x > sum.Max {
			sum.Max = x
		}
		g.hist[key(x)>>(64-selectBits)]++
	})
	if err == nil && count != n {
		err = fmt.Errorf("%w: %d, then %d", errCount, n, count)
	}
	if err != nil || nan {
		return nan, err
	}
	if math.IsInf(total, 0) {
		// mstats.Mean's overflow rule: sum again scaled down by a power of
		// two at least n (exact), and scale the mean back up.
		_, e := math.Frexp(float64(n))
		total = 0
		if err := pass(func(x float64) { total += math.Ldexp(x, -e) }); err != nil {
			return false, err
		}
		sum.Mean = math.Ldexp(total/float64(n), e)
	} else {
		sum.Mean = total / float64(n)
	}
	s.descend(g)
	return false, nil
}

// narrow reads the values once: every pending target's group either
// counts the next 16 key bits under its prefix or, when small enough,
// collects its bucket, which settles its targets.
func (s *Selector) narrow(n int, pass Pass, targets []*target, limit int) error {
	var groups []*group
	nh, nb := 0, 0
	for _, t := range targets {
		if t.done {
			continue
		}
		i := slices.IndexFunc(groups, func(g *group) bool { return g.prefix == t.prefix && g.depth == t.depth })
		if i < 0 {
			g := &group{prefix: t.prefix, depth: t.depth, collect: t.size <= limit}
			if g.collect {
				g.vals = s.buf(nb, t.size)
				nb++
			} else {
				g.hist = s.hist(nh)
				nh++
			}
			groups, i = append(groups, g), len(groups)
		}
		groups[i].targets = append(groups[i].targets, t)
	}
	count := 0
	err := pass(func(x float64) {
		count++
		k := key(x)
		for _, g := range groups {
			if k>>(64-g.depth) != g.prefix {
				continue
			}
			if g.collect {
				g.vals = append(g.vals, x)
			} else {
				g.hist[(k>>(64-selectBits-g.depth))&(selectBuckets-1)]++
			}
		}
	})
	if err == nil && count != n {
		err = fmt.Errorf("%w: %d, then %d", errCount, n, count)
	}
	if err != nil {
		return err
	}
	for _, g := range groups {
		if !g.collect {
			s.descend(g)
			continue
		}
		if len(g.vals) != g.targets[0].size {
			return fmt.Errorf("%w: a bucket of %d values, then %d", errCount, g.targets[0].size, len(g.vals))
		}
		slices.Sort(g.vals)
		for _, t := range g.targets {
			t.value, t.done = g.vals[t.rank], true
		}
	}
	return nil
}

// descend moves g's targets one level down, into the bucket of g.hist
// that holds each one's rank; a target whose key is then whole is settled
// (every value in its bucket is the same).
func (s *Selector) descend(g *group) {
	for _, t := range g.targets {
		before := 0
		b := 0
		for ; b < selectBuckets; b++ {
			c := int(g.hist[b])
			if t.rank < before+c {
				break
			}
			before += c
		}
		t.rank -= before
		t.size = int(g.hist[b])
		t.prefix = t.prefix<<selectBits | uint64(b)
		t.depth += selectBits
		if t.depth == 64 {
			t.value, t.done = fromKey(t.prefix), true
		}
	}
}

func allDone(ts []*target) bool {
	return !slices.ContainsFunc(ts, func(t *target) bool { return !t.done })
}

// collectAll reads the n values into the Selector's first buffer, which
// it keeps for the next call only when it holds at most limit.
func (s *Selector) collectAll(n int, pass Pass, limit int) ([]float64, error) {
	xs := s.buf(0, n)
	err := pass(func(x float64) { xs = append(xs, x) })
	if err == nil && len(xs) != n {
		err = fmt.Errorf("%w: %d, then %d", errCount, n, len(xs))
	}
	if n > limit {
		s.bufs[0] = nil
	}
	return xs, err
}

// hist is the Selector's i'th histogram, zeroed.
func (s *Selector) hist(i int) []uint64 {
	for len(s.hists) <= i {
		s.hists = append(s.hists, make([]uint64, selectBuckets))
	}
	clear(s.hists[i])
	return s.hists[i]
}

// buf is the Selector's i'th value buffer, empty, with room for n.
func (s *Selector) buf(i, n int) []float64 {
	for len(s.bufs) <= i {
		s.bufs = append(s.bufs, nil)
	}
	s.bufs[i] = slices.Grow(s.bufs[i][:0], n)
	return s.bufs[i]
}

// key maps a non-NaN float64 to a uint64 in the same order (-0 below +0):
// the sign bit flipped for positives, every bit for negatives.
func key(x float64) uint64 {
	b := math.Float64bits(x)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// fromKey is key's inverse.
func fromKey(k uint64) float64 {
	if k>>63 != 0 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}
