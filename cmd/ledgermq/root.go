package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "ledgermq",
		Short:         "A RocketMQ-compatible message broker whose broker groups are Raft groups",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       fmt.Sprintf("%s (commit %s)", version, commit),
	}
	root.SetVersionTemplate("ledgermq {{.Version}}\n")
	root.AddCommand(newVersionCmd(), newDemoCmd(), newNamesrvCmd(), newBrokerCmd(), newDevCmd(), newAdminCmd(), newBenchCmd(), newJepsenCmd())
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and commit this binary was built from",
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "ledgermq %s (commit %s)\n", version, commit)
			return err
		},
	}
}
