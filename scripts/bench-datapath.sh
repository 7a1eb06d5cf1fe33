#!/usr/bin/env bash
# Instructions per data path operation, counted by callgrind (repeatable on
# a noisy machine, unlike time). The software device runs outside the
# measured functions; see tests/bench/bench_datapath.c.
# Usage: scripts/bench-datapath.sh
set -euo pipefail
cd "$(dirname "$0")/.."

command -v valgrind >/dev/null || { echo "bench: valgrind is missing; run scripts/setup.sh" >&2; exit 1; }
[[ -f build/build.ninja ]] || meson setup build >/dev/null
meson compile -C build >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
  build/tests/bench/bench_datapath >"$work/ops" 2>"$work/valgrind.log"
callgrind_annotate --inclusive=yes --threshold=100 "$work/cg.out" >"$work/annotate"

# "=> file:bench_x (Nx)" lines carry each call site's inclusive count.
awk '
  FNR == NR { ops[$1] = $2; next }
  /=> .*:bench_[a-z_]+ \(/ {
    fn = $0; sub(/.*:/, "", fn); sub(/ .*/, "", fn)
    ir = $1; gsub(/,/, "", ir); total[fn] += ir
  }
  END {
    n = split("bench_post_inline_send bench_post_gather_send bench_post_write bench_post_write_burst bench_poll_burst bench_poll_cqe bench_poll_write_cqe bench_repost_recv", order, " ")
    what["bench_post_inline_send"] = "inline 64-byte SEND posted and doorbelled"
    what["bench_post_gather_send"] = "4 KiB SEND of 4 gather entries, posted and doorbelled"
    what["bench_poll_burst"] = "CQE polled and dispatched, bursts of 16 (per CQE)"
    what["bench_poll_cqe"] = "CQE polled and dispatched, one per call"
    what["bench_repost_recv"] = "receive WQE reposted (with its doorbell record)"
    what["bench_post_write"] = "4 KiB RDMA WRITE posted signalled and doorbelled (rn_sq_post_rdma)"
    what["bench_post_write_burst"] = "4 KiB RDMA WRITE in a batch of 16, one signalled, one doorbell (per WQE)"
    what["bench_poll_write_cqe"] = "a WRITE'"'"'s CQE polled and dispatched, one per call"
    goal["bench_post_inline_send"] = "< 100"; goal["bench_poll_burst"] = "< 60"
    printf "| operation | instructions | goal |\n| --- | ---: | --- |\n"
    for (i = 1; i <= n; i++) {
      fn = order[i]
      if (!(fn in ops) || !(fn in total)) { print "bench: no count for " fn > "/dev/stderr"; exit 1 }
      printf "| %s | %.1f | %s |\n", what[fn], total[fn] / ops[fn], (fn in goal) ? goal[fn] : ""
    }
  }' "$work/ops" "$work/annotate"
