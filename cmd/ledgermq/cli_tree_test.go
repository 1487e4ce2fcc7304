package main

import (
	"errors"
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

// commandPaths lists the words that reach every command of the tree,
// the root's (none) first.
func commandPaths() [][]string {
	var out [][]string
	walkCommands(newRootCmd(), func(c *cobra.Command) {
		var path []string
		for p := c; p.HasParent(); p = p.Parent() {
			path = append([]string{p.Name()}, path...)
		}
		out = append(out, path)
	})
	return out
}

// TestCLITree runs every command of the tree: --help exits 0 with its
// usage; an unknown flag fails; a group of verbs fails on a verb it does
// not have; a verb fails on arguments it does not take (which cobra
// checks before the verb runs, so nothing is started).
func TestCLITree(t *testing.T) {
	root := newRootCmd()
	strays := []string{"stray1", "stray2", "stray3", "stray4", "stray5"}
	for _, path := range commandPaths() {
		name := strings.Join(append([]string{"ledgermq"}, path...), " ")
		c, _, err := root.Find(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, _, err := runCLI(t, append(path, "--help")...)
		if err != nil || !strings.Contains(out, "Usage:") {
			t.Errorf("%s --help: %v\n%s", name, err, out)
		}
		_, _, err = runCLI(t, append(path, "--no-such-flag")...)
		if c.DisableFlagParsing {
			// An mqadmin verb that is not served refuses any words.
			if !errors.Is(err, errNotServed) || !strings.Contains(err.Error(), "instead: ") {
				t.Errorf("%s --no-such-flag: %v", name, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), "unknown flag") {
			t.Errorf("%s --no-such-flag: %v", name, err)
		}
		if c.HasSubCommands() {
			if _, _, err := runCLI(t, append(path, "nosuchverb")...); err == nil || !strings.Contains(err.Error(), "unknown command") {
				t.Errorf("%s nosuchverb: %v", name, err)
			}
			continue
		}
		if c.ValidateArgs(strays) == nil {
			t.Errorf("%s takes any arguments", name)
			continue
		}
		if _, _, err := runCLI(t, append(path, strays...)...); err == nil {
			t.Errorf("%s %s succeeded", name, strings.Join(strays, " "))
		}
	}
}

// TestCLIUnknownVerb: a mistyped verb fails and names the nearest ones,
// also when the flags of the verb meant follow it.
func TestCLIUnknownVerb(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"admin", "topic", "lst"}, "list"},
		{[]string{"admin", "clusterlst"}, "clusterList"},
		{[]string{"admin", "topicLst", "-c", "DefaultCluster"}, "topicList"},
		{[]string{"admin", "-n", "127.0.0.1:1", "querymsgbyid", "-i", "X"}, "queryMsgById"},
		{[]string{"bench", "produc"}, "produce"},
	} {
		_, _, err := runCLI(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), "unknown command") || !strings.Contains(err.Error(), "Did you mean this?\n\t"+tt.want) {
			t.Errorf("%s: %v", strings.Join(tt.args, " "), err)
		}
	}
}
