//go:build !linux

package rawconn

import "net"

// Wrap returns nc as it is: raw reads and writes are made on Linux only
// (rawconn_linux.go).
func Wrap(nc net.Conn) net.Conn { return nc }
