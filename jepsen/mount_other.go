//go:build unix && !linux

package jepsen

import "errors"

var errNoTmpfs = errors.New("tmpfs mounts are implemented on Linux only")

func mountTmpfs(string, int64) error { return errNoTmpfs }
func unmountTmpfs(string) error      { return errNoTmpfs }
