package fleet

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

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/store"
	"github.com/servebench/servebench/engine/option"
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
	// Log, when set, gets each run's start skew per shard.
	Log io.Writer
}

// shardDir is one shard's saved results: one run (run --shard) or a
// sweep's levels (sweep --shard), each with the same shard block.
type shardDir struct {
	dir  string
	name string // for messages: dir, or the log and line its block began at
	res  *result.Results
}

// shard is the directory's shard block.
func (s *shardDir) shard() *result.Shard { return s.res.Runs[0].Shard }

// Merge combines the results directories of a sharded run (or sweep) into
// one, as if one machine had sent the whole run: it checks that the shards
// belong together (same runs, workloads and seed, same N, every K once: an
// ErrUsage naming what is wrong), and per run (a sweep: per level) writes
// the union of the shards' records in completion order, recomputes every
// client statistic from those records, and takes the engine figures over
// the merged window: from the shards' saved /metrics snapshots (see
// mergeSnapshots), or, for
// Prometheus, one query over the merged window. Only runs[].shard tells
// the merged results.json from a one-machine run's. The records are
// streamed (mergeStream): memory holds the statistics' samples, not the
// records, so the report reads the merged file back (report.ChartRecords).
func Merge(ctx context.Context, o MergeOptions) (*result.Results, error) {
	for _, d := range o.Dirs {
		if filepath.Clean(d) == filepath.Clean(o.Out) {
			return nil, fmt.Errorf("%w: %w", bench.ErrUsage, option.Errorf("Out", nil, "{Out} %s is one of the shards: expected a new directory", o.Out))
		}
	}
	inputs, cleanup, err := shardInputs(o.Dirs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", bench.ErrUsage, err)
	}
	defer cleanup()
	shards, err := loadShards(inputs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", bench.ErrUsage, err)
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", bench.ErrUsage, &option.FieldError{Field: "Out", Reason: "results directory ({Out})", Err: err})
	}
	first := shards[0]
	accs := make([]*mergeAcc, len(first.res.Runs))
	for i := range accs {
		accs[i] = newMergeAcc(&first.res.Runs[i])
		accs[i].steady = bench.NewSteadyState(&first.res.Runs[i].Workload, shardsStart(shards, i))
	}
	if err := mergeStream(shards, filepath.Join(o.Out, result.RequestsFile), accs); errors.Is(err, result.ErrInput) {
		return nil, fmt.Errorf("%w: %w", bench.ErrUsage, err)
	} else if err != nil {
		return nil, err
	}
	res := &result.Results{Schema: result.Schema, Manifest: bench.NewManifest(o.Version, o.Args), Server: first.res.Server,
		Runs: []result.Run{}, Warnings: []string{}}
	// The shards ran one build with one set of labels: the merge keeps them,
	// so a merged run lands in the history as a one-machine run would.
	res.Manifest.Labels, res.Manifest.Build = first.res.Manifest.Labels, first.res.Manifest.Build
	for i, acc := range accs {
		run := mergeRun(shards, i, acc)
		mergeEngine(ctx, shards, i, run, acc)
		res.Runs = append(res.Runs, *run)
		for _, w := range run.Warnings {
			res.Warnings = append(res.Warnings, run.Name+": "+w)
		}
	}
	if c := first.res.Clock; c != nil {
		c.Annotate(res) // the merged figures in the shards' clock, as one machine's
	}
	if o.Log != nil {
		logSkews(o.Log, shards)
	}
	return res, store.WriteResults(o.Out, res)
}

// logSkews writes each run's start skew per shard: how late each started
// after its planned instant (runs[].shard.start_skew_s).
func logSkews(w io.Writer, shards []*shardDir) {
	for i, run := range shards[0].res.Runs {
		if run.Shard.StartAt == nil {
			continue
		}
		var parts []string
		for _, s := range shards {
			sh := s.res.Runs[i].Shard
			parts = append(parts, fmt.Sprintf("%d/%d %+.3f s", sh.Index, sh.Count, sh.StartSkewS))
		}
		fmt.Fprintf(w, "start skew %s (planned %s): %s\n", run.Name, run.Shard.StartAt.UTC().Format(time.RFC3339Nano), strings.Join(parts, ", "))
	}
}

