package store

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/servebench/servebench/bench/result"
)

// NeedsRecovery reports whether dir holds a checkpoint.json that results.json
// does not supersede: results.json is missing or older (servebench stopped
// mid-run, e.g. kill -9).
func NeedsRecovery(dir string) bool {
	cp, err := os.Stat(filepath.Join(dir, result.CheckpointFile))
	if err != nil {
		return false
	}
	res, err := os.Stat(filepath.Join(dir, result.ResultsFile))
	return err != nil || res.ModTime().Before(cp.ModTime())
}

// Recover rebuilds dir/results.json from dir/checkpoint.json and
// dir/requests.jsonl after servebench stopped mid-run, and returns it with
// the warnings (a truncated last line is skipped, as Load does). Runs the
// checkpoint marks Incomplete get their counts, client figures, duration
// and throughput from their records; their windows are the checkpoint's
// plus one last window (Incomplete) of the records that completed after
// the last boundary; their engine figures are the checkpointed windows'
// deltas combined (means exact, no quantiles). requests.jsonl is streamed
// one record at a time into the tallies a bounded run uses (samples spilled
// to unlinked files in dir, ITL in histograms), so the rebuild holds no
// record: a day's soak is rebuilt in the memory that ran it. The results
// are marked Incomplete. Errors are *result.InputError.
func Recover(dir string) (*result.Results, []string, error) {
	return recoverDir(dir, rebuildLimits{})
}

// rebuildLimits are the rebuild's knobs; the zero value is Recover's.
// Tests set them small to take the paths a long soak takes.
type rebuildLimits struct {
	openWindows int // window tallies open at once (0: defaultOpenWindows)
}

// defaultOpenWindows: records reach requests.jsonl in about their windows'
// order (see runRebuild), so a few open windows take all but stragglers.
const defaultOpenWindows = 4

