#!/usr/bin/env bash
# Instructions per notification on the worker lcore, counted by callgrind
# (repeatable on a noisy machine, unlike time): two rnotify-bench processes
# under valgrind, native channel, notifications of BYTES (name + msg; the
# frame adds 8; up to [notify] max_inline bytes, 64, they go inline).
#   send side    send_one() (a request of one notification) and
#                send_burst() (of several): for each notification take a
#                place in the send window (a credit and a window entry),
#                build and post the SEND_IMM; ring the doorbell once per
#                request; plus the completions (rn_lcore_notify_completion)
#                that free the window entries: only one SEND in up to 32 is
#                signalled and its CQE frees every entry before it, so
#                their cost is divided by the SENDs, not by the CQEs
#   receive side received(): frame checks, delivery to the application's
#                ring; plus rn_lcore_repost() when the application gives the slot
#                back
# Each figure is instructions per notification. The four functions are
# kept out of line in the lcore so that callgrind records each as a call.
# Not counted: the software device, which runs outside them; CQ polling,
# per CQE, measured by scripts/bench-datapath.sh; the dequeues of the
# lcore's request and release rings.
# With BURST > 1 the one-way notifications go BURST to a request
# (rn_notify_send_burst()); the pings, one to a request, stay in the count.
# Usage: scripts/bench-notify-instructions.sh [BYTES [BURST]]  (64, 1)
# RN_CALLGRIND_KEEP=DIR keeps both callgrind files there (send.cg,
# receive.cg), for callgrind_annotate. RN_BENCH_SLOTS=N runs both sides
# with [notify] slots = N instead of the default 256 (with fewer slots,
# credit WRITEs and send CQEs come more often). RN_BENCH_COMPLETIONS=K
# makes every K-th one-way notification ask for its completion report.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v valgrind >/dev/null || { echo "bench: valgrind is missing; run scripts/setup.sh" >&2; exit 1; }
bytes=${1:-64}
burst=${2:-1}
# Under valgrind EAL cannot reserve the address space of hugepage memory
# (--in-memory): "Cannot get a virtual area". Plain pages for both sides.
export RN_BENCH_HUGEPAGES=off
source scripts/bench-pair.sh
# valgrind runs everything some 50 times slower
pair_configs cg-a cg-b "${RN_BENCH_PORT:-19611}" "connect_timeout_ms = 30000
heartbeat_ms = 1000
dead_after_ms = 30000"

grind() {   # output file, bench arguments...: valgrind in place of the shell
  local out=$1
  shift
  exec valgrind --tool=callgrind --callgrind-out-file="$out" "$bench" "$@"
}
# In the background the subshell becomes valgrind, so that $responder is
# what the clean-up at exit stops (not a shell that would leave it behind,
# holding the name cg-b for the next run).
grind "$work/receive.cg" -c "$work/cg-b.ini" --peer cg-a --respond \
  >/dev/null 2>"$work/respond.log" &
responder=$!
status=0
(grind "$work/send.cg" -c "$work/cg-a.ini" --peer cg-b --sizes "$bytes" \
  --messages 5000 --round-trips 10 --burst "$burst" \
  --completions "${RN_BENCH_COMPLETIONS:-0}") >"$work/table" 2>"$work/initiate.log" ||
  status=$?
end_pair "$status" "$work/initiate.log" "$work/respond.log"
if [[ -n "${RN_CALLGRIND_KEEP:-}" ]]; then
  mkdir -p "$RN_CALLGRIND_KEEP"
  cp "$work/send.cg" "$work/receive.cg" "$RN_CALLGRIND_KEEP"/
fi

count() {   # callgrind file, function: prints "calls inclusive"
  scripts/callgrind-calls.py "$1" "$2" | awk '{ print $2, $3 }'
}
count_any() {   # the same, "0 0" for a function never called
  scripts/callgrind-calls.py "$1" "$2" 2>/dev/null |
    awk '{ print $2, $3; found = 1 } END { if (!found) print 0, 0 }'
}
# Requests and their notifications: every one the receiver took.
read -r singles single_ir < <(count "$work/send.cg" send_one)
read -r bursts burst_ir < <(count_any "$work/send.cg" send_burst)
requests=$((singles + bursts))
send_ir=$((single_ir + burst_ir))
read -r cqes cqe_ir < <(count "$work/send.cg" rn_lcore_notify_completion)
# The sender's completions include its few receives (the echoes): out.
read -r echoes echo_ir < <(count "$work/send.cg" received)
read -r recvs recv_ir < <(count "$work/receive.cg" received)
sends=$recvs
read -r reposts repost_ir < <(count "$work/receive.cg" rn_lcore_repost)
awk -v rq="$requests" -v sn="$sends" -v si="$send_ir" -v cn="$cqes" -v ci="$cqe_ir" \
    -v en="$echoes" -v ei="$echo_ir" -v rn="$recvs" -v ri="$recv_ir" \
    -v pn="$reposts" -v pi="$repost_ir" 'BEGIN {
  send = si / sn; done = (ci - ei) / sn
  recv = ri / rn; repost = pi / pn
  print "| side | step | calls | instructions per notification |"
  print "| --- | --- | ---: | ---: |"
  printf "| send | send_one, send_burst: credit, window entry, SEND_IMM posted; a doorbell per request (%d requests) | %d | %.1f |\n", rq, sn, send
  printf "| send | completions: window entries freed (rn_lcore_notify_completion) | %d | %.1f |\n", cn - en, done
  printf "| receive | received: frame checked, delivered | %d | %.1f |\n", rn, recv
  printf "| receive | repost: slot back to the RQ, credit count | %d | %.1f |\n", pn, repost
  printf "| send | per notification (goal < 150) | | %.1f |\n", send + done
  printf "| receive | per notification (goal < 150) | | %.1f |\n", recv + repost }'
