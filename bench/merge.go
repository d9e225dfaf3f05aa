package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/scrape/promql"
)

// MergeOptions say which shard directories to merge and where to.
type MergeOptions struct {
	// Dirs are the shards: results directories (servebench run --shard
	// K/N), or logs holding them as blocks (run --results-to-log: a pod's
	// saved `kubectl logs`, one or more shards each).
	Dirs    []string
	Out     string // the merged results directory (created)
	Version string
	Args    []string
}

// shardDir is one shard's saved results.
type shardDir struct {
	dir  string
	name string // for messages: dir, or the log and line its block began at
	res  *result.Results
	run  *result.Run
}

// Merge combines the results directories of a sharded run into one, as if
// one machine had sent the whole run: it checks that the shards belong
// together (same run, workload and seed, same N, every K once: an ErrUsage
// naming what is wrong), writes the union of their requests.jsonl in
// completion order, recomputes every client statistic from those records,
// and takes the engine figures over the merged window: from each shard's
// saved /metrics snapshots (the earliest before-snapshot to the latest
// after-snapshot), or, for Prometheus, one query over the merged window.
// Only runs[].shard tells the merged results.json from a one-machine run's.
// The records are streamed (mergeStream): memory holds the statistics'
// samples, not the records, so the report reads the merged file back
// (report.ChartRecords).
func Merge(ctx context.Context, o MergeOptions) (*result.Results, error) {
	for _, d := range o.Dirs {
		if filepath.Clean(d) == filepath.Clean(o.Out) {
			return nil, fmt.Errorf("%w: --out %s is one of the shards: expected a new directory", ErrUsage, o.Out)
		}
	}
	inputs, cleanup, err := shardInputs(o.Dirs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	defer cleanup()
	shards, err := loadShards(inputs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("%w: results directory (--out): %w", ErrUsage, err)
	}
	acc := newMergeAcc(shards[0].run)
	if err := mergeStream(shards, filepath.Join(o.Out, result.RequestsFile), acc); errors.Is(err, result.ErrInput) {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	} else if err != nil {
		return nil, err
	}
	first := shards[0]
	res := &result.Results{Schema: result.Schema, Manifest: NewManifest(o.Version, o.Args), Server: first.res.Server,
		Runs: []result.Run{}, Warnings: []string{}}
	run := mergeRun(shards, acc)
	mergeEngine(ctx, shards, run, acc)
	res.Runs = append(res.Runs, *run)
	for _, w := range run.Warnings {
		res.Warnings = append(res.Warnings, run.Name+": "+w)
	}
	return res, WriteResults(o.Out, res)
}

// loadShards reads every input's directory and checks that they are the N
// shards of one run.
func loadShards(inputs []shardDir) ([]*shardDir, error) {
	if len(inputs) == 0 {
		return nil, errors.New("merge: expected the shards' results directories")
	}
	var shards []*shardDir
	for _, in := range inputs {
		d := in.dir
		path := filepath.Join(d, result.ResultsFile)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, &result.InputError{Path: path, Err: errors.New("missing: not a finished shard (killed before writing it?)")}
		}
		res, err := result.ParseResults(path, data)
		if err != nil {
			return nil, err
		}
		if len(res.Runs) != 1 || res.Runs[0].Shard == nil {
			return nil, fmt.Errorf("%s: not one shard of a run (expected one run with a shard block: servebench run --shard K/N)", in.name)
		}
		shards = append(shards, &shardDir{dir: d, name: in.name, res: res, run: &res.Runs[0]})
	}
	slices.SortStableFunc(shards, func(a, b *shardDir) int { return cmp.Compare(a.run.Shard.Index, b.run.Shard.Index) })
	ref := shards[0]
	n := ref.run.Shard.Count
	for _, s := range shards[1:] {
		switch sh := s.run.Shard; {
		case sh.Count != n:
			return nil, fmt.Errorf("%s is shard %d/%d but %s is %d/%d: not the same run", s.name, sh.Index, sh.Count, ref.name, ref.run.Shard.Index, n)
		case s.run.Name != ref.run.Name:
			return nil, fmt.Errorf("%s ran %q, %s ran %q: not the same run", s.name, s.run.Name, ref.name, ref.run.Name)
		case !reflect.DeepEqual(s.run.Workload, ref.run.Workload):
			return nil, fmt.Errorf("%s and %s have different workloads (%s): not the same run", s.name, ref.name, workloadDiff(s.run.Workload, ref.run.Workload))
		case s.res.Server.BaseURL != ref.res.Server.BaseURL:
			return nil, fmt.Errorf("%s loaded %s, %s loaded %s: not the same server", s.name, s.res.Server.BaseURL, ref.name, ref.res.Server.BaseURL)
		}
	}
	have := map[int]string{}
	for _, s := range shards {
		k := s.run.Shard.Index
		if prev, dup := have[k]; dup {
			return nil, fmt.Errorf("shard %d/%d given twice: %s and %s", k, n, prev, s.name)
		}
		have[k] = s.name
	}
	var missing []string
	for k := range n {
		if _, ok := have[k]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", k, n))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("shard %s missing: a merge needs every shard of the run (got %d of %d)", strings.Join(missing, ", "), len(shards), n)
	}
	return shards, nil
}

