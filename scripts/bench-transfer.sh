#!/usr/bin/env bash
# Transfers between two rnotify processes on this host (the sim device over
# loopback TCP), in the nixlbench style: READ and WRITE of blocks from
# 4 KiB doubling to 64 MiB, each without and with a notification
# (rnotify-bench --transfer), and a plain TCP stream between two
# processes, the ceiling for the sim (the median of a run before the
# transfers and two after), and the ratio at the largest block.
# Wall-clock figures on a shared 2-core host: compare within one run.
# Usage: scripts/bench-transfer.sh [--max-block BYTES] [--iterations N]
#        scripts/bench-transfer.sh --pairs N [--max-block BYTES]
#                                  [--iterations N]
#   --pairs N            only the largest block, N times, each run right
#                        after a TCP stream of its own and compared with
#                        it: on a shared machine the two then see the same
#                        load, which a sweep of minutes and three TCP runs
#                        around it do not. One row per pair, then the
#                        median ratio and the pairs at or over 70%.
#   RN_BENCH_CSV=FILE    also write the table as CSV there
#   RN_BENCH_PNG=FILE    and plot it there (scripts/plot-transfers.py:
#                        latency and GB/s vs block, the TCP ceiling a line)
#   RN_BENCH_PORT=N      control ports N and N+1 (default 19621)
#   RN_BENCH_CPUS_A=L, RN_BENCH_CPUS_B=L  [dataplane] cpus of the two
#                        processes (default 1,0 and 0,1: each worker lcore
#                        on a CPU of its own, as the TCP baseline's two
#                        processes are; "" for the default placement)
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-pair.sh
pairs=0
args=()
while (($#)); do
  case $1 in
    --pairs) pairs=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
set -- ${args[@]+"${args[@]}"}
RN_BENCH_CPUS_A=${RN_BENCH_CPUS_A-1,0}
RN_BENCH_CPUS_B=${RN_BENCH_CPUS_B-0,1}
pair_configs xfer-a xfer-b "${RN_BENCH_PORT:-19621}" "connect_timeout_ms = 10000
dead_after_ms = 10000"
csv=${RN_BENCH_CSV:-$work/transfer.csv}

# The ceiling: one TCP stream between two processes on loopback, 1 GiB in
# 4 MiB writes, each side walking through a 64 MiB buffer of its own, as a
# 64 MiB transfer reads and writes 64 MiB of memory (a buffer that stays in
# the cache, or the kernel's zero page, would raise the ceiling with work
# the transfer cannot skip). Measured three times, once before the
# transfers and twice after, and the median taken: on a shared machine one
# run alone moves by a factor of two (docs/performance.md).
tcp_stream() {
python3 - <<'PY'
import os, socket, time
total, chunk, block = 1 << 30, 4 << 20, 64 << 20
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
port = srv.getsockname()[1]
if os.fork() == 0:
    buf = memoryview(bytearray(os.urandom(block)))
    c = socket.create_connection(("127.0.0.1", port))
    for i in range(total // chunk):
        off = i * chunk % block
        c.sendall(buf[off:off + chunk])
    c.close(); os._exit(0)
view = memoryview(bytearray(b"\1" * block)); got = 0
conn, _ = srv.accept()
t0 = time.monotonic()
while got < total:
    off = got % block
    n = conn.recv_into(view[off:min(block, off + chunk)])
    if n == 0: break
    got += n
dt = time.monotonic() - t0; os.wait()
print(f"{got / dt / 1e9:.6f}")
PY
}
# One run of the pair, initiator's table in $work/table.md, its CSV in $1;
# the rest of the arguments to both.
run_pair() {
  local out=$1 status=0
  shift
  "$bench" -c "$work/xfer-b.ini" --peer xfer-a --respond --transfer "$@" \
    2>"$work/respond.log" &
  responder=$!
  "$bench" -c "$work/xfer-a.ini" --peer xfer-b --transfer --csv "$out" "$@" \
    >"$work/table.md" 2>"$work/initiate.log" || status=$?
  end_pair "$status" "$work/initiate.log" "$work/respond.log"
}

if ((pairs > 0)); then
  max=$((64 << 20))
  for ((i = 1; i <= $#; i++)); do
    [[ ${!i} == --max-block ]] && { j=$((i + 1)); max=$((${!j})); }
  done
  echo "| pair | TCP stream (GB/s) | READ $max (GB/s) | % of TCP | WRITE $max (GB/s) | % of TCP |"
  echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
  for ((p = 1; p <= pairs; p++)); do
    tcp=$(tcp_stream)
    run_pair "$work/pair.csv" --min-block "$max" "$@"
    awk -F, -v p="$p" -v tcp="$tcp" -v max="$max" '
      NR > 1 && $2 == max && $3 == 0 { gb[$1] = $8 }
      END { if (!("READ" in gb) || !("WRITE" in gb)) {
              print "bench: no " max "-byte READ and WRITE rows" > "/dev/stderr"
              exit 1 }
            printf "| %d | %.3f | %.3f | %.0f | %.3f | %.0f |\n", p, tcp,
              gb["READ"], 100 * gb["READ"] / tcp, gb["WRITE"],
              100 * gb["WRITE"] / tcp }' "$work/pair.csv"
  done | tee "$work/pairs.md"
  awk -F'|' '{ r[++n] = $5 + 0; w[n] = $7 + 0
      ro += ($5 >= 70); wo += ($7 >= 70) }
    function median(a, n,   i, j, t) {
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
        if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END { printf "\nREAD: median %.0f%% of TCP, %d of %d pairs at or over 70%%\n", median(r, n), ro, n
          printf "WRITE: median %.0f%% of TCP, %d of %d pairs at or over 70%%\n", median(w, n), wo, n }' \
    "$work/pairs.md"
  exit 0
fi

tcp_runs=$(tcp_stream)

run_pair "$csv" "$@"
cat "$work/table.md"

tcp_runs="$tcp_runs $(tcp_stream) $(tcp_stream)"
tcp=$(printf '%s\n' $tcp_runs | sort -g | sed -n 2p)
echo "| TCP stream, two processes (GB/s; median of $(echo $tcp_runs | sed 's/ /, /g')) | $tcp |"
awk -F, -v tcp="$tcp" 'NR > 1 && $2 > max { max = $2 }
  NR > 1 { gb[$1 "," $2 "," $3] = $8 }
  END {
    for (op in ops) ;
    split("READ WRITE", o, " ")
    for (i = 1; i <= 2; i++)
      printf "| %s %d bytes, no notification: %.6f GB/s, %.0f%% of TCP |\n",
        o[i], max, gb[o[i] "," max ",0"], 100 * gb[o[i] "," max ",0"] / tcp
  }' "$csv"

if [[ -n "${RN_BENCH_PNG:-}" ]]; then
  # Debian's python3 has python3-matplotlib; another python3 first in
  # PATH (a pyenv) may not.
  py=python3
  $py -c 'import matplotlib' 2>/dev/null || py=/usr/bin/python3
  $py scripts/plot-transfers.py "$csv" "$RN_BENCH_PNG" --tcp "$tcp"
fi
