//go:build !linux

package procs

import "syscall"

// sysProcAttr puts a child in its own process group (a terminal's Ctrl-C
// reaches only the parent, which stops the children itself); a death
// signal needs Linux.
func sysProcAttr(syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
