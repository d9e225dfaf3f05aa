package result

// CheckpointFile is the file a run in progress rewrites (by atomic rename)
// at its start and at every --interval boundary: what results.json would
// hold so far, marked Incomplete. `servebench report` rebuilds results.json
// from it and requests.jsonl when results.json is missing or older.
const CheckpointFile = "checkpoint.json"

// Window is one --interval slice of a run. A request belongs to the window
// in which it completed (Record.Window), so windows' counts add up to the
// run's; the engine figures are the /metrics delta between the scrapes at
// the window's two boundaries (the first starts at the run's before-run
// scrape, the last ends at its after-run scrape), so they add up to the
// run's delta as well.
type Window struct {
	Index      int            `json:"index"`   // 1-based, as Record.Window
	StartS     float64        `json:"start_s"` // from the run's start
	EndS       float64        `json:"end_s"`
	Requests   int            `json:"requests"` // outcomes, as Run.Requests
	OK         int            `json:"ok"`
	Errors     map[string]int `json:"errors"`
	Throughput Throughput     `json:"throughput"`
	Client     ClientStats    `json:"client"`
	Engine     *WindowEngine  `json:"engine,omitempty"` // nil: no /metrics
	// Incomplete marks a window rebuilt after servebench stopped mid-run:
	// its client figures come from requests.jsonl, it has no engine figures.
	Incomplete bool `json:"incomplete,omitempty"`
}

// WindowEngine is the engine's account of one window: histogram deltas
// (EngineStats) plus the gauges read at the window's end, and the
// preemption and finished-request counter deltas.
type WindowEngine struct {
	EngineStats
	Requests    *float64 `json:"requests,omitempty"`    // finished-request counter delta
	Preemptions *float64 `json:"preemptions,omitempty"` // preemption counter delta
	KVUsage     *float64 `json:"kv_usage,omitempty"`    // gauge at the window's end, 0..1
	Running     *float64 `json:"running,omitempty"`     // gauge at the window's end
	Waiting     *float64 `json:"waiting,omitempty"`     // gauge at the window's end
	// CounterReset: the engine's counters went back during the window (a
	// server restart); the deltas are then counted from zero, i.e. since
	// the restart, and Warnings says what the scrape saw.
	CounterReset bool     `json:"counter_reset,omitempty"`
	Warnings     []string `json:"warnings,omitempty"`
}
