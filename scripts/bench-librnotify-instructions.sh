#!/usr/bin/env bash
# Instructions per notification in librnotify, counted by callgrind
# (repeatable on a noisy machine, unlike time): scripts/bench-clients.sh
# with rnotify-bench --clients under valgrind (the daemons run natively),
# notifications of BYTES (name + msg).
#   rn_client_send   checks, route (status page entry under its seqlock),
#                    send buffer written, entry enqueued, the lcore's
#                    `sleeping` word read (its eventfd written when set:
#                    a syscall, counted only up to the call)
#   rn_client_poll   the last poll's buffers given back (peek finish),
#                    the deliver rings peeked, one delivery handed out;
#                    the bench waits first, so each poll takes one
#   rn_client_wait   for reference: spin, arm, epoll_wait (not per
#                    notification work; varies with the spin time)
# Usage: scripts/bench-librnotify-instructions.sh [BYTES]   (default 64)
# RN_CALLGRIND_KEEP=DIR keeps the callgrind file there (client.cg).
set -euo pipefail
cd "$(dirname "$0")/.."

command -v valgrind >/dev/null || { echo "bench: valgrind is missing; run scripts/setup.sh" >&2; exit 1; }
bytes=${1:-64}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# As measured first: the daemons sleep after one empty poll, the client
# does not spin (the wall-clock bench now runs the defaults).
RN_BENCH_PORT=${RN_BENCH_PORT:-19651} \
RN_BENCH_IDLE_POLLS=${RN_BENCH_IDLE_POLLS:-1} RNOTIFY_SPIN_US=${RNOTIFY_SPIN_US:-0} \
RN_BENCH_CLIENT_WRAP="valgrind --tool=callgrind --callgrind-out-file=$out/client.cg" \
  scripts/bench-clients.sh --sizes "$bytes" --round-trips 2000 >/dev/null
if [[ -n "${RN_CALLGRIND_KEEP:-}" ]]; then
  mkdir -p "$RN_CALLGRIND_KEEP"
  cp "$out/client.cg" "$RN_CALLGRIND_KEEP"/
fi
echo "| call | calls | instructions per call |"
echo "| --- | ---: | ---: |"
scripts/callgrind-calls.py "$out/client.cg" rn_client_send rn_client_poll \
  rn_client_wait | awk '{ printf "| %s | %d | %.1f |\n", $1, $2, $3 / $2 }'
