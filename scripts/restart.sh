#!/usr/bin/env bash
# Restart after a crash of the whole group: fills a `ledgermq dev` group with
# MIB MiB of messages, kill -9s every process, starts dev again on the same
# directory and measures the seconds from that start to the first
# acknowledged send, then each node's resident memory. Run from the project
# root after `make build`.
# Usage: scripts/restart.sh [MIB=1024] [NODE_CONF...]   e.g. scripts/restart.sh 1024 raft.log=wal (two logs)
# Loopback only; every wait is bounded; the processes it starts are stopped.
set -u
mib=${1:-1024}; shift || true
conf=(); for kv in "$@"; do conf+=(--node-conf "$kv"); done
[ -x bin/ledgermq ] || { echo "run make build first"; exit 1; }
ns=127.0.0.1:19878 D=$(mktemp -d) pid=
cleanup() {
  [ -f "$D/dev/cluster.json" ] && kill -9 $(python3 -c 'import json,sys; print(" ".join(str(n["pid"]) for n in json.load(open(sys.argv[1]))["nodes"]))' "$D/dev/cluster.json") 2>/dev/null
  [ -n "$pid" ] && kill -9 -- "-$pid" 2>/dev/null; pkill -9 -f "namesrv --listen $ns"; sleep 1; rm -rf "$D"
}
trap cleanup EXIT
start() {
  setsid bin/ledgermq dev --dir "$D/dev" --namesrv $ns "${conf[@]}" >>"$D/dev.out" 2>&1 </dev/null & pid=$!
}
now() { date +%s.%N; }
start
for i in $(seq 1 120); do grep -q 'Ctrl-C' "$D/dev.out" 2>/dev/null && break; sleep 0.5; done
size=16384 count=$((mib * 1024 * 1024 / 16384))
echo "filling: $count sends of $size bytes"
timeout 1200 bin/ledgermq bench produce --namesrv $ns --topic RestartT --producers 4 --inflight 32 --size $size --count $count |
  grep '^summary:'
du -sh "$D"/dev/n0/store/commitlog | sed 's/^/commitlog of n0: /'
# Every process at once, as a power cut would (dev starts each node in a
# process group of its own).
pids=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join(str(n["pid"]) for n in d["nodes"]))' "$D/dev/cluster.json")
kill -9 $pids; kill -9 -- "-$pid"; pkill -9 -f "namesrv --listen $ns"
for i in $(seq 1 100); do alive=; for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done; [ -z "$alive" ] && break; sleep 0.1; done
t0=$(now); : >"$D/dev.out"
start
ok=
for i in $(seq 1 600); do
  if bin/ledgermq bench produce --namesrv $ns --topic RestartT --count 1 --send-timeout 1s 2>/dev/null | grep -q 'acked=1 '; then ok=1; break; fi
done
t1=$(now)
[ -n "$ok" ] || { echo "no acknowledged send after the restart"; exit 1; }
awk -v a="$t0" -v b="$t1" 'BEGIN{printf "first acknowledged send %.2f s after the restart\n", b-a}'
for p in $(python3 -c 'import json,sys; print(" ".join(str(n["pid"]) for n in json.load(open(sys.argv[1]))["nodes"]))' "$D/dev/cluster.json"); do
  awk -v p="$p" '/^VmRSS/{printf "node pid %s RSS %d MB\n", p, $2/1024}' /proc/"$p"/status
done
grep -h 'store recovered' "$D"/dev/n*.log | tail -3 | sed 's/.*store recovered: /recovered: /' | cut -c1-220
