//go:build !unix

package client

import "net"

// peerClosed cannot peek here; a closed connection is found when a request
// fails on it, and the request is sent again.
func peerClosed(net.Conn) bool { return false }
