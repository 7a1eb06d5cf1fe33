#!/usr/bin/env bash
# Instructions per notification on the lcore for client processes, against
# the embedded API's in-process path, counted by callgrind (repeatable on a
# noisy machine, unlike time). tests/bench/bench_client runs two lcores in
# one process with the daemon's default [notify] and turns their loops by
# hand, one notification per turn, BYTES of name ("bulk") + msg each:
#   node    the embedded API: send_one() for each request, the send
#           completions (rn_lcore_notify_completion, less the receives it
#           dispatches), received() and rn_lcore_repost() at the other end
#   client  a client process's submit ring: client_sends() from the read
#           of the ring to the doorbell (the SEND checked, its agent frame
#           written, posted, the entry finished), the same completions,
#           and received_send(): from the CQE to the DELIVERY enqueued in the
#           destination client's deliver ring, with the one copy into its
#           receive buffer and the slot's repost
# The agents' names are AGENT_LEN bytes (36: NIXL's UUIDs). Not counted,
# on either side: the software device, CQ polling, the dequeues of the
# request and release rings; also not counted on the client side, shown
# apart: rn_lcore_client_poll()'s own work per turn (the loop over
# attached clients, the wake-up check of each client enqueued for).
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
read -r _ node_send < <(count "$work/node.cg" send_one)
read -r _ node_cqe < <(count "$work/node.cg" rn_lcore_notify_completion)
read -r node_n node_recv < <(count "$work/node.cg" received)
read -r _ node_repost < <(count "$work/node.cg" rn_lcore_repost)
read -r _ client_send < <(count "$work/client.cg" client_sends)
read -r _ client_cqe < <(count "$work/client.cg" rn_lcore_notify_completion)
read -r client_n client_recv < <(count "$work/client.cg" received_send)
read -r polls client_poll < <(count "$work/client.cg" rn_lcore_client_poll)
[[ "$node_n" == "$count" && "$client_n" == "$count" ]] ||
  { echo "bench: $node_n and $client_n receives, want $count each" >&2; exit 1; }

awk -v n="$count" -v b="$bytes" -v al="$agent_len" \
    -v ns="$node_send" -v nc="$node_cqe" -v nr="$node_recv" -v np="$node_repost" \
    -v cs="$client_send" -v cc="$client_cqe" -v cr="$client_recv" \
    -v pn="$polls" -v pi="$client_poll" 'BEGIN {
  node_send = (ns + nc - nr) / n; client_send = (cs + cc - cr) / n
  node_recv = (nr + np) / n; client_recv = cr / n
  printf "%d notifications of %d bytes, agents of %d bytes, [notify] max_inline %s; instructions per notification\n\n", n, b, al, ENVIRON["RN_BENCH_MAX_INLINE"] == "" ? 64 : ENVIRON["RN_BENCH_MAX_INLINE"]
  print "| side | embedded API (node-level frame) | client process (agent frame) | difference (goal <= 60) |"
  print "| --- | ---: | ---: | ---: |"
  printf "| send: request or submit ring to doorbell, and completions | %.1f | %.1f | %+.1f |\n", node_send, client_send, client_send - node_send
  printf "| receive: CQE to delivery, and the repost | %.1f | %.1f | %+.1f |\n", node_recv, client_recv, client_recv - node_recv
  printf "\nrn_lcore_client_poll() besides the sends, per call: %.1f (%d calls)\n", (pi - cs) / pn, pn }'
