//go:build !linux

package main

import "syscall"

// childSysProcAttr puts a dev child in its own process group (a terminal's
// Ctrl-C reaches only dev, which stops the children in order).
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
