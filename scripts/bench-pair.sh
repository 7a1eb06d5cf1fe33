# Sourced by the notification benchmarks (bench-notify*.sh), from the
# repository root: sets $bench (an rnotify-bench; RNOTIFY_BENCH names one
# built already, as the tests do), $work (a folder removed at exit, with
# $responder killed if still running), pair_configs and end_pair.

bench=${RNOTIFY_BENCH:-}
if [[ -z "$bench" ]]; then
  [[ -f build/build.ninja ]] || meson setup build >/dev/null
  meson compile -C build >/dev/null
  bench=build/control/bench/rnotify-bench
fi
work=$(mktemp -d)
responder=
cleanup() {
  [[ -n "$responder" ]] && kill "$responder" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# pair_configs NAME_A NAME_B PORT [CONTROL_KEYS]: $work/NAME_A.ini and
# $work/NAME_B.ini, two processes on loopback (control ports PORT and
# PORT+1) that call each other at start. [notify] as by default (256 send
# and 256 receive slots of 64 KiB), but one endpoint per lcore, or
# RN_BENCH_SLOTS=N slots. RN_BENCH_HUGEPAGES sets [dataplane] hugepages;
# RN_BENCH_CPUS_A / RN_BENCH_CPUS_B its cpus, for NAME_A / NAME_B.
pair_configs() {
  local a=$1 b=$2 port=$3 keys=${4:-}
  # One pair per port on this host at a time: a second run (a test beside
  # a bench, another clone's CI) waits for the first to end rather than
  # failing at once on its daemon names and ports.
  exec {pair_lock}>"${TMPDIR:-/tmp}/rnotify-bench-$port.lock"
  flock -w 240 "$pair_lock" ||
    { echo "bench: another run (or what it left running) held port $port for 4 minutes" >&2; exit 1; }
  write_config "$a" "$port" "$b" $((port + 1)) "$keys" "${RN_BENCH_CPUS_A:-}"
  write_config "$b" $((port + 1)) "$a" "$port" "$keys" "${RN_BENCH_CPUS_B:-}"
}

# The pair authenticates as the examples do, with the secret
# scripts/setup.sh writes, when there is one (RN_BENCH_SECRET names
# another; empty: none).
bench_secret=${RN_BENCH_SECRET-${XDG_CONFIG_HOME:-$HOME/.config}/rnotify/secret}
[[ -z $bench_secret || -r $bench_secret ]] || bench_secret=

write_config() {   # name, own port, peer name, peer port, control keys, cpus
  cat >"$work/$1.ini" <<INI
[dataplane]
name = $1
lcores = 0-1
memory_mb = 128
${RN_BENCH_HUGEPAGES:+hugepages = $RN_BENCH_HUGEPAGES}
${6:+cpus = $6}
idle = adaptive

[nic]
provider = sim

[control]
listen = 127.0.0.1
port = $2
${bench_secret:+secret_file = $bench_secret}
$5

[notify]
${RN_BENCH_SLOTS:+slots = $RN_BENCH_SLOTS}
slot_size = 65536
endpoints_per_lcore = 1

[peer $3]
address = 127.0.0.1
port = $4
connect = eager
INI
}

# end_pair STATUS INITIATOR_LOG RESPONDER_LOG: the initiator ended with
# STATUS; on a failure of either side print the logs and exit 1, else wait
# for the responder ($responder) to end.
end_pair() {
  if [[ $1 -ne 0 ]]; then
    echo "bench: the run failed; its logs:" >&2
    tail -n 20 "$2" "$3" >&2
    exit 1
  fi
  if ! wait "$responder"; then
    echo "bench: the responder failed; its log:" >&2
    tail -n 30 "$3" >&2
    exit 1
  fi
  responder=
}
