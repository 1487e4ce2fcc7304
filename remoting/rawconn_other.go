//go:build !linux

package remoting

import "net"

// rawConn returns nc as it is: raw reads and writes are made on Linux only
// (rawconn_linux.go).
func rawConn(nc net.Conn) net.Conn { return nc }
