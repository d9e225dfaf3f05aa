//go:build !linux

package sim

import "time"

// fineSleep falls back to the runtime's timer off Linux.
func fineSleep(d time.Duration) {
	if d >= shortestSleep {
		time.Sleep(d)
	}
}
