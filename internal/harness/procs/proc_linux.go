package procs

import "syscall"

// sysProcAttr puts a child in its own process group (a terminal's Ctrl-C
// reaches only the parent, which stops the children itself) and has the
// kernel send it death if the parent dies (0: nothing).
func sysProcAttr(death syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: death}
}
