package launch

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// sysProcAttr puts the child in its own process group (so Stop can signal
// the whole tree) and asks the kernel to SIGKILL it if servebench dies
// first. The parent-death signal is tied to the forking thread; Server.run
// keeps that thread locked for the child's lifetime.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// groupAlive reports whether any live (non-zombie) process is in process
// group pgid. Zombies are skipped: a container's PID 1 may never reap the
// orphans it inherits, and a zombie holds no resources worth waiting for.
func groupAlive(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return syscall.Kill(-pgid, 0) == nil
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pg, state, ok := procStat(pid); ok && pg == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// procStat reads the process group and state of pid from /proc/PID/stat.
func procStat(pid int) (pgrp int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, 0, false
	}
	return pg, f[0][0], true
}
