package result

import (
	"math"

	"github.com/servebench/servebench/bench/stats"
)

// Arrival grouping. Events closer than JoinFraction of the reference
// per-token latency (never closer than JoinFloorS) arrived together: one
// arrival. A proxy or gateway that buffers the stream hands the client
// many events in one read, parsed microseconds apart; an engine's own pace
// is one token per step. An arrival of BurstTokens or more tokens is a
// burst; a stream with at least BurstyShare of its tokens in bursts is
// bursty, and its ITL (gaps within a burst are ~0) describes the bursts,
// not the engine.
const (
	JoinFraction = 0.25
	// JoinFloorS keeps the events of one read (parsed microseconds apart)
	// together when the whole answer came in one burst, so the stream's own
	// pace is ~0 too; small enough that an engine sped up 200x (75 us per
	// token) still streams token by token.
	JoinFloorS  = 50e-6
	BurstTokens = 4
	BurstyShare = 0.5
)

// Stutter is how a streamed answer's tokens reached the client: per
// arrival (see JoinFraction), the tokens it carried and the gaps between
// arrivals. One request's, or (RunStutter) a run's.
type Stutter struct {
	Arrivals             int     `json:"arrivals"`
	Tokens               int     `json:"tokens"`
	TokensPerArrivalMean float64 `json:"tokens_per_arrival_mean"`
	TokensPerArrivalMax  int     `json:"tokens_per_arrival_max"`
	// GapMaxS and GapP99S are over the gaps between consecutive arrivals
	// (the wait for the first one is first visible output's).
	GapMaxS float64 `json:"gap_max_s"`
	GapP99S float64 `json:"gap_p99_s"`
	// BurstShare is the share of tokens that arrived BurstTokens or more
	// at once (0: token by token; 1: all in bursts).
	BurstShare float64 `json:"burst_share"`
}

// Bursty reports whether the tokens came in clumps (Clumped).
func (s *Stutter) Bursty() bool { return s != nil && Clumped(s.BurstShare, s.TokensPerArrivalMean) }

// Clumped says whether a stream with this share of tokens in bursts and
// these tokens per arrival came in clumps: most tokens in bursts, and a
// burst's worth per arrival on average. A buffering proxy gives 17 to 256
// tokens per arrival; an engine sped up so far that its steps come tens of
// microseconds apart joins pairs and triples now and then, which the mean
// keeps apart from a proxy's clumps.
func Clumped(burstShare, tokensPerArrival float64) bool {
	return burstShare >= BurstyShare && tokensPerArrival >= BurstTokens
}

// Arrivals calls yield for each arrival of e, in order: the first and last
// event's offsets and the tokens the arrival carried (an event counts at
// least one). refS is the reference per-token latency (the engine's); 0
// takes the events' own pace, (last - first) / (tokens - 1).
func (e Events) Arrivals(refS float64, yield func(firstS, lastS float64, tokens int)) {
	if len(e) == 0 {
		return
	}
	if refS <= 0 {
		refS = e.pace()
	}
	join := max(JoinFraction*refS, JoinFloorS)
	first, tokens := 0, 0
	for i := range e {
		if i > 0 && e[i][0]-e[i-1][0] >= join {
			yield(e[first][0], e[i-1][0], tokens)
			first, tokens = i, 0
		}
		tokens += max(int(e[i][1]), 1)
	}
	yield(e[first][0], e[len(e)-1][0], tokens)
}

// pace is the events' mean time per token, first to last event; 0 when
// they carry fewer than two tokens.
func (e Events) pace() float64 {
	tokens := 0
	for _, ev := range e {
		tokens += max(int(ev[1]), 1)
	}
	if len(e) < 2 || tokens < 2 {
		return 0
	}
	return (e[len(e)-1][0] - e[0][0]) / float64(tokens-1)
}

// Stutter is e's stutter against refS (as Arrivals); nil when e has fewer
// than two events (one arrival says nothing of smoothness).
func (e Events) Stutter(refS float64) *Stutter {
	if len(e) < 2 {
		return nil
	}
	var s Stutter
	var gaps []float64
	var burst int
	prevLast := math.NaN()
	e.Arrivals(refS, func(firstS, lastS float64, tokens int) {
		s.Arrivals++
		s.Tokens += tokens
		s.TokensPerArrivalMax = max(s.TokensPerArrivalMax, tokens)
		if tokens >= BurstTokens {
			burst += tokens
		}
		if !math.IsNaN(prevLast) {
			gaps = append(gaps, firstS-prevLast)
		}
		prevLast = lastS
	})
	s.TokensPerArrivalMean = round4(float64(s.Tokens) / float64(s.Arrivals))
	s.BurstShare = round4(float64(burst) / float64(s.Tokens))
	if g := stats.Summarize(gaps); g != nil {
		s.GapMaxS, s.GapP99S = g.Max, g.P99
	}
	return &s
}

// StutterOf is r's stutter: the one its record keeps, else computed from
// its events (records from before servebench kept one); nil when r did
// not stream at least two token events.
func StutterOf(r *Record) *Stutter {
	if r.Stutter != nil {
		return r.Stutter
	}
	return r.Events.Stutter(0)
}

// ITLOverBursts says that c's ITLS and ITLEventS are computed over
// bursts: most of the run's tokens arrived BurstTokens or more at once
// (stutter.burst_share >= BurstyShare: a buffering proxy), so they measure
// the bursts, not the engine's pace.
func (c *ClientStats) ITLOverBursts() bool {
	return c.ITLS != nil && c.Stutter != nil && c.Stutter.Stutter.Bursty()
}

// RunStutter is a run's stutter over its successful streamed requests:
// arrivals and tokens pooled (so the mean is tokens per arrival over the
// run and BurstShare the run's tokens in bursts), the largest arrival and
// gap of any request, GapP99S over every request's gaps between arrivals
// (an HdrHistogram: within ClientStats.ITLRelativeError).
type RunStutter struct {
	Requests       int `json:"requests"`        // streamed requests with two or more token events
	BurstyRequests int `json:"bursty_requests"` // of which most tokens arrived in bursts
	Stutter
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }
