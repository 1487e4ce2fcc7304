package jepsen

import "syscall"

// childSysProcAttr puts a child in its own process group (a terminal's
// Ctrl-C reaches only the harness, which stops the children itself) and
// has the kernel kill it if the harness dies, so nothing outlives a run.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
