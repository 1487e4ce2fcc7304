package main

import (
	"fmt"
	"strings"

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
	root.AddCommand(newVersionCmd(), newDemoCmd(), newNamesrvCmd(), newBrokerCmd(), newDevCmd(), newProxyCmd(), newAdminCmd(), newBenchCmd(), newJepsenCmd(), newConsoleCmd())
	strictArgs(root)
	return root
}

// strictArgs makes every command of the tree refuse what it does not
// take. Cobra checks the words after a command only at the root: a group
// of verbs (admin, admin topic, …) would print its help and exit 0 for a
// verb it does not have, and a verb that says nothing about arguments
// would ignore stray ones. So a group gets unknownVerb, which fails with
// cobra's "Did you mean" suggestions, and a verb that declares no Args
// takes none.
func strictArgs(cmd *cobra.Command) {
	switch {
	case cmd.HasSubCommands() && !cmd.Runnable():
		cmd.RunE = unknownVerb
		cmd.SetFlagErrorFunc(verbFlagError)
	case !cmd.HasSubCommands() && cmd.Args == nil:
		cmd.Args = cobra.NoArgs
	}
	for _, c := range cmd.Commands() {
		strictArgs(c)
	}
}

// verbFlagError is a group's flag error: a mistyped verb followed by its
// flags (admin sendMesage -t T) fails on the first flag the group does not
// have, so name the verb instead. Verbs inherit it and keep their error.
func verbFlagError(cmd *cobra.Command, err error) error {
	if args := cmd.Flags().Args(); cmd.HasSubCommands() && len(args) > 0 {
		return unknownVerb(cmd, args)
	}
	return err
}

// unknownVerb is a group's RunE: its help without a verb, an error naming
// the nearest verbs for one it does not have.
func unknownVerb(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, applied by it at the root only
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return fmt.Errorf("%s\n\nRun '%s --help' for its verbs", msg, cmd.CommandPath())
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
