//go:build !linux

package sim

import "time"

// osSleep falls back to the runtime's timer off Linux.
func osSleep(d time.Duration) { time.Sleep(d) }
