package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/ledgermq/ledgermq/dledger"
)

// exitCannotStart is the exit status of a broker node that cannot start
// from its own files (dledger.ErrCannotStart): restarting it will not help,
// and `ledgermq dev` tells the operator how to rebuild it.
const exitCannotStart = 3

// Stamped by `make build` (-ldflags -X).
var (
	version = "dev"
	commit  = "none"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "ledgermq:", err)
		if errors.Is(err, dledger.ErrCannotStart) {
			os.Exit(exitCannotStart)
		}
		os.Exit(1)
	}
}
