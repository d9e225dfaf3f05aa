//go:build unix && !linux

package launch

import "syscall"

// sysProcAttr puts the child in its own process group so Stop can signal
// the whole tree. (No parent-death signal outside Linux.)
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// groupAlive reports whether any process is in process group pgid
// (zombies included: there is no portable way to tell them apart).
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }
