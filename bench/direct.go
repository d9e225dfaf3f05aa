package bench

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/client"
)

// DirectSuffix names the direct side of a run sent with Config.DirectURL
// (--direct-url): run "streaming" goes through the path under test
// (--base-url: a proxy, a gateway), "streaming-direct" straight to the
// engine, request by request.
const DirectSuffix = "-direct"

// checkDirectURL checks --direct-url: an http(s) URL other than the base
// URL, on a plain run (a max-rate search's steps have no direct side).
func checkDirectURL(cfg *Config) error {
	if cfg.DirectURL == "" {
		return nil
	}
	u, err := url.Parse(cfg.DirectURL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("--direct-url %q: expected an http:// or https:// URL of the engine itself", cfg.DirectURL)
	case cfg.DirectURL == cfg.Server.BaseURL:
		return errors.New("--direct-url is --base-url: expected the engine's own URL beside the proxied one")
	case cfg.Search != nil:
		return errors.New("--direct-url with --find-max-rate: the search's steps have no direct side")
	}
	return nil
}

// newDirectState is the direct side of st: its own name, figures and
// records; it shares st's contexts and is sent in lockstep with it.
func newDirectState(st *runState) *runState {
	spec := *st.spec
	spec.Name += DirectSuffix
	return &runState{spec: &spec, sendCtx: st.sendCtx, stop: st.stop, reqCtx: st.reqCtx, textSalt: st.textSalt}
}

// send sends req (turn k of j, attempt) through the path under test and,
// with a direct side, the same request straight to the engine, one after
// the other, the order alternating request by request so that neither path
// always goes second. A retried attempt goes through the path only.
func (r *Runner) send(st *runState, j *job, k, attempt int, req *client.Request) client.Trace {
	if st.direct == nil || attempt > 1 {
		return r.Client.Do(st.reqCtx, req)
	}
	directFirst := (j.index+k)%2 == 1
	if directFirst {
		r.sendDirect(st, j, k, req)
	}
	tr := r.Client.Do(st.reqCtx, req)
	if !directFirst {
		r.sendDirect(st, j, k, req)
	}
	return tr
}

// sendDirect sends req to the engine directly and keeps its record in the
// direct side. The engine counts it, so the run's reconciliation counts it
// as sent.
func (r *Runner) sendDirect(st *runState, j *job, k int, req *client.Request) {
	d := st.direct
	dreq := *req
	dreq.KeepText = false // the session's next turn follows the path's answer
	if r.RequestIDs {
		dreq.ID = RequestID(d.spec.Name, j.index)
	}
	if !j.warmup {
		st.sent.Add(1)
	}
	tr := r.Direct.Do(st.reqCtx, &dreq)
	rec := attemptRecord(d, j, k, &dreq, &tr, 0)
	_ = r.Records.Write(&rec)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.acc.Add(&rec, d.spec.exactTokens(), d.spec.SLO)
	if !r.Bounded {
		d.recs = append(d.recs, rec)
	}
}

// directRun is the direct side's run, once run (the path's) is complete:
// its client figures; the engine's are run's, whose /metrics delta covers
// both paths' requests.
func (r *Runner) directRun(run *result.Run, st *runState) *result.Run {
	d := st.direct
	run.Workload.DirectURL = r.DirectURL
	drun := &result.Run{Name: d.spec.Name, Stream: run.Stream, Workload: run.Workload, StartedAt: run.StartedAt,
		DurationS: run.DurationS, Shard: run.Shard}
	run.Workload.Path, run.Workload.PairedWith = result.PathProxied, drun.Name
	drun.Workload.Path, drun.Workload.PairedWith = result.PathDirect, run.Name
	d.acc.Fill(drun, d.spec.SLO)
	r.commonErr[drun.Name] = d.acc.Fails.Commonest()
	if err := d.acc.Tally.SpillErr(); err != nil {
		drun.Warnings = append(drun.Warnings, fmt.Sprintf("figures missing: %v", err))
	}
	drun.Engine.Reconciliation = &result.Reconciliation{Sent: drun.Requests, OK: drun.OK, Completed: d.acc.Completed,
		EngineAbsent: true, Note: fmt.Sprintf("the engine's figures for both paths are run %s's: one /metrics delta covers them", run.Name)}
	return drun
}

// TakeDirect returns the direct side of the last run, and its records,
// once; nil without --direct-url.
func (r *Runner) TakeDirect() (*result.Run, []result.Record) {
	d, recs := r.lastDirect, r.lastDirectRecs
	r.lastDirect, r.lastDirectRecs = nil, nil
	return d, recs
}
