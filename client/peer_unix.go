//go:build unix

package client

import (
	"net"
	"syscall"
)

// peerClosed reports whether the server has closed (or reset) an idle
// connection, or sent on it unasked, with one non-blocking peek at the
// socket; false when it cannot tell.
func peerClosed(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n >= 0 && err == nil || err != nil && err != syscall.EAGAIN && err != syscall.EWOULDBLOCK && err != syscall.EINTR
		return true // never wait for readiness
	})
	return closed || err != nil
}
