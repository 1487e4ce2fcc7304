#!/usr/bin/env bash
# The switch of a running group to one log, in place: fills a two-log
# `ledgermq dev` group (raft.log = wal) with MIB MiB of 16 KiB messages, then, under a steady
# load, configures every node `raft.log = commitlog` and restarts them one by
# one (`admin cluster rolling-restart --dev`): the group switches, every node
# converts its data as it starts again. Prints the load's summary (the
# longest gap between acknowledged sends is the pause) and verification, and
# each node's conversion. Run from the project root after `make build`.
# Usage: scripts/switch.sh [MIB=1024]
# Loopback only; every wait is bounded; the processes it starts are stopped.
set -u
mib=${1:-1024}
[ -x bin/ledgermq ] || { echo "run make build first"; exit 1; }
ns=127.0.0.1:19879 D=$(mktemp -d) pid= bench=
cleanup() {
  [ -n "$bench" ] && kill "$bench" 2>/dev/null
  [ -n "$pid" ] && kill -INT -- "-$pid" 2>/dev/null
  for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  [ -n "$pid" ] && kill -9 -- "-$pid" 2>/dev/null; rm -rf "$D"
}
trap cleanup EXIT
setsid bin/ledgermq dev --dir "$D/dev" --namesrv $ns --restart --node-conf raft.log=wal >>"$D/dev.out" 2>&1 </dev/null & pid=$!
for i in $(seq 1 120); do grep -q 'Ctrl-C' "$D/dev.out" 2>/dev/null && break; sleep 0.5; done
size=16384 count=$((mib * 1024 * 1024 / 16384))
echo "filling (two logs): $count sends of $size bytes"
timeout 1200 bin/ledgermq bench produce --namesrv $ns --topic SwitchT --producers 4 --inflight 32 --size $size --count $count |
  grep '^summary:'
du -sh "$D"/dev/n0/store/commitlog "$D"/dev/n0/raft/wal | sed 's/^/n0: /'
bin/ledgermq bench produce --namesrv $ns --topic SwitchLoad --producers 2 --rate 200 --duration 90s \
  --send-timeout 10s --verify >"$D/bench.out" 2>&1 & bench=$!
sleep 5
sed -i 's/^raft\.log *= *wal$/raft.log = commitlog/' "$D"/dev/n[0-9]*.conf
t0=$(date +%s.%N)
bin/ledgermq admin -n $ns cluster rolling-restart --dev "$D/dev" --route-wait 0 | tail -4
for i in $(seq 1 600); do
  done=1
  for n in "$D"/dev/n[0-9]*/; do [ -f "$n/store/onelog" ] && [ ! -d "$n/raft/wal" ] || done=; done
  [ -n "$done" ] && break; sleep 0.2
done
t1=$(date +%s.%N)
[ -n "$done" ] || { echo "the group did not switch"; exit 1; }
awk -v a="$t0" -v b="$t1" 'BEGIN{printf "every node converted %.1f s after the rolling restart began\n", b-a}'
wait "$bench"; bench=
grep -E '^(summary|verify):' "$D/bench.out"
grep -h 'converted to one log' "$D"/dev/n*.log | sed 's/.*converted to one log[^ ]* //' | cut -c1-200
