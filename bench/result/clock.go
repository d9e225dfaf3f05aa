package result

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Clock names (Clock.Name, --clock).
const (
	// ClockWall is the machine's own time, as measured.
	ClockWall = "wall"
	// ClockModelled is the emulated hardware's time: a bundled engine at
	// --speedup K runs K times faster than the GPU it emulates, so a
	// wall-clock second is K modelled seconds.
	ClockModelled = "modelled"
)

// ClockNames are --clock's values, in the order help text lists them.
var ClockNames = []string{ClockModelled, ClockWall}

// Clock is the time a session's figures are given and read in (results.json
// "clock"). Every stored figure stays in wall-clock time under its own key;
// the modelled clock converts at the edges: what a user types (SLOs, rates,
// durations) with FromModelled, what is printed with ToModelled. Under the
// wall clock both are the identity, so callers convert unconditionally. A
// Clock is a value; safe for concurrent use.
type Clock struct {
	Name string `json:"name"` // ClockModelled or ClockWall
	// Speedup is the bundled engine's --speedup: modelled seconds per
	// wall-clock second (1 when not sped up).
	Speedup float64 `json:"speedup"`
	// StartupSpeedup is the engine's --startup-speedup when it differs
	// from Speedup: its start-up phases run that much faster instead.
	StartupSpeedup float64 `json:"startup_speedup,omitempty"`
	// Note says, in results.json, what the keys hold.
	Note string `json:"note,omitempty"`

	shown bool // a Results view already in this clock (View)
}

// clockNote is results.json's reminder of which keys are which.
const clockNote = "figures under every other key are wall-clock (measured); each run's \"modelled\" block and max_rate_modelled repeat them in the emulated hardware's time (seconds x speedup, rates / speedup)"

// NewClock is the clock name for a bundled engine at speedup (0 or 1: not
// sped up). The default name ("") is modelled when the engine is sped up,
// wall otherwise.
func NewClock(name string, speedup float64) (Clock, error) {
	if speedup <= 0 {
		speedup = 1
	}
	switch {
	case name == "" && speedup != 1:
		name = ClockModelled
	case name == "":
		name = ClockWall
	case !slices.Contains(ClockNames, name):
		return Clock{}, fmt.Errorf("%q: expected one of %s", name, strings.Join(ClockNames, ", "))
	}
	c := Clock{Name: name, Speedup: speedup}
	if c.Modelled() {
		c.Note = clockNote
	}
	return c, nil
}

// Modelled reports whether c converts (the modelled clock of a sped-up engine).
func (c Clock) Modelled() bool { return c.Name == ClockModelled && c.Speedup > 0 && c.Speedup != 1 }

// factor is the shown seconds per wall-clock second.
func (c Clock) factor() float64 {
	if c.Modelled() {
		return c.Speedup
	}
	return 1
}

// startupFactor is factor for the server's start-up phases.
func (c Clock) startupFactor() float64 {
	if c.Modelled() && c.StartupSpeedup > 0 {
		return c.StartupSpeedup
	}
	return c.factor()
}

// ToModelled converts wall-clock seconds into c's seconds.
func (c Clock) ToModelled(wallS float64) float64 { return wallS * c.factor() }

// FromModelled converts seconds of c into wall-clock seconds.
func (c Clock) FromModelled(s float64) float64 { return s / c.factor() }

// RateToModelled converts a wall-clock rate (per second) into c's.
func (c Clock) RateToModelled(perWallS float64) float64 { return perWallS / c.factor() }

// RateFromModelled converts a rate per second of c into a wall-clock rate.
func (c Clock) RateFromModelled(perS float64) float64 { return perS * c.factor() }

// DurationFromModelled converts a duration of c into wall-clock time.
func (c Clock) DurationFromModelled(d time.Duration) time.Duration {
	return time.Duration(math.Round(float64(d) / c.factor()))
}

// DurationToModelled converts a wall-clock duration into c's.
func (c Clock) DurationToModelled(d time.Duration) time.Duration {
	return time.Duration(math.Round(float64(d) * c.factor()))
}

// SLOFromModelled converts thresholds given in c's time into wall-clock ones.
func (c Clock) SLOFromModelled(s SLO) SLO { return s.scaled(c.DurationFromModelled) }

// SLOToModelled converts wall-clock thresholds into c's time.
func (c Clock) SLOToModelled(s SLO) SLO { return s.scaled(c.DurationToModelled) }

// scaled is s with every threshold converted by f (percentiles kept).
func (s SLO) scaled(f func(time.Duration) time.Duration) SLO {
	for _, k := range SLOKeys {
		d := s.field(k)
		*d = f(*d)
	}
	return s
}

// Caption is the sentence a table or chart states its clock with; "" for
// the wall clock of an engine that is not sped up (the only time there is).
func (c Clock) Caption() string {
	switch {
	case c.Modelled():
		return fmt.Sprintf("Clock: modelled, the emulated hardware's time (the bundled engine ran %sx faster; results.json keeps the wall-clock figures too).", FormatFactor(c.Speedup))
	case c.Speedup > 0 && c.Speedup != 1:
		return fmt.Sprintf("Clock: wall, this machine's time (the bundled engine ran %sx faster than the hardware it emulates).", FormatFactor(c.Speedup))
	}
	return ""
}

// Short is the clock's name for a table header or a log line: "modelled
// (x4)", "wall".
func (c Clock) Short() string {
	if c.Modelled() {
		return "modelled (x" + FormatFactor(c.Speedup) + ")"
	}
	return ClockWall
}

// FormatFactor writes a speed-up factor as typed: 4, 2.5.
func FormatFactor(k float64) string { return strconv.FormatFloat(k, 'g', -1, 64) }

// ClockOf is the clock res was recorded in (results.json "clock"); for
// results older than it, the wall clock (what their figures and inputs
// were) with the bundled engine's speed-up, so ClockAs can still convert.
func ClockOf(res *Results) Clock {
	if res.Clock != nil {
		c := *res.Clock
		c.shown = false
		return c
	}
	c := Clock{Name: ClockWall, Speedup: 1}
	if bd := res.Server.Bundled; bd != nil && bd.Speedup > 0 {
		c.Speedup = bd.Speedup
	}
	return c
}

// ClockAs is res's clock under another name ("" keeps its own): compare
// --clock and table's view of old results.
func ClockAs(res *Results, name string) Clock {
	c := ClockOf(res)
	if name != "" {
		c.Name = name
	}
	return c
}
