#!/usr/bin/env bash
# Instructions of the transfer engine on the lcore that posts, counted by
# callgrind (repeatable on a noisy machine, unlike time), from
# tests/bench/bench_transfer.c: 2,000 WRITE and 2,000 READ batches of four
# 4 KiB chunks over 4 data QPs, each with a notification.
#   per WQE posted   post_chunks(): the chunk cut, its QP chosen round
#                    robin, its room checked (SQ, FIFO, READ limit), the
#                    WQE written (rn_sq_post_rdma), every 16th and the last
#                    of each QP signalled, one doorbell per QP touched
#   per batch        take_batch() (checks, rkeys, the endpoint), every
#                    rn_lcore_xfer_completion() (a chunk's CQE: the FIFO
#                    retired up to it), finish() (the notification posted,
#                    region counts, the status), less the notification's
#                    own SEND (rn_lcore_notify_post, shown apart)
# Not counted: the software device, which runs outside them; CQ polling,
# per CQE, measured by scripts/bench-datapath.sh; the transfer ring's
# dequeue; the application side (rn_transfer_submit(): copies, lookups).
# Usage: scripts/bench-transfer-instructions.sh
# RN_CALLGRIND_KEEP=DIR keeps the callgrind file there (transfer.cg).
set -euo pipefail
cd "$(dirname "$0")/.."

command -v valgrind >/dev/null || { echo "bench: valgrind is missing; run scripts/setup.sh" >&2; exit 1; }
[[ -f build/build.ninja ]] || meson setup build >/dev/null
meson compile -C build >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

valgrind --tool=callgrind --callgrind-out-file="$work/transfer.cg" \
  build/tests/bench/bench_transfer >"$work/ops" 2>"$work/valgrind.log" ||
  { cat "$work/valgrind.log" >&2; exit 1; }
if [[ -n "${RN_CALLGRIND_KEEP:-}" ]]; then
  mkdir -p "$RN_CALLGRIND_KEEP"
  cp "$work/transfer.cg" "$RN_CALLGRIND_KEEP"/
fi
count() {   # function: prints "calls inclusive"
  scripts/callgrind-calls.py "$work/transfer.cg" "$1" | awk '{ print $2, $3 }'
}
wqes=$(awk '$1 == "wqes" { print $2 }' "$work/ops")
batches=$(awk '$1 == "batches" { print $2 }' "$work/ops")
read -r _ post_ir < <(count post_chunks)
read -r _ take_ir < <(count take_batch)
read -r cqes cqe_ir < <(count rn_lcore_xfer_completion)
read -r _ finish_ir < <(count finish)
read -r notes note_ir < <(count rn_lcore_notify_post)
awk -v w="$wqes" -v b="$batches" -v post="$post_ir" -v take="$take_ir" \
    -v cqes="$cqes" -v cqe="$cqe_ir" -v fin="$finish_ir" -v notes="$notes" \
    -v note="$note_ir" 'BEGIN {
  printf "| operation | instructions |\n| --- | ---: |\n"
  printf "| WQE posted (post_chunks, per WQE; %d WQEs) | %.1f |\n", w, post / w
  printf "| batch completed, engine only (per batch of 4 chunks; %d batches) | %.1f |\n", b, (take + cqe + fin - note) / b
  printf "|   of which acceptance (take_batch) | %.1f |\n", take / b
  printf "|   of which CQEs (rn_lcore_xfer_completion, %.2f per batch) | %.1f |\n", cqes / b, cqe / b
  printf "|   of which the final status (finish, less the SEND) | %.1f |\n", (fin - note) / b
  printf "| its notification posted (rn_lcore_notify_post) | %.1f |\n", note / notes
}'
