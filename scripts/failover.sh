#!/usr/bin/env bash
# The failover figure: a local `ledgermq dev --restart` cluster under
# `ledgermq bench produce`, whose leader process is killed with kill -9
# once per run. Each run reports max-gap-ms (the longest time no send was
# acknowledged), the unknown outcomes, and what --verify found afterwards
# (every acknowledged send read back; stored copies of unknown ones
# counted). At the end: the median and max of max-gap-ms over the runs.
#
#   scripts/failover.sh                 # 10 runs, bin/ledgermq (make build)
#   RUNS=3 PRODUCERS=1 INFLIGHT=1 scripts/failover.sh
#   KEEP=1 scripts/failover.sh          # keep the cluster's data and logs
#
# Needs python3 (to read the JSON the commands print). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/ledgermq}
RUNS=${RUNS:-10}
PORT=${PORT:-29876}
PRODUCERS=${PRODUCERS:-4}
INFLIGHT=${INFLIGHT:-4}
DURATION=${DURATION:-8s}
KILL_AFTER=${KILL_AFTER:-3}
NS=127.0.0.1:$PORT
WORK=$(mktemp -d /tmp/ledgermq-failover.XXXXXX)
[ -x "$BIN" ] || { echo "failover: $BIN not found; run make build" >&2; exit 2; }

"$BIN" dev --dir "$WORK/dev" --namesrv "$NS" --restart --log-level warn >"$WORK/dev.out" 2>&1 &
DEV=$!
# The cluster's data (1 GiB CommitLog segments per node) goes at the end
# unless KEEP=1.
cleanup() {
	kill -INT "$DEV" 2>/dev/null || true
	wait "$DEV" 2>/dev/null || true
	if [ "${KEEP:-0}" = 1 ]; then echo "failover: details in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
for _ in $(seq 1 120); do [ -f "$WORK/dev/cluster.json" ] && break; sleep 0.5; done
[ -f "$WORK/dev/cluster.json" ] || { echo "failover: no cluster after 60 s" >&2; cat "$WORK/dev.out" >&2; exit 1; }

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'d': d}))" "$@"; }

# healthy waits until every member serves with no lag.
healthy() {
	for _ in $(seq 1 120); do
		if "$BIN" admin raft status -n "$NS" -o json --timeout 5s >"$WORK/status.json" 2>/dev/null &&
			[ "$(json "$WORK/status.json" "all(m['role'] in ('leader','follower') and m['lag'] == 0 for m in d['members']) and len(d['members']) == 3")" = True ]; then
			return 0
		fi
		sleep 0.5
	done
	echo "failover: the cluster did not become healthy" >&2
	return 1
}

printf '%-4s %-7s %-8s %-8s %-7s %-12s %-5s %-10s %-12s\n' run killed acked unknown failed max-gap-ms lost duplicates msgs/s
gaps=()
for i in $(seq 1 "$RUNS"); do
	healthy
	leader=$(json "$WORK/status.json" "d['leader']")
	pid=$(json "$WORK/dev/cluster.json" "[n['pid'] for n in d['nodes'] if n['id'] == '$leader'][0]")
	"$BIN" bench produce -n "$NS" --topic FailoverTopic --producers "$PRODUCERS" --inflight "$INFLIGHT" \
		--duration "$DURATION" --verify -o json >"$WORK/run$i.json" 2>"$WORK/run$i.err" &
	bench=$!
	sleep "$KILL_AFTER"
	kill -9 "$pid"
	wait "$bench" || true
	if ! [ -s "$WORK/run$i.json" ]; then
		echo "failover: run $i printed no result:" >&2
		cat "$WORK/run$i.err" >&2
		exit 1
	fi
	r="$WORK/run$i.json"
	gap=$(json "$r" "d['max_gap_ms']")
	gaps+=("$gap")
	printf '%-4s %-7s %-8s %-8s %-7s %-12s %-5s %-10s %-12s\n' "$i" "$leader" "$(json "$r" "d['acked']")" \
		"$(json "$r" "d['unknown']")" "$(json "$r" "d['failed']")" "$gap" "$(json "$r" "d['verification']['lost']")" \
		"$(json "$r" "d['verification']['duplicates']")" "$(json "$r" "round(d['msgs_per_sec'])")"
done
python3 - "${gaps[@]}" <<'PY'
import statistics, sys
g = [int(x) for x in sys.argv[1:]]
print(f"failover: runs={len(g)} max-gap-ms median={statistics.median(g):.0f} max={max(g)} min={min(g)}")
PY
