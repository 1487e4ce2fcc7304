#!/usr/bin/env bash
# The rolling-restart figure: a local `ledgermq dev --restart` cluster
# restarted node by node with `ledgermq admin cluster rolling-restart`
# while `ledgermq bench produce --verify` sends through our client. Each
# run reports the sends that failed, the unknown outcomes, max-gap-ms and
# what --verify found (lost, stored twice). The real rocketmq-client-go's
# figure is TestRealClientRollingRestart (compat/rolling_test.go), which
# logs its own line; CLIENT=real runs it RUNS times.
#
#   scripts/rolling.sh                  # 3 runs, bin/ledgermq (make build)
#   RUNS=1 ROUTE_WAIT=35s scripts/rolling.sh
#   CLIENT=real RUNS=3 scripts/rolling.sh
#
# Needs python3. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/ledgermq}
RUNS=${RUNS:-3}
PORT=${PORT:-29976}
ROUTE_WAIT=${ROUTE_WAIT:-0s}
RATE=${RATE:-500}
NS=127.0.0.1:$PORT

if [ "${CLIENT:-ours}" = real ]; then
	go test -count="$RUNS" -run '^TestRealClientRollingRestart$' -v ./compat/ | grep -E 'rolling restart in|^(--- |ok|FAIL)'
	exit "${PIPESTATUS[0]}"
fi
[ -x "$BIN" ] || { echo "rolling: $BIN not found; run make build" >&2; exit 2; }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'d': d}))" "$@"; }

printf '%-4s %-9s %-7s %-8s %-7s %-12s %-5s %-10s %-10s\n' run nodes acked unknown failed max-gap-ms lost duplicates restart-s
for i in $(seq 1 "$RUNS"); do
	WORK=$(mktemp -d /tmp/ledgermq-rolling.XXXXXX)
	"$BIN" dev --dir "$WORK/dev" --namesrv "$NS" --restart --log-level warn >"$WORK/dev.out" 2>&1 &
	DEV=$!
	for _ in $(seq 1 120); do [ -f "$WORK/dev/cluster.json" ] && break; sleep 0.5; done
	"$BIN" bench produce -n "$NS" --topic Rolling --count 1 >/dev/null 2>&1 || true
	# Enough load to outlast the restart; counted from the intended send
	# times, so a stall shows in max-gap-ms.
	"$BIN" bench produce -n "$NS" --topic Rolling --producers 2 --rate "$RATE" --duration 40s --send-timeout 10s \
		--verify -o json >"$WORK/bench.json" 2>"$WORK/bench.err" &
	BENCH=$!
	sleep 3
	start=$(date +%s.%N)
	"$BIN" admin -n "$NS" -o json cluster rolling-restart --dev "$WORK/dev" --route-wait "$ROUTE_WAIT" >"$WORK/steps.json"
	took=$(python3 -c "import time; print(round(time.time() - $start, 1))")
	wait "$BENCH" || true
	printf '%-4s %-9s %-7s %-8s %-7s %-12s %-5s %-10s %-10s\n' "$i" "$(json "$WORK/steps.json" "len(d)")" \
		"$(json "$WORK/bench.json" "d['acked']")" "$(json "$WORK/bench.json" "d['unknown']")" "$(json "$WORK/bench.json" "d['failed']")" \
		"$(json "$WORK/bench.json" "d['max_gap_ms']")" "$(json "$WORK/bench.json" "d['verification']['lost']")" \
		"$(json "$WORK/bench.json" "d['verification']['duplicates']")" "$took"
	kill -INT "$DEV" 2>/dev/null || true
	wait "$DEV" 2>/dev/null || true
	rm -rf "$WORK"
done
