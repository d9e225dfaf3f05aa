package bench

import (
	"fmt"
	"net/url"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine/option"
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
		return option.Errorf("DirectURL", cfg.DirectURL, "expected an http:// or https:// URL of the engine itself")
	case cfg.DirectURL == cfg.Server.BaseURL:
		return option.Errorf("DirectURL", nil, "{DirectURL} is {BaseURL}: expected the engine's own URL beside the proxied one")
	case cfg.Search != nil:
		return option.Errorf("DirectURL", nil, "{DirectURL} with {Search}: the search's steps have no direct side")
	}
	return nil
}

// newDirectState is the direct side of st: its own name, figures and
// records; it shares st's contexts and results file and is sent in
// lockstep with it.
func newDirectState(st *runState) *runState {
	spec := *st.spec
	spec.Name += DirectSuffix
	d := &runState{spec: &spec, sendCtx: st.sendCtx, stop: st.stop, reqCtx: st.reqCtx, textSalt: st.textSalt}
	d.coll = &collector{spec: &spec, records: st.coll.records, bounded: st.coll.bounded}
	return d
}

// send sends req (turn k of j, attempt) through the path under test and,
// with a direct side, the same request straight to the engine, one after
// the other, the order alternating request by request so that neither path
// always goes second. A retried attempt goes through the path only.
func (s *sender) send(st *runState, j *job, k, attempt int, req *client.Request) client.Trace {
	if st.direct == nil || attempt > 1 {
		return s.client.Do(st.reqCtx, req)
	}
	directFirst := (j.index+k)%2 == 1
	if directFirst {
		s.sendDirect(st, j, k, req)
	}
	tr := s.client.Do(st.reqCtx, req)
	if !directFirst {
		s.sendDirect(st, j, k, req)
	}
	return tr
}

// sendDirect sends req to the engine directly and keeps its record in the
// direct side. The engine counts it, so the run's reconciliation counts it
// as sent.
func (s *sender) sendDirect(st *runState, j *job, k int, req *client.Request) {
	d := st.direct
	dreq := *req
	dreq.KeepText = false // the session's next turn follows the path's answer
	if s.requestIDs {
		dreq.ID = RequestID(d.spec.Name, j.index)
	}
	if !j.warmup {
		st.sent.Add(1)
	}
	tr := s.direct.Do(st.reqCtx, &dreq)
	d.coll.keepDirect(attemptRecord(d, j, k, &dreq, &tr, 0))
}

// directRun is the direct side d's run, once run (the path's) is complete:
// its client figures; the engine's are run's, whose /metrics delta covers
// both paths' requests. url is the direct URL, redacted, that run records.
func directRun(run *result.Run, d *runState, url string) *result.Run {
	run.Workload.DirectURL = url
	drun := &result.Run{Name: d.spec.Name, Stream: run.Stream, Workload: run.Workload, StartedAt: run.StartedAt,
		DurationS: run.DurationS, Shard: run.Shard}
	run.Workload.Path, run.Workload.PairedWith = result.PathProxied, drun.Name
	drun.Workload.Path, drun.Workload.PairedWith = result.PathDirect, run.Name
	acc := &d.coll.acc
	acc.Fill(drun, d.spec.SLO)
	if err := acc.Tally.SpillErr(); err != nil {
		drun.Warnings = append(drun.Warnings, fmt.Sprintf("figures missing: %v", err))
	}
	drun.Engine.Reconciliation = &result.Reconciliation{Sent: drun.Requests, OK: drun.OK, Completed: acc.Completed,
		EngineAbsent: true, Note: fmt.Sprintf("the engine's figures for both paths are run %s's: one /metrics delta covers them", run.Name)}
	return drun
}