// loadShards reads every input's directory and checks that they are the N
// shards of one run or sweep: each one shard (readShard), all of the same
// run as the first (sameRun), every index once (complete).
func loadShards(inputs []shardDir) ([]*shardDir, error) {
	if len(inputs) == 0 {
		return nil, errors.New("merge: expected the shards' results directories")
	}
	var shards []*shardDir
	for _, in := range inputs {
		s, err := readShard(in)
		if err != nil {
			return nil, err
		}
		shards = append(shards, s)
	}
	slices.SortStableFunc(shards, func(a, b *shardDir) int { return cmp.Compare(a.shard().Index, b.shard().Index) })
	for _, s := range shards[1:] {
		if err := sameRun(s, shards[0]); err != nil {
			return nil, err
		}
	}
	if err := complete(shards); err != nil {
		return nil, err
	}
	return shards, nil
}

// readShard reads in's results.json and checks that its runs are of one
// shard.
func readShard(in shardDir) (*shardDir, error) {
	path := filepath.Join(in.dir, result.ResultsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &result.InputError{Path: path, Err: errors.New("missing: not a finished shard (killed before writing it?)")}
	}
	res, err := result.ParseResults(path, data)
	if err != nil {
		return nil, err
	}
	if len(res.Runs) == 0 || slices.ContainsFunc(res.Runs, func(r result.Run) bool { return r.Shard == nil }) {
		return nil, fmt.Errorf("%s: not one shard of a run (expected runs with a shard block: servebench run or sweep --shard K/N)", in.name)
	}
	sh := res.Runs[0].Shard
	for _, r := range res.Runs[1:] {
		if r.Shard.Index != sh.Index || r.Shard.Count != sh.Count {
			return nil, fmt.Errorf("%s: runs of shard %d/%d and %d/%d: not one shard", in.name, sh.Index, sh.Count, r.Shard.Index, r.Shard.Count)
		}
	}
	return &shardDir{dir: in.dir, name: in.name, res: res}, nil
}

// sameRun checks that shard s is of the run ref is: the same shard count,
// runs, server, workloads and planned starts.
func sameRun(s, ref *shardDir) error {
	n := ref.shard().Count
	switch sh := s.shard(); {
	case sh.Count != n:
		return fmt.Errorf("%s is shard %d/%d but %s is %d/%d: not the same run", s.name, sh.Index, sh.Count, ref.name, ref.shard().Index, n)
	case !slices.Equal(runNames(s), runNames(ref)):
		// A sweep's shard that stopped early (late for a level, killed
		// between levels) ran fewer levels than the others.
		return fmt.Errorf("%s ran %q, %s ran %q: not the same run", s.name, strings.Join(runNames(s), ", "), ref.name, strings.Join(runNames(ref), ", "))
	case s.res.Server.BaseURL != ref.res.Server.BaseURL:
		return fmt.Errorf("%s loaded %s, %s loaded %s: not the same server", s.name, s.res.Server.BaseURL, ref.name, ref.res.Server.BaseURL)
	}
	for i := range s.res.Runs {
		a, b := s.res.Runs[i].Workload, ref.res.Runs[i].Workload
		if !reflect.DeepEqual(a, b) {
			return fmt.Errorf("%s and %s have different workloads (%s%s): not the same run", s.name, ref.name, runLabel(s, i), workloadDiff(a, b))
		}
		if x, y := s.res.Runs[i].Shard.StartAt, ref.res.Runs[i].Shard.StartAt; (x == nil) != (y == nil) || (x != nil && !x.Equal(*y)) {
			return fmt.Errorf("%s and %s planned %sdifferent starts (%s vs %s): not started together (the same --start-at and --level-gap?)",
				s.name, ref.name, runLabel(s, i), startText(x), startText(y))
		}
	}
	return nil
}

