package compare

import (
	"fmt"

	"github.com/servebench/servebench/bench/result"
)

// Drift splits one result set into two sides to compare: each run's first
// --interval window (base) and its last (new), so Compare judges whether
// a server degraded over a soak with the same tests and limits as two
// result sets. A window side's run carries the window's counts, client
// and engine figures; its records are those that completed in the window
// (Record.Window). The last window is the last complete one (a window
// rebuilt after a crash is left out). Runs with fewer than two windows are left out; none
// left is an error wrapping ErrInput.
func Drift(s *Side) (first, last *Side, err error) {
	first = &Side{Path: s.Path + " (first window)", Warnings: s.Warnings}
	last = &Side{Path: s.Path + " (last window)"}
	fr, lr := *s.Results, *s.Results
	fr.Runs, lr.Runs = nil, nil
	for i := range s.Results.Runs {
		run := &s.Results.Runs[i]
		n := len(run.Windows) - 1 // the last window a run completed
		for n > 0 && run.Windows[n].Incomplete {
			n--
		}
		if n < 1 {
			continue
		}
		fr.Runs = append(fr.Runs, windowRun(run, &run.Windows[0]))
		lr.Runs = append(lr.Runs, windowRun(run, &run.Windows[n]))
		first.Records = appendWindow(first.Records, s.Records, run.Name, run.Windows[0].Index)
		last.Records = appendWindow(last.Records, s.Records, run.Name, run.Windows[n].Index)
	}
	if len(fr.Runs) == 0 {
		return nil, nil, &InputError{Path: s.Path, Err: fmt.Errorf("no run has two or more windows: --drift compares a run's last --interval window with its first (run with --interval, or --duration over 10m)")}
	}
	first.Results, last.Results = &fr, &lr
	return first, last, nil
}

// windowRun is run as window w saw it.
func windowRun(run *result.Run, w *result.Window) result.Run {
	r := *run
	r.Requests, r.OK, r.Errors, r.Retries = w.Requests, w.OK, w.Errors, 0
	r.DurationS, r.Throughput, r.Client = w.EndS-w.StartS, w.Throughput, w.Client
	r.Engine = result.EngineStats{}
	if w.Engine != nil {
		r.Engine = w.Engine.EngineStats
	}
	r.Windows, r.Rate = nil, nil
	return r
}

// appendWindow appends run's records that completed in window index.
func appendWindow(dst, recs []result.Record, run string, index int) []result.Record {
	for _, r := range recs {
		if r.Run == run && r.Window == index {
			dst = append(dst, r)
		}
	}
	return dst
}
