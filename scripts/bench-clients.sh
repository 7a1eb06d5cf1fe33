#!/usr/bin/env bash
# Round trips between client processes of two daemons, beside a plain TCP
# ping-pong of two processes, in one run so that the two compare. Two
# rnotifyd on loopback (the software device), each serving clients on a
# socket; rnotify-bench --clients attaches to both (agents bench-A and
# bench-B) and ping-pongs between its two clients, blocking in
# rn_client_wait() between hops; rnotify-tcp-pingpong does the same
# message sizes over TCP between two processes (TCP_NODELAY, blocking
# reads). Prints both tables and the ratio of the p50s.
# Wall-clock figures: on a 2-core machine the daemons' lcores, their
# control threads and the bench share two CPUs. The daemons and the clients
# run with the settings a user gets (idle = adaptive as in the example
# configuration, idle_polls and idle_sleep_us as by default, librnotify's
# default spin); the settings are printed with the table.
# Usage: scripts/bench-clients.sh [--sizes LIST] [--round-trips N]
#   RNOTIFY_BENCH=PATH   use that rnotify-bench, built already (the tests
#                        do); rnotifyd and rnotify-tcp-pingpong are taken
#                        from the same build
#   RN_BENCH_PORT=N      control ports N and N+1 (default 19621)
#   RN_BENCH_IDLE=busy   [dataplane] idle = busy in both daemons
#   RN_BENCH_IDLE_POLLS=N  [dataplane] idle_polls = N in both daemons
#                        (default: the daemon's default)
#   RNOTIFY_SPIN_US=N    the clients' spin before they block (default:
#                        librnotify's, 50)
#   RN_BENCH_CLIENT_WRAP="CMD ARGS"  run rnotify-bench under CMD (valgrind:
#                        scripts/bench-librnotify-instructions.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-pair.sh
build=$(cd "$(dirname "$bench")/../.." && pwd)
rnotifyd=$build/control/daemon/rnotifyd
tcp=$build/control/bench/rnotify-tcp-pingpong
sizes=16,256,4096
trips=2000
while (($#)); do
  case $1 in
    --sizes) sizes=$2; shift 2 ;;
    --round-trips) trips=$2; shift 2 ;;
    *) echo "usage: $0 [--sizes LIST] [--round-trips N]" >&2; exit 2 ;;
  esac
done

daemons=()
stop_daemons() {
  for pid in "${daemons[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${daemons[@]}"; do wait "$pid" 2>/dev/null || true; done
  daemons=()
}
trap 'stop_daemons; cleanup' EXIT

pair_configs cl-a cl-b "${RN_BENCH_PORT:-19621}" "connect_timeout_ms = 10000
dead_after_ms = 10000

[client]
socket = $work/cl-a.sock"
# The same keys for b, but its own socket.
sed -i "s|^socket = .*|socket = $work/cl-b.sock|" "$work/cl-b.ini"
idle_polls=${RN_BENCH_IDLE_POLLS:-default}
if [[ $idle_polls != default ]]; then
  sed -i "s/^idle = adaptive$/&\nidle_polls = $idle_polls/" \
    "$work/cl-a.ini" "$work/cl-b.ini"
fi
idle=${RN_BENCH_IDLE:-adaptive}
if [[ $idle != adaptive ]]; then
  sed -i "s/^idle = adaptive$/idle = $idle/" "$work/cl-a.ini" "$work/cl-b.ini"
fi
for side in a b; do
  "$rnotifyd" -c "$work/cl-$side.ini" 2>"$work/cl-$side.log" &
  daemons+=($!)
done
for side in a b; do
  for _ in $(seq 200); do
    [[ -S $work/cl-$side.sock ]] && break
    sleep 0.05
  done
  [[ -S $work/cl-$side.sock ]] ||
    { echo "bench: rnotifyd cl-$side serves no client socket; its log:" >&2
      tail -n 20 "$work/cl-$side.log" >&2; exit 1; }
done

status=0
${RN_BENCH_CLIENT_WRAP:-} "$bench" --clients "$work/cl-a.sock,$work/cl-b.sock" --sizes "$sizes" \
  --round-trips "$trips" >"$work/client.md" 2>"$work/client.log" || status=$?
if [[ $status -ne 0 ]]; then
  echo "bench: the client run failed; its logs:" >&2
  tail -n 20 "$work/client.log" "$work/cl-a.log" "$work/cl-b.log" >&2
  exit 1
fi
stop_daemons
: >"$work/tcp.txt"
for size in ${sizes//,/ }; do
  "$tcp" --size "$size" --round-trips "$trips" >>"$work/tcp.txt"
done
echo "client: two daemons with idle = $idle, idle_polls = $idle_polls;" \
  "RNOTIFY_SPIN_US=${RNOTIFY_SPIN_US:-default}; $trips round trips per size"
echo
cat "$work/client.md"
# "tcp 16 bytes: RTT p50 19.6 us, p99 26.2 us, avg 19.9 us (...)"
awk '{ gsub(",", ""); printf "| tcp | %s | %s | %s | %s |\n", $2, $6, $9, $12 }' \
  "$work/tcp.txt"
echo
echo "| bytes | client RTT p50 / TCP RTT p50 (goal: 5x or less) |"
echo "| ---: | ---: |"
awk -F' *[|] *' 'NR == FNR { if (FNR > 2) client[$3] = $4; next }
  { gsub(",", ""); split($0, f, " "); tcp = f[6]
    printf "| %s | %.1fx |\n", f[2], client[f[2]] / tcp }' \
  "$work/client.md" "$work/tcp.txt"
