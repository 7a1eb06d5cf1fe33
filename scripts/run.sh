#!/usr/bin/env bash
# The main job: build, start rnotifyd on the default configuration with the
# software NIC, show its status through DPDK telemetry, stop it cleanly.
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

query() { echo "/rnotify/status" | dpdk-telemetry.py -f "rnotify-$name" 2>/dev/null | grep '^{' || true; }
for _ in $(seq 100); do
  kill -0 $pid 2>/dev/null || { wait $pid; exit $?; }
  query | grep -q '"state": "running"' && break
  sleep 0.1
done
sleep 0.5
echo "== /rnotify/status (dpdk-telemetry.py -f rnotify-$name)"
query | python3 -m json.tool
echo "== stopping (SIGTERM)"
kill -TERM $pid
trap - EXIT
wait $pid
echo "== rnotifyd exited with status $?"
