package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// walkCommands calls f on cmd and every command under it.
func walkCommands(cmd *cobra.Command, f func(*cobra.Command)) {
	f(cmd)
	for _, c := range cmd.Commands() {
		walkCommands(c, f)
	}
}

// placeholder is what a backquoted word of a flag's usage names: the
// value's placeholder in help (pflag.UnquoteUsage), such as DIR or FILE.
var placeholder = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// TestCLIFlagUsage: pflag takes the first backquoted word of a usage
// string as the value's name in help, so a backquote anywhere else
// garbles it ("--tls-ca ledgermq dev --tls"). Every flag of the tree
// either has no backquotes or one pair around an upper-case placeholder.
func TestCLIFlagUsage(t *testing.T) {
	walkCommands(newRootCmd(), func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			n := strings.Count(f.Usage, "`")
			if n == 0 {
				return
			}
			name, _ := pflag.UnquoteUsage(f)
			if n != 2 || !placeholder.MatchString(name) {
				t.Errorf("%s --%s: usage %q shows its value as %q", c.CommandPath(), f.Name, f.Usage, name)
			}
		}
		c.LocalFlags().VisitAll(check) // its own flags, persistent ones too
	})
}