func recoverDir(dir string, lim rebuildLimits) (*result.Results, []string, error) {
	cpPath := filepath.Join(dir, result.CheckpointFile)
	data, err := os.ReadFile(cpPath)
	if err != nil {
		return nil, nil, &result.InputError{Path: cpPath, Err: err}
	}
	res, err := result.ParseResults(cpPath, data)
	if err != nil {
		return nil, nil, err
	}
	if lim.openWindows <= 0 {
		lim.openWindows = defaultOpenWindows
	}
	var rbs []*runRebuild
	for i := range res.Runs {
		if res.Runs[i].Incomplete {
			rbs = append(rbs, newRunRebuild(&res.Runs[i], dir, lim))
		}
	}
	defer func() {
		for _, rb := range rbs {
			rb.close()
		}
	}()
	reqPath := filepath.Join(dir, result.RequestsFile)
	warns, err := scanFile(reqPath, func(r *result.Record) {
		for _, rb := range rbs {
			rb.add(r)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	for _, rb := range rbs {
		rb.closeAll()
	}
	// Windows that got a record after they were closed are counted again,
	// a few at a time, each in one more pass over the file.
	for {
		var redo []*runRebuild
		for _, rb := range rbs {
			if rb.reopenLate() {
				redo = append(redo, rb)
			}
		}
		if len(redo) == 0 {
			break
		}
		if _, err := scanFile(reqPath, func(r *result.Record) {
			for _, rb := range redo {
				rb.addToWindow(r)
			}
		}); err != nil {
			return nil, nil, err
		}
		for _, rb := range redo {
			rb.closeAll()
		}
	}
	for _, rb := range rbs {
		rb.finish()
		warns = append(warns, rb.spillWarns...)
	}
	res.Incomplete = true
	res.Warnings = append(res.Warnings, fmt.Sprintf("incomplete: servebench stopped mid-run; rebuilt by `servebench report` from %s and %s",
		result.CheckpointFile, result.RequestsFile))
	if err := WriteResults(dir, res); err != nil {
		return res, warns, err
	}
	return res, warns, nil
}

// scanFile calls fn with each record of path (none when it does not exist:
// killed before the first request completed) and returns the warnings.
func scanFile(path string, fn func(*result.Record)) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &result.InputError{Path: path, Err: err}
	}
	defer f.Close()
	return result.ScanRecords(path, f, func(r *result.Record) error {
		fn(r)
		return nil
	})
}

// runRebuild fills an interrupted run's figures from its records, fed one
// at a time: the run's tally and one per window slot. Every window's counts
// and client figures are recounted from the records too (the checkpoint
// may be ahead of the lines that reached the file), so the windows add up
// to the run; the engine deltas stay the checkpoint's. A record goes to
// slot min(Window, nwin+1)-1, the last slot (nwin) holding the records that
// completed after the last checkpointed boundary. A window is assigned
// just before its record is queued for writing, so records reach the file
// in about their windows' order: at most openWindows slots are open (their
// samples spilled, as a bounded run's), the lowest closed (summarised into
// its window) when one more opens; a record of a slot already closed marks
// it late, to be counted again in a later pass (reopenLate, addToWindow).
type runRebuild struct {
	run  *result.Run
	dir  string
	lim  rebuildLimits
	all  Tally
	nwin int
	end  time.Time

	open    map[int]*Tally
	closed  []bool         // by slot
	late    []bool         // by slot: closed, then a record of it came
	restWin *result.Window // slot nwin's window, once closed

	spillWarns []string // samples kept in memory: where and why
}

func newRunRebuild(run *result.Run, dir string, lim rebuildLimits) *runRebuild {
	nwin := len(run.Windows)
	rb := &runRebuild{run: run, dir: dir, lim: lim, nwin: nwin, open: map[int]*Tally{},
		closed: make([]bool, nwin+1), late: make([]bool, nwin+1),
		end: run.StartedAt.Add(time.Duration(run.DurationS * float64(time.Second)))}
	rb.all = rb.newTally("the run")
	return rb
}

// newTally is an empty tally, its samples spilled to files in dir (on
// failure kept in memory, with a warning: the figures are the same).
func (rb *runRebuild) newTally(what string) Tally {
	var t Tally
	if err := t.Spill(rb.dir); err != nil {
		rb.spillWarns = append(rb.spillWarns, fmt.Sprintf("rebuilding %s, %s: %v", rb.run.Name, what, err))
	}
	return t
}

// add counts r in the run and in its window slot.
func (rb *runRebuild) add(r *result.Record) {
	if r.Run != rb.run.Name || r.Warmup {
		return
	}
	rb.all.Add(r)
	if e := r.Start.Add(time.Duration(r.E2ES * float64(time.Second))); e.After(rb.end) {
		rb.end = e
	}
	if r.Window <= 0 {
		return
	}
	s := min(r.Window, rb.nwin+1) - 1
	t := rb.open[s]
	if t == nil && !rb.closed[s] && len(rb.open) == rb.lim.openWindows {
		if lo := slices.Min(slices.Collect(maps.Keys(rb.open))); s < lo {
			rb.closed[s] = true // older than every open slot: counted in a later pass
		} else {
			rb.closeSlot(lo)
		}
	}
	if rb.closed[s] {
		rb.late[s] = true
		return
	}
	if t == nil {
		nt := rb.newTally(fmt.Sprintf("window slot %d", s+1))
		t = &nt
		rb.open[s] = t
	}
	t.Add(r)
}

// addToWindow counts r in its slot when that slot is open (a late pass).
func (rb *runRebuild) addToWindow(r *result.Record) {
	if r.Run != rb.run.Name || r.Warmup || r.Window <= 0 {
		return
	}
	if t := rb.open[min(r.Window, rb.nwin+1)-1]; t != nil {
		t.Add(r)
	}
}

// reopenLate opens up to openWindows late slots afresh for a pass over
// the file and reports whether it opened any.
func (rb *runRebuild) reopenLate() bool {
	for s, late := range rb.late {
		if !late || len(rb.open) == rb.lim.openWindows {
			continue
		}
		rb.late[s], rb.closed[s] = false, false
		t := rb.newTally(fmt.Sprintf("window slot %d", s+1))
		rb.open[s] = &t
	}
	return len(rb.open) > 0
}

// closeSlot summarises slot s into its window and releases its files.
func (rb *runRebuild) closeSlot(s int) {
	t := rb.open[s]
	delete(rb.open, s)
	rb.closed[s] = true
	if s < rb.nwin {
		SetWindowClient(&rb.run.Windows[s], t)
	} else if t.Requests+t.Retried > 0 {
		// The last slot closes after the first pass (it is the highest, so
		// never the lowest open one), when the run's end is known.
		w := result.Window{Index: rb.nwin + 1, EndS: rb.end.Sub(rb.run.StartedAt).Seconds(), Incomplete: true}
		if rb.nwin > 0 {
			w.StartS = rb.run.Windows[rb.nwin-1].EndS
		}
		SetWindowClient(&w, t)
		rb.restWin = &w
	}
	if err := t.SpillErr(); err != nil {
		rb.run.Warnings = append(rb.run.Warnings, fmt.Sprintf("figures missing: window slot %d: %v", s+1, err))
	}
	t.Close()
}

// closeAll closes every open slot, lowest first.
func (rb *runRebuild) closeAll() {
	for _, s := range slices.Sorted(maps.Keys(rb.open)) {
		rb.closeSlot(s)
	}
}

// finish sets the run's figures once every slot is closed: windows that
// got no record are recounted as empty.
func (rb *runRebuild) finish() {
	run := rb.run
	t := &rb.all
	run.DurationS = rb.end.Sub(run.StartedAt).Seconds()
	t.fill(run)
	run.Retries = t.Retried
	if err := t.SpillErr(); err != nil {
		run.Warnings = append(run.Warnings, fmt.Sprintf("figures missing: %v", err))
	}
	for s := range rb.nwin {
		if !rb.closed[s] {
			SetWindowClient(&run.Windows[s], &Tally{})
		}
	}
	if w := rb.restWin; w != nil {
		run.Windows = append(run.Windows, *w)
	}
	run.Engine = combineWindows(run.Windows)
	if run.Engine.TTFTS != nil || run.Engine.E2ES != nil {
		run.Warnings = append(run.Warnings, fmt.Sprintf("incomplete run: engine figures are the checkpointed windows' engine deltas combined (to %.1f s of %.1f s; means only, no quantile estimates)",
			checkpointedS(run.Windows), run.DurationS))
	}
	run.Warnings = append(run.Warnings, "incomplete run: servebench stopped mid-run; counts and client figures are every complete line of requests.jsonl")
}

// close releases every tally's files.
func (rb *runRebuild) close() {
	rb.all.Close()
	for _, t := range rb.open {
		t.Close()
	}
}

// SetWindowClient sets w's counts and client figures from t.
func SetWindowClient(w *result.Window, t *Tally) {
	w.Requests, w.OK, w.Errors, w.Client = t.Requests, t.OK, t.ErrorsMap(), t.Client()
	w.Throughput = t.Throughput(w.EndS - w.StartS)
}

// checkpointedS is the end of the last window with engine figures.
func checkpointedS(ws []result.Window) float64 {
	end := 0.0
	for _, w := range ws {
		if w.Engine != nil {
			end = w.EndS
		}
	}
	return end
}

// combineWindows adds the windows' engine histogram deltas: counts add up,
// means weighted by count (exact, as the deltas' sums add up); quantile
// estimates need the buckets, which windows do not keep, so they stay 0.
func combineWindows(ws []result.Window) result.EngineStats {
	var es result.EngineStats
	for _, eq := range engineQuantities {
		var count, sum float64
		for _, w := range ws {
			if w.Engine == nil {
				continue
			}
			if h := eq.get(&w.Engine.EngineStats); h != nil {
				count += h.Count
				sum += h.Mean * h.Count
			}
		}
		if count > 0 {
			eq.set(&es, &result.Hist{Mean: sum / count, Count: count})
		}
	}
	return es
}
