//go:build linux

package sim

import (
	"syscall"
	"time"
)

// fineSleep blocks the calling thread for d with nanosleep(2), precise to
// the kernel's timer slack (50 us by default) rather than the runtime's
// millisecond netpoll timeout. The runtime hands the P to another thread
// while it blocks. A wait under shortestSleep is not slept.
func fineSleep(d time.Duration) {
	if d < shortestSleep {
		return
	}
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
