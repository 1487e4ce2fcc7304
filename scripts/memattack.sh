#!/usr/bin/env bash
# Name-server and broker memory under hostile clients: the frame flood
# (64 back-to-back 15 MiB frames on one connection) and the partial-frame
# hold (32 connections each sending 12 MiB of a 16 MiB frame and
# stalling), and on the broker the lock flood (20 LOCK_BATCH_MQ of 10 000
# queues of topics that do not exist). Each server runs in a fresh process
# on loopback ports; the figures are VmRSS before, the peak VmRSS sampled
# every 20 ms, VmRSS and VmHWM after (see scripts/memattack/main.go for
# the flags).
#
#   scripts/memattack.sh                          # BIN=bin/ledgermq (make build)
#   BIN=/tmp/old/ledgermq scripts/memattack.sh    # another build, to compare
#   scripts/memattack.sh -targets namesrv -attacks frames -frames 16
#
# Linux only (reads /proc). Each attack is bounded by -timeout (60 s).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/ledgermq}
if [[ ! -x $BIN ]]; then
	echo "memattack: $BIN not found; run make build or set BIN" >&2
	exit 2
fi
exec go run ./scripts/memattack -bin "$BIN" "$@"
