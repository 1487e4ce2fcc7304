//go:build unix && !linux

package jepsen

import "syscall"

// childSysProcAttr puts a child in its own process group (a terminal's
// Ctrl-C reaches only the harness, which stops the children itself).
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
