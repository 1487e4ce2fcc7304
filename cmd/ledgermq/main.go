// Command ledgermq is the single ledgermq binary. Run `ledgermq --help`.
package main

import (
	"fmt"
	"os"
)

// Stamped by `make build` (-ldflags -X).
var (
	version = "dev"
	commit  = "none"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "ledgermq:", err)
		os.Exit(1)
	}
}
