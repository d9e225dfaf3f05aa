package bench

import (
	"fmt"
	"slices"
	"sync"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/store"
)

// checkpointer keeps DIR/checkpoint.json current during a session: at each
// run's start and at every window boundary it writes what results.json
// would hold so far (the finished runs and the one in progress, marked
// Incomplete), by atomic rename, so kill -9 leaves a file `servebench
// report` can rebuild results.json from (Recover). Execute removes it once
// results.json is written.
type checkpointer struct {
	dir string
	res *result.Results // read only while a run is in progress
	bar *runBar         // the run's progress line, shown the last window

	mu  sync.Mutex
	err error // the first failed write, reported once as a warning
}

// window is Reporter.Window: the progress line and the checkpoint.
func (c *checkpointer) window(partial *result.Run) {
	c.bar.window(partial)
	cp := *c.res
	cp.Runs = append(slices.Clip(c.res.Runs), *partial)
	cp.Incomplete = true
	err := store.WriteJSON(c.dir, result.CheckpointFile, &cp)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil && c.err == nil {
		c.err = err
	}
}

// warning is the first failed write as a results.json warning, or "".
func (c *checkpointer) warning() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return ""
	}
	return fmt.Sprintf("checkpoint: %v (a crash would have left no %s to rebuild from)", c.err, result.CheckpointFile)
}
