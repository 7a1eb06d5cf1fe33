#!/usr/bin/env bash
# What an idle rnotifyd costs: the CPU share of a daemon with the example
# configuration (idle = adaptive), no peers and nothing to do, from its
# /proc/PID/stat user + system time over SECONDS.
# Usage: scripts/bench-idle.sh [SECONDS]   (5; build first: build/)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-5}
rnotifyd=${RNOTIFYD:-build/control/daemon/rnotifyd}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The example, under a name and port of its own, without its peers.
sed -e 's/^name = .*/name = bench-idle/' \
    -e '/^\[control\]/,/^\[/ s/^port = .*/port = 0/' \
    -e '/^\[peer/,$d' config/examples/rnotifyd.ini >"$work/idle.ini"
"$rnotifyd" -c "$work/idle.ini" 2>"$work/log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
sleep 2   # past start-up
cpu() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
before=$(cpu)
sleep "$seconds"
after=$(cpu)
kill "$pid"
wait "$pid" || { echo "bench-idle: rnotifyd failed; its log:" >&2; cat "$work/log" >&2; exit 1; }
awk -v a="$before" -v b="$after" -v hz="$(getconf CLK_TCK)" -v s="$seconds" \
  'BEGIN { printf "idle rnotifyd: %.1f%% of a CPU over %d s\n", 100 * (b - a) / hz / s, s }'
