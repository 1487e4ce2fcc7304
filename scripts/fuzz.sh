#!/usr/bin/env bash
# Runs every Fuzz* target of every package for $FUZZTIME (default 3s).
# New failing inputs are written under the package's testdata/fuzz by go test.
set -euo pipefail
FUZZTIME=${FUZZTIME:-3s}
GO=${GO:-go}
status=0
for pkg in $($GO list ./...); do
	targets=$($GO test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true)
	for t in $targets; do
		echo "fuzz $pkg $t ($FUZZTIME)"
		if ! $GO test -run '^$' -fuzz "^${t}\$" -fuzztime "$FUZZTIME" "$pkg" >/tmp/fuzz.$$.log 2>&1; then
			cat /tmp/fuzz.$$.log
			status=1
		fi
	done
done
rm -f /tmp/fuzz.$$.log
exit $status
