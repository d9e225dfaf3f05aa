package sim

import (
	"context"
	"time"
)

// fineSleepMax is the stretch at the end of a wait that sleepUntil hands to
// the OS's high-resolution sleep. Go's runtime timers are only good to
// about a millisecond when the process is idle (it parks in epoll_wait,
// whose timeout is in whole milliseconds, rounded up for sub-millisecond
// waits), which would make a 15 ms decode step late by 0-1 ms, and a
// sped-up 0.3 ms step take 1 ms.
const fineSleepMax = 2 * time.Millisecond

// sleepUntil blocks until the engine clock reaches end (ns), or ctx is done
// (false). The bulk of a long wait is a runtime timer, so cancellation is
// prompt; the last <= 2 ms is a blocking high-resolution sleep (no
// spinning), during which cancellation waits.
func (e *Engine) sleepUntil(ctx context.Context, t *time.Timer, end int64) bool {
	for {
		wait := time.Duration(end - e.now())
		if wait <= 0 {
			return true
		}
		if wait <= fineSleepMax {
			fineSleep(wait)
			continue
		}
		t.Reset(wait - fineSleepMax + 500*time.Microsecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}
