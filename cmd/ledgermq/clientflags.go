package main

// What the client commands (admin, bench) share besides the connection
// flags of tlsflags.go: where the name servers are and how output looks.
//
//	-n, --namesrv   host:port;host:port; default NAMESRV_ADDR, else the
//	                name server of make run (127.0.0.1:9876)
//	-o, --output    text or json; "table" is text's other name (admin's
//	                text is tables, bench's a summary line)

import (
	"fmt"
	"os"
	"strings"
)

// localNamesrv is the name server `make run` starts.
const localNamesrv = "127.0.0.1:9876"

// defaultNamesrv is -n's default: NAMESRV_ADDR, as mqadmin reads it, else
// the local name server.
func defaultNamesrv() string { return firstNonEmpty(os.Getenv("NAMESRV_ADDR"), localNamesrv) }

// namesrvUsage is -n's usage (pflag adds the default).
const namesrvUsage = "name server addresses, ';'-separated; NAMESRV_ADDR when set"

// splitNamesrv splits a ';'-separated name server list.
func splitNamesrv(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// outputUsage is -o's usage.
const outputUsage = "output format: text or json (table: text)"

// outputJSON reads an --output value: true for json, false for text.
func outputJSON(v string) (bool, error) {
	switch v {
	case "text", "table":
		return false, nil
	case "json":
		return true, nil
	}
	return false, fmt.Errorf("%w: --output %q: want text or json", errAdmin, v)
}
