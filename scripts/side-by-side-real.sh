#!/usr/bin/env bash
# The side-by-side send comparison with the real rocketmq-client-go as our
# sender: ../shared/bench/side-by-side.sh (ledgermq beside NATS JetStream
# R3, CPU and disk accounted the same way), unchanged, run from a scratch
# directory whose bin/ledgermq is this build for everything but
# `bench produce`, which goes to scripts/realsend (SendAsync from
# PRODUCERS producers × INFLIGHT outstanding, 1 KiB). The lines it prints
# as "ledgermq" are rocketmq-client-go sending to ledgermq; its
# client-cpu is that client's.
#
#   scripts/side-by-side-real.sh              # 3 rounds of 20 s, 4 × 128
#   scripts/side-by-side-real.sh 2 15 4 64
#   SIDE_BY_SIDE=/path/side-by-side.sh BIN=/tmp/other/ledgermq scripts/side-by-side-real.sh
#
# Loopback only; the scratch directory is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$(realpath "${BIN:-bin/ledgermq}")
SBS=$(realpath "${SIDE_BY_SIDE:-../shared/bench/side-by-side.sh}")
[ -x "$BIN" ] || { echo "side-by-side-real: $BIN not found; run make build or set BIN" >&2; exit 2; }
[ -f "$SBS" ] || { echo "side-by-side-real: $SBS not found; set SIDE_BY_SIDE" >&2; exit 2; }
W=$(mktemp -d /tmp/ledgermq-sbs-real.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/bin"
go build -o "$W/realsend" "$ROOT/scripts/realsend"
cat >"$W/bin/ledgermq" <<WRAP
#!/usr/bin/env bash
if [ "\${1:-}" = bench ] && [ "\${2:-}" = produce ]; then shift 2; exec "$W/realsend" "\$@"; fi
exec "$BIN" "\$@"
WRAP
chmod +x "$W/bin/ledgermq"
cd "$W"
bash "$SBS" "${1:-3}" "${2:-20}" "${3:-4}" "${4:-128}"
