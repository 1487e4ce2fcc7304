package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/console"
)

// TestConsoleRefuses: the console does not start beyond loopback without
// its own login, nor with half of a credential pair.
func TestConsoleRefuses(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"console", "-n", "127.0.0.1:1", "--listen", "0.0.0.0:0"}, "not a loopback address"},
		{[]string{"console", "-n", "127.0.0.1:1", "--listen", ":0"}, "not a loopback address"},
		{[]string{"console", "-n", "127.0.0.1:1", "--console-user", "ops"}, "give both or neither"},
		{[]string{"console", "-n", "127.0.0.1:1", "--access-key", "ak"}, "--access-key and --secret-key go together"},
		{[]string{"console", "-n", ""}, "no name server"},
	} {
		t.Setenv("LEDGERMQ_CONSOLE_PASSWORD", "")
		_, _, err := runCLI(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", strings.Join(tt.args, " "), err, tt.want)
		}
		if strings.Contains(tt.want, "loopback") && !errors.Is(err, console.ErrNeedAuth) {
			t.Errorf("%s: %v is not ErrNeedAuth", strings.Join(tt.args, " "), err)
		}
	}
}
