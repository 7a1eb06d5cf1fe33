#!/usr/bin/env bash
# The main job: build, start rnotifyd on the default configuration with the
# software NIC, show its status (rnotify-ctl status), stop it cleanly;
# then run the notification benchmark (two processes, native vs TCP) and
# print its table, and the client benchmark (client processes of two
# daemons, beside a TCP ping-pong of two processes).
# Usage: scripts/run.sh [CONFIG]     (default config/examples/rnotifyd.ini)
set -euo pipefail
cd "$(dirname "$0")/.."

config=${1:-config/examples/rnotifyd.ini}
scripts/setup.sh
[[ -f build/build.ninja ]] || meson setup build >/dev/null
meson compile -C build >/dev/null

name=$(build/control/daemon/rnotifyd --check-config "$config" |
       awk -F' = ' '/^name = / {print $2; exit}')
echo "== starting rnotifyd ($config, name $name)"
build/control/daemon/rnotifyd -c "$config" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' EXIT

ctl() { PYTHONPATH=build/dataplane/client/python build/control/ctl/rnotify-ctl --name "$name" "$@"; }
query() { ctl status --json 2>/dev/null || true; }
for _ in $(seq 100); do
  kill -0 $pid 2>/dev/null || { wait $pid; exit $?; }
  query | grep -q '"state": "running"' && break
  sleep 0.1
done
sleep 0.5
echo "== rnotify-ctl --name $name status"
ctl status
echo "== stopping (SIGTERM)"
kill -TERM $pid
trap - EXIT
rc=0
wait $pid || rc=$?
echo "== rnotifyd exited with status $rc"
[[ $rc -eq 0 ]] || exit $rc

echo "== notification benchmark (scripts/bench-notify.sh --messages 5000 --round-trips 500)"
RNOTIFY_BENCH=build/control/bench/rnotify-bench \
  scripts/bench-notify.sh --messages 5000 --round-trips 500

echo "== client benchmark (scripts/bench-clients.sh --round-trips 2000)"
RNOTIFY_BENCH=build/control/bench/rnotify-bench \
  scripts/bench-clients.sh --round-trips 2000

# -- transfer benchmark (issue 18, item 7): table, CSV and plot --
# 1,000 measured transfers per block up to 1 MiB, 1,000 MiB worth above
# (at least 20), after up to 100 warm-up rounds each: about a minute on 2
# cores. RN_RUN_TRANSFER_ITERATIONS=N chooses another N.
xfer_iterations=${RN_RUN_TRANSFER_ITERATIONS:-1000}
mkdir -p build/bench
echo "== transfer benchmark (scripts/bench-transfer.sh --iterations $xfer_iterations:" \
     "READ/WRITE 4 KiB..64 MiB, with and without a notification;" \
     "$xfer_iterations per block up to 1 MiB, $xfer_iterations MiB worth above, at least 20)"
RNOTIFY_BENCH=build/control/bench/rnotify-bench \
  RN_BENCH_CSV=build/bench/transfers.csv RN_BENCH_PNG=build/bench/transfers.png \
  scripts/bench-transfer.sh --iterations "$xfer_iterations"
echo "== transfer results: build/bench/transfers.csv (table), build/bench/transfers.png (plot)"
