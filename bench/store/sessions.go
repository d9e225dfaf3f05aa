package store

import (
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// SessionAcc follows a run's multi-turn sessions (records with a session
// id) for Run.Sessions: each session's first send, last end and whether
// every measured turn succeeded. One entry per session.
type SessionAcc struct {
	by    map[string]*sessionSpan
	order []string
}

type sessionSpan struct {
	first, last time.Time
	turns       int
	failed      bool
}

// Add takes a measured record of a session (others are left out).
func (a *SessionAcc) Add(r *result.Record) {
	if r.Session == "" || r.Warmup || r.Retried {
		return
	}
	if a.by == nil {
		a.by = map[string]*sessionSpan{}
	}
	s := a.by[r.Session]
	if s == nil {
		s = &sessionSpan{first: r.Start}
		a.by[r.Session] = s
		a.order = append(a.order, r.Session)
	}
	end := r.Start.Add(time.Duration(r.E2ES * float64(time.Second)))
	if r.Start.Before(s.first) {
		s.first = r.Start
	}
	if end.After(s.last) {
		s.last = end
	}
	s.turns++
	s.failed = s.failed || r.Error != ""
}

// Stats are the run's session figures, nil without sessions: how many,
// how many had every turn succeed, and those sessions' lengths (first
// send to last answer, think time included) and turns.
func (a *SessionAcc) Stats() *result.SessionStats {
	if len(a.order) == 0 {
		return nil
	}
	st := &result.SessionStats{Sessions: len(a.order)}
	var lengths, turns []float64
	for _, id := range a.order {
		s := a.by[id]
		if s.failed {
			continue
		}
		st.Whole++
		lengths = append(lengths, s.last.Sub(s.first).Seconds())
		turns = append(turns, float64(s.turns))
	}
	st.LengthS, st.Turns = stats.Summarize(lengths), stats.Summarize(turns)
	return st
}
