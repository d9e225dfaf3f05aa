//go:build unix

package client

import (
	"syscall"
	"time"
)

// cpuClock reads this process's user+system CPU time. On a shared, noisy
// machine the rate per CPU-second is the per-core figure; the rate per wall
// second also counts time other processes held the core.
func cpuClock() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
