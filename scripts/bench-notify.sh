#!/usr/bin/env bash
# Notification rate and round-trip latency between two rnotify processes on
# this host (loopback, the software device), native and then with the TCP
# fallback only (MC_RDMA_NOTIFY_ENABLED=0), in one run so the two compare.
# Wall-clock figures: on a 2-core machine both processes' worker lcores
# share a CPU, so they measure the scheduler more than rnotify. On two
# ConnectX hosts, run build/control/bench/rnotify-bench there instead
# (docs/performance.md says how).
# The bench fails when a notification is lost or arrives altered, or when a
# run took the other channel than the one it names (the "via" column).
# Usage: scripts/bench-notify.sh [--messages N] [--round-trips N] [--sizes LIST]
#                                 [--completions K] [--burst B]
#   RNOTIFY_BENCH=PATH   use that rnotify-bench, built already (the tests do)
#   RN_BENCH_PORT=N      control ports N and N+1 (default 19601)
#   RN_BENCH_STALL_MS=N  the responder stops polling for N ms at the start
#                        of each one-way run (a slow application)
#   RN_BENCH_SLOTS=N     [notify] slots = N on both sides (default 256)
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-pair.sh
# A control thread starved of its CPU for a second on a busy 2-core host
# (under ASan, in CI) must not count as a dead peer mid-run.
pair_configs bench-a bench-b "${RN_BENCH_PORT:-19601}" "connect_timeout_ms = 10000
dead_after_ms = 10000"

run_pair() {   # label, value of MC_RDMA_NOTIFY_ENABLED, bench options...
  local label=$1 enabled=$2
  shift 2
  MC_RDMA_NOTIFY_ENABLED=$enabled "$bench" -c "$work/bench-b.ini" \
    --peer bench-a --respond --stall-ms "${RN_BENCH_STALL_MS:-0}" \
    2>"$work/respond-$label.log" &
  responder=$!
  local status=0
  MC_RDMA_NOTIFY_ENABLED=$enabled "$bench" -c "$work/bench-a.ini" \
    --peer bench-b --label "$label" "$@" >"$work/$label.md" \
    2>"$work/initiate-$label.log" || status=$?
  end_pair "$status" "$work/initiate-$label.log" "$work/respond-$label.log"
}

run_pair native 1 "$@"
run_pair tcp 0 "$@"
cat "$work/native.md"
tail -n +3 "$work/tcp.md"
# Each run must have measured its own channel: the "via" column.
awk -F' *[|] *' 'FNR > 2 && $2 != $8 { print "bench: " $2 " run went via " $8 " at " $3 " bytes" > "/dev/stderr"; bad = 1 }
  END { exit bad }' "$work/native.md" "$work/tcp.md"
