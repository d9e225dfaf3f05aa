//go:build linux

package sim

import (
	"runtime"
	"syscall"
	"time"
)

// Linux prctl(2) options for a thread's timer slack.
const (
	prSetTimerSlack = 29
	prGetTimerSlack = 30
)

// fineSlack is the timer slack osSleep asks for: the kernel may otherwise
// let a nanosleep overrun by its default 50 us, which every token of the
// step then inherits.
const fineSlack = time.Microsecond

// osSleep blocks the calling thread for d with nanosleep(2), precise to
// fineSlack rather than the runtime's millisecond netpoll timeout. The
// runtime hands the P to another thread while it blocks. The goroutine is
// locked to its thread for the sleep so that the slack it sets applies to
// this sleep, and the thread's own slack is put back afterwards: the
// runtime's threads are shared, and nothing else should sleep finer.
func osSleep(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	set := errno == 0 && old > uintptr(fineSlack)
	if set {
		syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, uintptr(fineSlack), 0)
	}
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
	if set {
		syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, old, 0)
	}
}
