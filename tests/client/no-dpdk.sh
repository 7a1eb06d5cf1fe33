#!/usr/bin/env bash
# librnotify.so links no DPDK library and needs no DPDK symbol (only
# rte_ring's inline functions are compiled into it); what it exports is
# rn_client.h's calls, rn_client_*, and nothing else.
# Usage: no-dpdk.sh PATH/librnotify.so
set -euo pipefail
lib=$1
bad=$(nm -D --undefined-only "$lib" | awk '$NF ~ /rte_/ { print $NF }')
if [[ -n "$bad" ]]; then
  echo "librnotify needs DPDK symbols: $bad" >&2
  exit 1
fi
if readelf -d "$lib" | grep -E 'NEEDED.*(rte|dpdk)'; then
  echo "librnotify links a DPDK library" >&2
  exit 1
fi
other=$(nm -D --defined-only "$lib" | awk '$2 == "T" && $3 !~ /^rn_client_/ { print $3 }')
if [[ -n "$other" ]]; then
  echo "librnotify exports more than rn_client.h: $other" >&2
  exit 1
fi
n=$(nm -D --defined-only "$lib" | awk '$2 == "T"' | wc -l)
echo "librnotify: no DPDK symbol; exports $n rn_client_* calls"