// workloadDiff names the first workload field that differs.
func workloadDiff(a, b result.Workload) string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			return fmt.Sprintf("%s %v vs %v", va.Type().Field(i).Name, va.Field(i).Interface(), vb.Field(i).Interface())
		}
	}
	return "?"
}

// done is when a record's request ended (its start if it never answered).
func done(r *result.Record) time.Time {
	return r.Start.Add(time.Duration(r.E2ES * float64(time.Second)))
}

// mergeWindow is how many records of each shard the streaming merge holds
// ahead: a shard's requests.jsonl is in the order its records were written,
// which may differ from their completion times (done) by a few records
// completing together.
const mergeWindow = 256

// mergeItem is one record waiting in the streaming merge.
type mergeItem struct {
	at, shard, seq int64 // the stable sort's key: completion, shard, line
	rec            result.Record
	raw            []byte
}

func (a *mergeItem) less(b *mergeItem) bool {
	return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.shard, b.shard), cmp.Compare(a.seq, b.seq)) < 0
}

// mergeHeap is a min-heap of mergeItems.
type mergeHeap []*mergeItem

func (h mergeHeap) Len() int           { return len(h) }
func (h mergeHeap) Less(i, j int) bool { return h[i].less(h[j]) }
func (h mergeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)        { *h = append(*h, x.(*mergeItem)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// errDisorder says a shard's file strayed further from completion order
// than mergeWindow: mergeStream starts over in memory.
var errDisorder = errors.New("records further out of completion order than the merge window")

// mergeStream writes the shards' records to path in the order
// mergeRecords gives (completion, ties in shard order), feeding acc in
// that order, holding mergeWindow records per shard: a k-way merge of
// the shards' files, each line copied as read. A file out of order by
// more than the window (never seen from servebench run) is merged in
// memory instead, with the same result.
func mergeStream(shards []*shardDir, path string, acc *mergeAcc) error {
	err := writeLines(path, func(emit func(*result.Record, []byte) error) error {
		return kwayMerge(shards, func(r *result.Record, raw []byte) error {
			acc.add(r)
			return emit(r, raw)
		})
	})
	if !errors.Is(err, errDisorder) {
		return err
	}
	acc.reset()
	recs, err := mergeRecords(shards)
	if err != nil {
		return err
	}
	return writeLines(path, func(emit func(*result.Record, []byte) error) error {
		for i := range recs {
			acc.add(&recs[i])
			if err := emit(&recs[i], nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// kwayMerge calls emit for every shard record in completion order (ties in
// shard order, then file order), or returns errDisorder.
func kwayMerge(shards []*shardDir, emit func(*result.Record, []byte) error) error {
	readers := make([]*result.RecordReader, len(shards))
	seqs := make([]int64, len(shards))
	for k, s := range shards {
		path := filepath.Join(s.dir, result.RequestsFile)
		f, err := os.Open(path)
		if err != nil {
			return &result.InputError{Path: path, Err: err}
		}
		defer f.Close()
		readers[k] = result.NewRecordReader(path, f)
	}
	h := make(mergeHeap, 0, len(shards)*mergeWindow)
	var last *mergeItem // the last emitted
	var free []*mergeItem
	read := func(k int) error {
		it := &mergeItem{}
		if n := len(free); n > 0 {
			it, free = free[n-1], free[:n-1]
			*it = mergeItem{}
		}
		raw, err := readers[k].Next(&it.rec)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		it.at, it.shard, it.seq, it.raw = done(&it.rec).UnixNano(), int64(k), seqs[k], raw
		seqs[k]++
		if last != nil && it.less(last) {
			return errDisorder
		}
		heap.Push(&h, it)
		return nil
	}
	for k := range shards {
		for range mergeWindow {
			if err := read(k); err != nil {
				return err
			}
		}
	}
	for h.Len() > 0 {
		it := heap.Pop(&h).(*mergeItem)
		if err := emit(&it.rec, it.raw); err != nil {
			return err
		}
		if last != nil {
			free = append(free, last)
		}
		last = it
		if err := read(int(it.shard)); err != nil {
			return err
		}
	}
	return nil
}

// mergeRecords reads the shards' requests.jsonl (after the shards were
// checked) and merges their records into one completion order, as one
// machine would have written them. The records are held once: each shard's
// records are appended to one slice sized from the files' line counts, and
// the order is applied in place (each record moved once, by the cycles of
// the sorting permutation).
func mergeRecords(shards []*shardDir) ([]result.Record, error) {
	n := 0
	for _, s := range shards {
		lines, err := countLines(filepath.Join(s.dir, result.RequestsFile))
		if err != nil {
			return nil, err
		}
		n += lines
	}
	all := make([]result.Record, 0, n)
	for _, s := range shards {
		path := filepath.Join(s.dir, result.RequestsFile)
		f, err := os.Open(path)
		if err != nil {
			return nil, &result.InputError{Path: path, Err: err}
		}
		recs, _, err := result.ReadRecords(path, f)
		f.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, recs...)
	}
	n = len(all)
	at := make([]int64, n)
	perm := make([]int32, n)
	for i := range all {
		at[i] = done(&all[i]).UnixNano()
		perm[i] = int32(i)
	}
	// Stable: simultaneous completions keep the shards' order.
	slices.SortStableFunc(perm, func(a, b int32) int { return cmp.Compare(at[a], at[b]) })
	// Position j takes the record at perm[j]; a placed position is -1.
	for i := range perm {
		if perm[i] < 0 {
			continue
		}
		tmp, j := all[i], i
		for {
			k := int(perm[j])
			perm[j] = -1
			if k == i {
				all[j] = tmp
				break
			}
			all[j] = all[k]
			j = k
		}
	}
	return all, nil
}

// countLines counts the lines of path, to size the merged records once.
func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, &result.InputError{Path: path, Err: err}
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	n := 0
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n + 1, nil // a last line may lack its newline
		}
		if err != nil {
			return 0, &result.InputError{Path: path, Err: err}
		}
	}
}

// writeRecords writes requests.jsonl as RecordWriter encodes it, one
// record at a time (no queue: the records are all here already).
func writeRecords(path string, recs []result.Record) error {
	return writeLines(path, func(emit func(*result.Record, []byte) error) error {
		for i := range recs {
			if err := emit(&recs[i], nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeLines creates path and writes what each calls emit with: a line as
// read (a newline added where it had none), or with raw nil the record
// encoded as RecordWriter encodes it.
func writeLines(path string, each func(emit func(r *result.Record, raw []byte) error) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	err = each(func(r *result.Record, raw []byte) error {
		if raw == nil {
			return enc.Encode(r)
		}
		if _, err := bw.Write(raw); err != nil || raw[len(raw)-1] == '\n' {
			return err
		}
		return bw.WriteByte('\n')
	})
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, result.ErrInput) && !errors.Is(err, errDisorder) {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return err
}

// mergeAcc is what the merge keeps of the records, fed in merged order:
// a run's accumulator (compact samples, never the records) and the send
// lags of the schedule's first attempts.
type mergeAcc struct {
	spec RunSpec // what runAcc reads: SLO, exact length
	acc  runAcc
	rate bool
	lags column
	last time.Time // the latest first-attempt send
}

// newMergeAcc accumulates for the run ref is a shard of.
func newMergeAcc(ref *result.Run) *mergeAcc {
	m := &mergeAcc{rate: ref.Rate != nil}
	m.spec.Request.ExactLength, m.spec.Request.MaxTokens = ref.Workload.ExactLength, ref.Workload.MaxTokens
	if g := ref.Goodput; g != nil {
		m.spec.SLO, _ = result.ParseSLO(g.SLO)
	}
	return m
}

func (m *mergeAcc) reset() { *m = mergeAcc{spec: m.spec, rate: m.rate} }

func (m *mergeAcc) add(r *result.Record) {
	m.acc.add(r, &m.spec)
	if m.rate && !r.Warmup && r.Attempt <= 1 && r.Turn <= 1 {
		m.lags.add(r.IntendedLagS)
		if r.Start.After(m.last) {
			m.last = r.Start
		}
	}
}

// mergeRun computes the run from the merged records' accumulator as
// Runner.Run computes it from its own.
func mergeRun(shards []*shardDir, m *mergeAcc) *result.Run {
	ref := shards[0].run
	run := &result.Run{Name: ref.Name, Stream: ref.Stream, Workload: ref.Workload, StartedAt: ref.StartedAt}
	var end time.Time
	for _, s := range shards {
		if s.run.StartedAt.Before(run.StartedAt) {
			run.StartedAt = s.run.StartedAt
		}
		if e := s.run.StartedAt.Add(time.Duration(s.run.DurationS * float64(time.Second))); e.After(end) {
			end = e
		}
		run.Retries += s.run.Retries
	}
	run.DurationS = end.Sub(run.StartedAt).Seconds()
	acc := &m.acc
	run.Requests, run.OK, run.Errors = acc.t.requests, acc.t.ok, acc.t.errorsMap()
	run.Client = acc.t.client()
	run.Throughput = acc.t.throughput(run.DurationS)
	judged(run, &acc.prompt, acc.goodput, m.spec.SLO)
	if ref.Rate != nil {
		last := run.StartedAt
		if m.last.After(last) {
			last = m.last
		}
		run.Rate = rateStatsOf(&m.lags, run.StartedAt, last, ref.Rate.TargetPerS*float64(ref.Shard.Count))
		if w := lateWarning(run.Rate); w != "" {
			run.Warnings = append(run.Warnings, w)
		}
	}
	if run.Workload.ExactLength {
		if w := acc.exact.warning(run.Workload.MaxTokens); w != "" {
			run.Warnings = append(run.Warnings, w)
		}
	}
	return run
}

// mergeEngine fills the merged run's engine figures and reconciliation.
func mergeEngine(ctx context.Context, shards []*shardDir, run *result.Run, ma *mergeAcc) {
	// Every measured attempt sent has its record.
	rec := &result.Reconciliation{OK: run.OK, Sent: ma.acc.t.requests + ma.acc.t.retried, Completed: ma.acc.completed}
	run.Engine.Reconciliation = rec
	ref := shards[0]
	dl, _ := scrape.Lookup(ref.res.Server.Dialect)
	// No model filter: results.json does not say whether the shards had one.
	m := &Metrics{URLs: ref.res.Server.MetricsURL, Dialect: dl}
	if u := ref.res.Server.PrometheusURL; u != "" {
		var selector string // from a shard whose window was read
		for _, s := range shards {
			if src := s.run.Engine.Source; src != nil && src.Kind == result.SourcePrometheus {
				selector = src.Selector
			}
		}
		sel, err := promql.ParseSelector(selector)
		if err == nil {
			m.Prom, err = promql.New(promql.Options{URL: u, Selector: sel, Filter: m.Filter})
		}
		if err != nil {
			run.Warnings = append(run.Warnings, "engine figures absent: the shards' Prometheus source: "+err.Error())
			return
		}
		(&Runner{Metrics: m}).promFigures(ctx, run, rec)
		return
	}
	before, after, err := mergeSnapshots(shards, run.Name)
	if err != nil {
		run.Warnings = append(run.Warnings, "engine figures absent: "+err.Error())
		return
	}
	if m.Dialect == nil {
		run.Warnings = append(run.Warnings, "engine figures absent: the shards' /metrics had no metric family servebench knows")
		return
	}
	m.figures(run, rec, before, after)
	mergeGauges(shards, run.Engine.Replicas)
}

// mergeSnapshots returns the earliest before-snapshot and the latest
// after-snapshot the shards saved: the engine's account of the whole
// merged window.
func mergeSnapshots(shards []*shardDir, name string) (before, after *scrape.Snapshot, err error) {
	for _, s := range shards {
		b, berr := scrape.ParseFile(filepath.Join(s.dir, SnapshotFile(name+".before")))
		a, aerr := scrape.ParseFile(filepath.Join(s.dir, SnapshotFile(name+".after")))
		if err := errors.Join(berr, aerr); err != nil {
			return nil, nil, fmt.Errorf("shard %s: its saved /metrics snapshots: %w", s.name, err)
		}
		if before == nil || b.At.Before(before.At) {
			before = b
		}
		if after == nil || a.At.After(after.At) {
			after = a
		}
	}
	return before, after, nil
}
