#!/usr/bin/env bash
# Instructions per notification on the lcore for client processes, against
# the embedded API's in-process path, counted by callgrind (repeatable on a
# noisy machine, unlike time). tests/bench/bench_client runs two lcores in
# one process with the daemon's default [notify] and turns their loops by
# hand, one notification per turn, BYTES of name ("bulk") + msg each, from
# lcore A (the sender) to lcore B (the receiver):
#   node    the embedded API: an application's request ring on A, its
#           deliveries and releases on B
#   client  a client process's submit ring on A, an agent's deliver ring
#           on B
# The goal's figure is all that each lcore does for a notification, both
# ways alike: the work of its turns (the completions it handles, the
# embedded API's rings, the clients' rings: bench_client's
# sender_work/receiver_work) less what as many turns cost with nothing to
# do (sender_idle/receiver_idle, the same turns counted after the run).
# So each way's own hand-over is in it: the request and release rings'
# dequeues for the embedded API, the submit ring and the wake-up checks
# for a client. Not counted: the software device, CQ polling, and the
# applications' side of the rings (scripts/bench-librnotify-instructions.sh
# counts librnotify's). Below it, where the lcore's part goes, by
# function, with what each leaves out:
#   node    send_one() for each request, the send completions
#           (rn_lcore_notify_completion, less the receives it dispatches),
#           received() and rn_lcore_repost() at the other end; not the
#           request and release rings
#   client  client_send_one(), from the read of the submit ring to the
#           doorbell (the SEND checked, its agent frame written, posted,
#           the entry finished), the same completions, and received_send():
#           from the CQE to the DELIVERY enqueued in the destination
#           client's deliver ring, with the one copy into its receive
#           buffer and the slot's repost; not the wake-up checks
# The agents' names are AGENT_LEN bytes (36: NIXL's UUIDs).
# Usage: scripts/bench-client-instructions.sh [BYTES [COUNT [AGENT_LEN]]]
#        (64, 5000, 36). RN_BENCH_MAX_INLINE=N runs both with [notify]
# max_inline = N (64): an agent frame goes inline only when the notify
# QP's inline size takes its agents too.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v valgrind >/dev/null || { echo "bench: valgrind is missing; run scripts/setup.sh" >&2; exit 1; }
bytes=${1:-64}
count=${2:-5000}
agent_len=${3:-36}
[[ -f build/build.ninja ]] || meson setup build >/dev/null
meson compile -C build >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for mode in node client; do
  valgrind --tool=callgrind --callgrind-out-file="$work/$mode.cg" \
    build/tests/bench/bench_client "$mode" "$bytes" "$count" "$agent_len" \
    >"$work/$mode.out" 2>"$work/$mode.log" ||
    { echo "bench: the $mode run failed:" >&2; cat "$work/$mode.log" >&2; exit 1; }
done

count() {   # callgrind file, function: prints "calls inclusive"
  scripts/callgrind-calls.py "$1" "$2" | awk '{ print $2, $3 }'
}
for mode in node client; do
  for fn in sender_work receiver_work sender_idle receiver_idle; do
    read -r calls cost < <(count "$work/$mode.cg" "$fn")
    declare "${mode}_${fn}=$calls $cost"
  done
done
read -r _ node_send < <(count "$work/node.cg" send_one)
read -r _ node_cqe < <(count "$work/node.cg" rn_lcore_notify_completion)
read -r node_n node_recv < <(count "$work/node.cg" received)
read -r _ node_repost < <(count "$work/node.cg" rn_lcore_repost)
read -r _ client_send < <(count "$work/client.cg" client_send_one)
read -r _ client_cqe < <(count "$work/client.cg" rn_lcore_notify_completion)
read -r client_n client_recv < <(count "$work/client.cg" received_send)
read -r polls client_poll < <(count "$work/client.cg" rn_lcore_client_poll)
[[ "$node_n" == "$count" && "$client_n" == "$count" ]] ||
  { echo "bench: $node_n and $client_n receives, want $count each" >&2; exit 1; }

awk -v n="$count" -v b="$bytes" -v al="$agent_len" \
    -v nsw="$node_sender_work" -v nrw="$node_receiver_work" \
    -v nsi="$node_sender_idle" -v nri="$node_receiver_idle" \
    -v csw="$client_sender_work" -v crw="$client_receiver_work" \
    -v csi="$client_sender_idle" -v cri="$client_receiver_idle" \
    -v ns="$node_send" -v nc="$node_cqe" -v nr="$node_recv" -v np="$node_repost" \
    -v cs="$client_send" -v cc="$client_cqe" -v cr="$client_recv" \
    -v pn="$polls" -v pi="$client_poll" '
  # "calls cost" of the measured turns, less as many idle ones, per notification
  function lcore(work, idle,   w, i) {
    split(work, w, " "); split(idle, i, " ")
    return (w[2] - w[1] * i[2] / i[1]) / n
  }
  function idle_turn(idle,   i) { split(idle, i, " "); return i[2] / i[1] }
  BEGIN {
  node_send = lcore(nsw, nsi); client_send = lcore(csw, csi)
  node_recv = lcore(nrw, nri); client_recv = lcore(crw, cri)
  printf "%d notifications of %d bytes, agents of %d bytes, [notify] max_inline %s; instructions per notification\n\n", n, b, al, ENVIRON["RN_BENCH_MAX_INLINE"] == "" ? 64 : ENVIRON["RN_BENCH_MAX_INLINE"]
  print "All the lcore does for one notification, less its idle turns:\n"
  print "| side | embedded API (node-level frame) | client process (agent frame) | difference (goal <= 60) |"
  print "| --- | ---: | ---: | ---: |"
  printf "| send (lcore A) | %.1f | %.1f | %+.1f |\n", node_send, client_send, client_send - node_send
  printf "| receive (lcore B) | %.1f | %.1f | %+.1f |\n", node_recv, client_recv, client_recv - node_recv
  printf "\nAn idle turn: %.1f embedded API only, %.1f with one client attached\n", idle_turn(nsi), idle_turn(csi)
  node_send = (ns + nc - nr) / n; client_send = (cs + cc - cr) / n
  node_recv = (nr + np) / n; client_recv = cr / n
  print "\nOf which, by function (see the head of this script for what each leaves out):\n"
  print "| side | embedded API | client process | difference |"
  print "| --- | ---: | ---: | ---: |"
  printf "| send: request or submit ring to doorbell, and completions | %.1f | %.1f | %+.1f |\n", node_send, client_send, client_send - node_send
  printf "| receive: CQE to delivery, and the repost | %.1f | %.1f | %+.1f |\n", node_recv, client_recv, client_recv - node_recv
  printf "\nrn_lcore_client_poll() besides the sends, per call: %.1f (%d calls)\n", (pi - cs) / pn, pn }'