// complete checks that shards (of one run, sorted by index) hold every
// index of the run once.
func complete(shards []*shardDir) error {
	n := shards[0].shard().Count
	have := map[int]string{}
	for _, s := range shards {
		k := s.shard().Index
		if prev, dup := have[k]; dup {
			return fmt.Errorf("shard %d/%d given twice: %s and %s", k, n, prev, s.name)
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
		return fmt.Errorf("shard %s missing: a merge needs every shard of the run (got %d of %d)", strings.Join(missing, ", "), len(shards), n)
	}
	return nil
}

// runNames lists the shard's runs in order.
func runNames(s *shardDir) []string {
	names := make([]string, len(s.res.Runs))
	for i, r := range s.res.Runs {
		names[i] = r.Name
	}
	return names
}

// runLabel names run i in an error ("" for a shard of one run).
func runLabel(s *shardDir, i int) string {
	if len(s.res.Runs) == 1 {
		return ""
	}
	return "run " + s.res.Runs[i].Name + ": "
}

// startText formats a planned start for an error.
func startText(at *time.Time) string {
	if at == nil {
		return "none"
	}
	return at.UTC().Format(time.RFC3339Nano)
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

// mergeStream writes the shards' records to path run by run (a sweep's
// levels in order, as one machine writes them), each run's in the order
// mergeRecords gives (completion, ties in shard order), feeding that run's
// acc in that order, holding mergeWindow records per shard: a k-way merge
// of the shards' files, each line copied as read. A file out of order by
// more than the window (never seen from servebench) is merged in memory
// instead, with the same result.
func mergeStream(shards []*shardDir, path string, accs []*mergeAcc) error {
	err := writeLines(path, func(emit func(*result.Record, []byte) error) error {
		return mergeRuns(shards, func(run int, r *result.Record, raw []byte) error {
			accs[run].add(r)
			return emit(r, raw)
		})
	})
	if !errors.Is(err, errDisorder) {
		return err
	}
	for _, acc := range accs {
		acc.reset()
	}
	return writeLines(path, func(emit func(*result.Record, []byte) error) error {
		for run, acc := range accs {
			recs, err := mergeRecords(shards, run)
			if err != nil {
				return err
			}
			for i := range recs {
				acc.add(&recs[i])
				if err := emit(&recs[i], nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// shardReader reads one shard's requests.jsonl run by run: a shard does its
// runs one after another, so each run's records are one stretch of its
// file.
type shardReader struct {
	path string
	rr   *result.RecordReader
	seq  int64      // records read
	held *mergeItem // read ahead: the first record of a later run
}

// runIndex is the position of each run's name in the shards' runs.
func runIndex(s *shardDir) map[string]int {
	order := map[string]int{}
	for i, r := range s.res.Runs {
		order[r.Name] = i
	}
	return order
}

// unlisted is the error for a record of a run results.json does not list.
func unlisted(path string, line int, run string) error {
	return &result.InputError{Path: path, Line: line, Err: fmt.Errorf("a record of run %q, which results.json does not list", run)}
}

// mergeRuns calls emit for every shard record, run after run, each run's
// in completion order (ties in shard order, then file order), or returns
// errDisorder.
func mergeRuns(shards []*shardDir, emit func(run int, r *result.Record, raw []byte) error) error {
	readers := make([]*shardReader, len(shards))
	for k, s := range shards {
		path := filepath.Join(s.dir, result.RequestsFile)
		f, err := os.Open(path)
		if err != nil {
			return &result.InputError{Path: path, Err: err}
		}
		defer f.Close()
		readers[k] = &shardReader{path: path, rr: result.NewRecordReader(path, f)}
	}
	order := runIndex(shards[0])
	for run := range shards[0].res.Runs {
		if err := kwayMerge(readers, order, run, func(r *result.Record, raw []byte) error { return emit(run, r, raw) }); err != nil {
			return err
		}
	}
	return nil
}

// kwayMerge calls emit for every record of run (its index in order) in
// completion order (ties in shard order, then file order), reading each
// shard up to its first record of a later run; or returns errDisorder.
func kwayMerge(readers []*shardReader, order map[string]int, run int, emit func(*result.Record, []byte) error) error {
	h := make(mergeHeap, 0, len(readers)*mergeWindow)
	var last *mergeItem // the last emitted
	var free []*mergeItem
	read := func(k int) error {
		sr := readers[k]
		it := sr.held
		if it == nil {
			it = &mergeItem{}
			if n := len(free); n > 0 {
				it, free = free[n-1], free[:n-1]
				*it = mergeItem{}
			}
			raw, err := sr.rr.Next(&it.rec)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			it.at, it.shard, it.seq, it.raw = done(&it.rec).UnixNano(), int64(k), sr.seq, raw
			sr.seq++
			if _, ok := order[it.rec.Run]; !ok {
				return unlisted(sr.path, sr.rr.Line(), it.rec.Run)
			}
		}
		sr.held = nil
		switch j := order[it.rec.Run]; {
		case j > run: // this shard's part of run is done
			sr.held = it
			return nil
		case j < run, last != nil && it.less(last):
			return errDisorder
		}
		heap.Push(&h, it)
		return nil
	}
	for k := range readers {
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
// checked) and merges the records of their run'th run into one completion
// order, as one machine would have written them. The records are held
// once: each shard's records are appended to one slice sized from the
// files' line counts, and the order is applied in place (each record moved
// once, by the cycles of the sorting permutation).
func mergeRecords(shards []*shardDir, run int) ([]result.Record, error) {
	n := 0
	for _, s := range shards {
		lines, err := countLines(filepath.Join(s.dir, result.RequestsFile))
		if err != nil {
			return nil, err
		}
		n += lines
	}
	order, name := runIndex(shards[0]), shards[0].res.Runs[run].Name
	all := make([]result.Record, 0, n)
	for _, s := range shards {
		path := filepath.Join(s.dir, result.RequestsFile)
		f, err := os.Open(path)
		if err != nil {
			return nil, &result.InputError{Path: path, Err: err}
		}
		rr := result.NewRecordReader(path, f)
		for {
			var rec result.Record
			_, err := rr.Next(&rec)
			if err == io.EOF {
				break
			}
			if _, ok := order[rec.Run]; err == nil && !ok {
				err = unlisted(path, rr.Line(), rec.Run)
			}
			if err != nil {
				f.Close()
				return nil, err
			}
			if rec.Run == name {
				all = append(all, rec)
			}
		}
		f.Close()
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
	exact int        // RunAcc.Add's exactTokens: max_tokens with --exact-length, else 0
	slo   result.SLO // the goodput's, zero without one
	acc   store.RunAcc
	rate  bool
	lags  store.Column
	last  time.Time // the latest first-attempt send
	// steady is the merged run's steady state (set by Merge, which knows
	// the shards' common start).
	steady *bench.SteadyState
}

// newMergeAcc accumulates for the run ref is a shard of.
func newMergeAcc(ref *result.Run) *mergeAcc {
	m := &mergeAcc{rate: ref.Rate != nil}
	if ref.Workload.ExactLength {
		m.exact = ref.Workload.MaxTokens
	}
	if g := ref.Goodput; g != nil {
		m.slo, _ = result.ParseSLO(g.SLO)
	}
	return m
}

func (m *mergeAcc) reset() {
	*m = mergeAcc{exact: m.exact, slo: m.slo, rate: m.rate, steady: m.steady}
	if m.steady != nil {
		m.steady.Reset()
	}
}

func (m *mergeAcc) add(r *result.Record) {
	m.acc.Add(r, m.exact, m.slo)
	if m.steady != nil {
		m.steady.Add(r)
	}
	if m.rate && !r.Warmup && r.Attempt <= 1 && r.Turn <= 1 {
		m.lags.Add(r.IntendedLagS)
		if r.Start.After(m.last) {
			m.last = r.Start
		}
	}
}

// mergeRun computes the shards' i'th run from the merged records'
// accumulator as Runner.Run computes it from its own.
func mergeRun(shards []*shardDir, i int, m *mergeAcc) *result.Run {
	ref := &shards[0].res.Runs[i]
	run := &result.Run{Name: ref.Name, Stream: ref.Stream, Workload: ref.Workload, StartedAt: ref.StartedAt}
	var end time.Time
	for _, s := range shards {
		sr := &s.res.Runs[i]
		if sr.StartedAt.Before(run.StartedAt) {
			run.StartedAt = sr.StartedAt
		}
		if e := sr.StartedAt.Add(time.Duration(sr.DurationS * float64(time.Second))); e.After(end) {
			end = e
		}
		run.Retries += sr.Retries
	}
	run.DurationS = end.Sub(run.StartedAt).Seconds()
	m.acc.Fill(run, m.slo)
	if m.steady != nil {
		run.Steady, run.Saturation = m.steady.Finish()
	}
	if ref.Rate != nil {
		last := run.StartedAt
		if m.last.After(last) {
			last = m.last
		}
		run.Rate = store.RateStatsOf(&m.lags, run.StartedAt, last, ref.Rate.TargetPerS*float64(ref.Shard.Count))
		if w := store.LateWarning(run.Rate, &run.Workload); w != "" {
			run.Warnings = append(run.Warnings, w)
		}
	}
	if run.Workload.ExactLength {
		if w := m.acc.Exact.Warning(run.Workload.MaxTokens); w != "" {
			run.Warnings = append(run.Warnings, w)
		}
	}
	return run
}

// mergeEngine fills the merged i'th run's engine figures and reconciliation.
func mergeEngine(ctx context.Context, shards []*shardDir, i int, run *result.Run, ma *mergeAcc) {
	// Every measured attempt sent has its record.
	rec := &result.Reconciliation{OK: run.OK, Sent: ma.acc.Tally.Requests + ma.acc.Tally.Retried, Completed: ma.acc.Completed}
	run.Engine.Reconciliation = rec
	ref := shards[0]
	dl, _ := scrape.Lookup(ref.res.Server.Dialect)
	// No model filter: results.json does not say whether the shards had one.
	// Passes: a P/D deployment's engines count each request twice, as the
	// shards' own runs expected.
	m := &bench.Metrics{URLs: ref.res.Server.MetricsURL, Dialect: dl, Passes: ref.res.Server.EnginePasses}
	why := otherEngines(shards)
	if u := ref.res.Server.PrometheusURL; u != "" {
		if why != "" {
			engineAbsent(run, rec, why)
			return
		}
		var selector string // from a shard whose window was read
		for _, s := range shards {
			if src := s.res.Runs[i].Engine.Source; src != nil && src.Kind == result.SourcePrometheus {
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
		m.PromFigures(ctx, run, rec)
		return
	}
	if s := ownServer(shards); s != nil {
		// Each shard process started its server: as many servers as shards
		// (one base URL only by a fixed port), and a delta from one's
		// snapshot to another's is nobody's account of the run (nor is
		// the cause otherEngines would name: it follows from this).
		why = fmt.Sprintf("each shard started its own server (%s: %s), so their /metrics snapshots are of different servers; "+
			"engine figures absent: run the shards with --base-url at one server", s.name, s.res.Server.Command)
	}
	if why != "" {
		engineAbsent(run, rec, why)
		return
	}
	before, after, err := mergeSnapshots(shards, i)
	if err != nil {
		run.Warnings = append(run.Warnings, "engine figures absent: "+err.Error())
		return
	}
	if m.Dialect == nil {
		run.Warnings = append(run.Warnings, "engine figures absent: the shards' /metrics had no metric family servebench knows")
		return
	}
	m.Figures(run, rec, before, after)
	mergeGauges(shards, i, run.Engine.Replicas)
}

// engineAbsent leaves the merged run's engine figures out, saying why in
// the reconciliation and the run's warnings.
func engineAbsent(run *result.Run, rec *result.Reconciliation, why string) {
	rec.Note, rec.EngineAbsent = why, true
	run.Warnings = append(run.Warnings, why)
}

// otherEngines says why the shards' engine figures cannot be merged when
// they read different /metrics (server.metrics_urls: a delta from one
// shard's snapshot to another's spans engines neither read alone) or
// counted a request's passes differently (server.engine_passes: one saw a
// P/D deployment's instances, one some of them); "" when they agree.
func otherEngines(shards []*shardDir) string {
	ref := shards[0]
	for _, s := range shards[1:] {
		a, b := s.res.Server, ref.res.Server
		if bench.SameURLs(a.MetricsURL, b.MetricsURL) && max(a.EnginePasses, 1) == max(b.EnginePasses, 1) {
			continue
		}
		return fmt.Sprintf("%s read the engines at %s (engine_passes %d), %s at %s (engine_passes %d): not the same engines; "+
			"engine figures absent: run the shards with the same --metrics-url", s.name, urlList(a.MetricsURL), max(a.EnginePasses, 1),
			ref.name, urlList(b.MetricsURL), max(b.EnginePasses, 1))
	}
	return ""
}

// urlList is a shard's metrics_urls in a message.
func urlList(urls []string) string {
	if len(urls) == 0 {
		return "none (Prometheus)"
	}
	return strings.Join(urls, ", ")
}

// ownServer returns a shard that started its server (server.command: a
// servebench shard's own process), or nil when none did or there is one
// shard.
func ownServer(shards []*shardDir) *shardDir {
	if len(shards) < 2 {
		return nil
	}
	for _, s := range shards {
		if s.res.Server.Command != "" {
			return s
		}
	}
	return nil
}

// mergeSnapshots returns the before- and after-snapshot the shards saved
// for their i'th run that span the engine's account of the whole merged
// window: the latest after-snapshot, and the latest before-snapshot taken
// by the planned start (each shard takes its own after its warm-up and,
// in a sweep, after its previous level drained, so an earlier one could
// count another shard's warm-up or previous level; one taken after the
// start, by a late shard, could miss the first requests); without a
// planned start, or when none was taken by it, the earliest.
func mergeSnapshots(shards []*shardDir, i int) (before, after *scrape.Snapshot, err error) {
	name := shards[0].res.Runs[i].Name
	var befores []*scrape.Snapshot
	for _, s := range shards {
		b, berr := scrape.ParseFile(filepath.Join(s.dir, bench.SnapshotFile(name+".before")))
		a, aerr := scrape.ParseFile(filepath.Join(s.dir, bench.SnapshotFile(name+".after")))
		if err := errors.Join(berr, aerr); err != nil {
			return nil, nil, fmt.Errorf("shard %s: its saved /metrics snapshots: %w", s.name, err)
		}
		befores = append(befores, b)
		if after == nil || a.At.After(after.At) {
			after = a
		}
	}
	byAt := func(a, b *scrape.Snapshot) int { return a.At.Compare(b.At) }
	if at := shards[0].res.Runs[i].Shard.StartAt; at != nil {
		inTime := slices.DeleteFunc(slices.Clone(befores), func(b *scrape.Snapshot) bool { return b.At.After(*at) })
		if len(inTime) > 0 {
			return slices.MaxFunc(inTime, byAt), after, nil
		}
	}
	return slices.MinFunc(befores, byAt), after, nil
}

// mergeGauges sets each merged replica's KV usage in the shards' i'th run
// from the shards' own: every shard sampled the same replica over (nearly)
// the same window, so the merged mean is the shards' means weighted by
// their samples, the maximum theirs.
func mergeGauges(shards []*shardDir, i int, reps []result.Replica) {
	for r := range reps {
		var sum, mx float64
		n := 0
		for _, s := range shards {
			for _, sr := range s.res.Runs[i].Engine.Replicas {
				g := sr.KVUsage
				if sr.Name != reps[r].Name || g == nil {
					continue
				}
				k := max(g.Samples, 1) // a source that does not count its samples
				if n == 0 || g.Max > mx {
					mx = g.Max
				}
				sum += g.Mean * float64(k)
				n += k
			}
		}
		if n > 0 {
			reps[r].KVUsage = &result.Gauge{Mean: sum / float64(n), Max: mx, Samples: n}
		}
	}
}

// shardsStart is the earliest start of the shards' i'th run: the merged
// run's.
func shardsStart(shards []*shardDir, i int) time.Time {
	start := shards[0].res.Runs[i].StartedAt
	for _, s := range shards[1:] {
		if t := s.res.Runs[i].StartedAt; t.Before(start) {
			start = t
		}
	}
	return start
}
