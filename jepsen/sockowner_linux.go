package jepsen

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
)

// socketOwner finds which of owners' processes holds the other end of c,
// a connection accepted on 127.0.0.1: the peer's socket is the row of
// /proc/net/tcp whose local address is c's remote address and whose
// remote address is c's local address; its inode is a socket:[inode] link
// in that process's /proc/PID/fd. 0 when none holds it (the peer closed
// it meanwhile, or it is not one of owners).
func socketOwner(c net.Conn, owners func() map[int]string) int {
	local, lok := addrPort(c.LocalAddr())
	remote, rok := addrPort(c.RemoteAddr())
	if !lok || !rok {
		return 0
	}
	inode := tcpInode(remote, local)
	if inode == "" {
		return 0
	}
	want := "socket:[" + inode + "]"
	for pid := range owners() {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && l == want {
				return pid
			}
		}
	}
	return 0
}

func addrPort(a net.Addr) (netip.AddrPort, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}, false
	}
	ap := ta.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), ap.Addr().Unmap().Is4()
}

// tcpInode is the inode of the IPv4 socket local → remote in
// /proc/net/tcp ("" when there is none).
func tcpInode(local, remote netip.AddrPort) string {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return ""
	}
	defer f.Close()
	l, r := procTCPAddr(local), procTCPAddr(remote)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
		fs := strings.Fields(sc.Text())
		if len(fs) > 9 && fs[1] == l && fs[2] == r {
			return fs[9]
		}
	}
	return ""
}

// procTCPAddr writes an IPv4 address and port as /proc/net/tcp does: the
// address as the hex of its 32 bits in host (little-endian) order, then
// the port in hex.
func procTCPAddr(ap netip.AddrPort) string {
	b := ap.Addr().As4()
	v := uint32(b[3])<<24 | uint32(b[2])<<16 | uint32(b[1])<<8 | uint32(b[0])
	return fmt.Sprintf("%08X:%04X", v, ap.Port())
}
