package main

import "syscall"

// childSysProcAttr puts a dev child in its own process group (a terminal's
// Ctrl-C reaches only dev, which stops the children in order) and has the
// kernel send it SIGTERM if dev dies.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
