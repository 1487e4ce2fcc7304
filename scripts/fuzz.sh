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
		ok=0
		for attempt in 1 2; do
			if $GO test -run '^$' -fuzz "^${t}\$" -fuzztime "$FUZZTIME" "$pkg" >/tmp/fuzz.$$.log 2>&1; then
				ok=1
				break
			fi
			# The fuzz runner itself sometimes ends with "context deadline
			# exceeded" and no failing input on a loaded machine; only that
			# is tried again.
			if grep -q 'Failing input\|testdata/fuzz' /tmp/fuzz.$$.log || ! grep -q 'context deadline exceeded' /tmp/fuzz.$$.log; then
				break
			fi
			echo "  runner timed out without a failing input; trying again"
		done
		if [ $ok -ne 1 ]; then
			cat /tmp/fuzz.$$.log
			status=1
		fi
	done
done
rm -f /tmp/fuzz.$$.log
exit $status
