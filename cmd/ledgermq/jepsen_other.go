//go:build !unix

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newJepsenCmd: the harness signals and supervises processes the unix way.
func newJepsenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "jepsen",
		Short: "Chaos-test a local group (unix only)",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("jepsen: needs a unix system")
		},
	}
}
