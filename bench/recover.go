package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
// the records and warnings (a truncated last line is skipped, as Load
// does). Runs the checkpoint marks Incomplete get their counts, client
// figures, duration and throughput from their records; their windows are
// the checkpoint's plus one last window (Incomplete) of the records that
// completed after the last boundary; their engine figures are the
// checkpointed windows' deltas combined (means exact, no quantiles).
// The results are marked Incomplete. Errors are *result.InputError.
func Recover(dir string) (*result.Results, []result.Record, []string, error) {
	cpPath := filepath.Join(dir, result.CheckpointFile)
	data, err := os.ReadFile(cpPath)
	if err != nil {
		return nil, nil, nil, &result.InputError{Path: cpPath, Err: err}
	}
	res, err := result.ParseResults(cpPath, data)
	if err != nil {
		return nil, nil, nil, err
	}
	var recs []result.Record
	var warns []string
	reqPath := filepath.Join(dir, result.RequestsFile)
	switch f, err := os.Open(reqPath); {
	case errors.Is(err, fs.ErrNotExist): // killed before the first request completed
	case err != nil:
		return nil, nil, nil, &result.InputError{Path: reqPath, Err: err}
	default:
		recs, warns, err = result.ReadRecords(reqPath, f)
		f.Close()
		if err != nil {
			return nil, nil, nil, err
		}
	}
	for i := range res.Runs {
		if res.Runs[i].Incomplete {
			rebuildRun(&res.Runs[i], recs)
		}
	}
	res.Incomplete = true
	res.Warnings = append(res.Warnings, fmt.Sprintf("incomplete: servebench stopped mid-run; rebuilt by `servebench report` from %s and %s",
		result.CheckpointFile, result.RequestsFile))
	if err := WriteResults(dir, res); err != nil {
		return res, recs, warns, err
	}
	return res, recs, warns, nil
}

// rebuildRun fills an interrupted run's figures from its records. Every
// window's counts and client figures are recounted from the records too
// (the checkpoint may be ahead of the lines that reached the file), so the
// windows add up to the run; the engine deltas stay the checkpoint's.
func rebuildRun(run *result.Run, recs []result.Record) {
	var all tally
	wins := make([]tally, len(run.Windows)+1) // the last: records after the last checkpoint
	nwin := len(run.Windows)
	end := run.StartedAt.Add(time.Duration(run.DurationS * float64(time.Second)))
	for i := range recs {
		r := &recs[i]
		if r.Run != run.Name || r.Warmup {
			continue
		}
		all.add(r)
		if r.Window > 0 {
			wins[min(r.Window, nwin+1)-1].add(r)
		}
		if e := r.Start.Add(time.Duration(r.E2ES * float64(time.Second))); e.After(end) {
			end = e
		}
	}
	run.Requests, run.OK, run.Errors, run.Retries = all.requests, all.ok, all.errorsMap(), all.retried
	run.Client = all.client()
	run.DurationS = end.Sub(run.StartedAt).Seconds()
	run.Throughput = all.throughput(run.DurationS)
	for k := range run.Windows {
		w := &run.Windows[k]
		setWindowClient(w, &wins[k])
	}
	if rest := &wins[nwin]; rest.requests+rest.retried > 0 {
		w := result.Window{Index: nwin + 1, EndS: run.DurationS, Incomplete: true}
		if nwin > 0 {
			w.StartS = run.Windows[nwin-1].EndS
		}
		setWindowClient(&w, rest)
		run.Windows = append(run.Windows, w)
	}
	run.Engine = combineWindows(run.Windows)
	if run.Engine.TTFTS != nil || run.Engine.E2ES != nil {
		run.Warnings = append(run.Warnings, fmt.Sprintf("incomplete run: engine figures are the checkpointed windows' engine deltas combined (to %.1f s of %.1f s; means only, no quantile estimates)",
			checkpointedS(run.Windows), run.DurationS))
	}
	run.Warnings = append(run.Warnings, "incomplete run: servebench stopped mid-run; counts and client figures are every complete line of requests.jsonl")
}

// setWindowClient sets w's counts and client figures from t.
func setWindowClient(w *result.Window, t *tally) {
	w.Requests, w.OK, w.Errors, w.Client = t.requests, t.ok, t.errorsMap(), t.client()
	w.Throughput = t.throughput(w.EndS - w.StartS)
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
