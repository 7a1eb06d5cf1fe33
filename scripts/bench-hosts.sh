#!/usr/bin/env bash
# The transfer benchmark between two hosts with ConnectX NICs: one
# rnotify-bench per host (provider = mlx5), started over ssh, host A
# initiating, host B responding, native notifications. Prints the seed's
# rows beside its published figures (nixlbench, two H20-3e hosts, classic
# and native: docs/performance.md) and the goals. There is no "classic"
# run: transfers need the endpoint's native channel (its data QPs), which
# MC_RDMA_NOTIFY_ENABLED=0 turns off with the notify QP; the seed's
# classic figure is printed for reference.
#
# Usage: scripts/bench-hosts.sh [options] HOST_A HOST_B
#        scripts/bench-hosts.sh --dry-run [options]
#   --iterations N    measured rounds per block (default 1000; fewer above
#                     1 MiB, as rnotify-bench does)
#   --max-block B     largest block (default 67108864)
#   --copy            copy build/control/bench/rnotify-bench to the hosts
#                     (into --remote-dir); else it must be there already, at
#                     the same path as here (a checkout built alike)
#   --remote-dir D    where configs, secret, CSVs go on the hosts
#                     (default /tmp/rnotify-bench-hosts)
#   --device NAME     [nic] device on both hosts (default auto)
#   --gid-index N     [nic] gid_index (RoCE v2 entry; default 0)
#   --gpu[=N]         both sides' buffers in GPU memory (GPU N, default 0),
#                     by dma-buf (rnotify-bench --gpu; ibv_reg_dmabuf_mr).
#                     Each host must list a GPU (nvidia-smi -L) and pass
#                     rnotify-bench --gpu-check (a CUDA driver whose GPU
#                     exports dma-bufs: NVIDIA's open kernel modules), or
#                     the run stops before it starts, saying which. With
#                     --dry-run, the check runs here and stops the run: no
#                     GPU driver, or, with one, the sim (no dma-buf)
#   --dry-run         here, across two network namespaces joined by a veth
#                     pair, with the sim device; `ssh HOST` becomes
#                     `ip netns exec NS`. Needs root: without it, SKIP (77)
#   RN_ADDR_A, RN_ADDR_B   the hosts' addresses for the control plane
#                     (default: the first of `hostname -I` on each)
#   RN_SSH            the ssh command (default "ssh -o BatchMode=yes")
#
# A shared secret is made for the run (openssl rand -hex 32, mode 0600)
# and named by both configs' [control] secret_file (docs/security.md): the
# pair listens on a routable address, and only the two of them may become
# each other's peer. Results: the CSVs are fetched into RN_BENCH_OUT
# (default a folder this script prints).
set -euo pipefail
cd "$(dirname "$0")/.."

iterations=1000 max_block=67108864 copy=0 dry=0 gpu=0 gpu_index=0
remote_dir=/tmp/rnotify-bench-hosts device=auto gid_index=0
ssh_cmd=${RN_SSH:-ssh -o BatchMode=yes}
hosts=()
while (($#)); do
  case $1 in
    --iterations) iterations=$2; shift ;;
    --max-block) max_block=$2; shift ;;
    --copy) copy=1 ;;
    --remote-dir) remote_dir=$2; shift ;;
    --device) device=$2; shift ;;
    --gid-index) gid_index=$2; shift ;;
    --gpu) gpu=1 ;;
    --gpu=*) gpu=1 gpu_index=${1#--gpu=} ;;
    --dry-run) dry=1 ;;
    -h|--help) sed -n '2,42p' "$0"; exit 0 ;;
    -*) echo "bench-hosts: unknown option $1" >&2; exit 2 ;;
    *) hosts+=("$1") ;;
  esac
  shift
done

local_bench=build/control/bench/rnotify-bench
if [[ -n "${RNOTIFY_BENCH:-}" ]]; then
  local_bench=$RNOTIFY_BENCH
elif ((dry || copy)); then
  [[ -f build/build.ninja ]] || meson setup build >/dev/null
  meson compile -C build >/dev/null
fi
local_bench=$(realpath -m "$local_bench")

if ((dry && gpu)); then
  # The namespaces are this host: its GPU check is theirs, and says
  # first what this host lacks. With a GPU, the sim still has no dma-buf.
  "$local_bench" --gpu-check="$gpu_index" >/dev/null ||
    { echo "bench-hosts: --gpu: this host cannot (the line above says why)" >&2; exit 1; }
  echo "bench-hosts: --dry-run --gpu: the sim registers no dma-buf (-EOPNOTSUPP); GPU memory needs two ConnectX hosts" >&2
  exit 1
fi

if ((dry)); then
  ((${#hosts[@]} == 0)) || { echo "bench-hosts: --dry-run takes no hosts" >&2; exit 2; }
  if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null; then
    echo "SKIP: bench-hosts --dry-run needs root and iproute2 (network namespaces)"
    exit 77
  fi
else
  ((${#hosts[@]} == 2)) || { sed -n '11,12p' "$0" >&2; exit 2; }
fi

work=$(mktemp -d)
out=${RN_BENCH_OUT:-$work/out}
mkdir -p "$out"
ns=() pids=()
cleanup() {
  # The responder, by the pid it wrote (the local ssh or ip process is
  # not it).
  if ((${#pids[@]})); then
    run_on "${hosts[1]}" "p=\$(cat '$remote_dir/responder.pid') &&
      kill -TERM \$p 2>/dev/null && for i in \$(seq 50); do
        kill -0 \$p 2>/dev/null || exit 0; sleep 0.1; done;
      kill -KILL \$p 2>/dev/null" || true
    kill "${pids[@]}" 2>/dev/null || true
  fi
  for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

if ((dry)); then
  # Two namespaces, a veth pair between them: the "hosts". The files are
  # shared, so the remote folder is ours and nothing is copied.
  tag=$$
  ns=("rnbh-a-$tag" "rnbh-b-$tag")
  sub=$((tag % 200 + 20))
  ip netns add "${ns[0]}"; ip netns add "${ns[1]}"
  ip link add "rnbh${tag}a" type veth peer name "rnbh${tag}b"
  ip link set "rnbh${tag}a" netns "${ns[0]}"
  ip link set "rnbh${tag}b" netns "${ns[1]}"
  addr=("10.$sub.77.1" "10.$sub.77.2")
  for i in 0 1; do
    side=$([[ $i -eq 0 ]] && echo a || echo b)
    ip -n "${ns[$i]}" addr add "${addr[$i]}/24" dev "rnbh${tag}$side"
    ip -n "${ns[$i]}" link set "rnbh${tag}$side" up
    ip -n "${ns[$i]}" link set lo up
  done
  hosts=("${ns[@]}")
  remote_dir=$work/remote
  mkdir -p "$remote_dir"
  run_on() { local h=$1; shift; ip netns exec "$h" bash -c "$*"; }
  put() { :; }          # the namespaces share our files
  get() { :; }
  remote_bench=$local_bench
  provider=sim
  lcore_keys="lcores = 0-1
idle = adaptive"
  # Two sim devices on two shared CPUs: an ACK may wait for a time slice,
  # so the ACK timeout is ~1 s (18) rather than ~67 ms (14).
  nic_keys="qp_timeout = 18"
  cpus=("1,0" "0,1")
else
  run_on() { local h=$1; shift; $ssh_cmd "$h" "$*"; }
  put() { local h=$1; shift; scp -q -p "$@" "$h:$remote_dir/"; }
  get() { scp -q "$1:$remote_dir/$2" "$out/$2"; }
  addr=("${RN_ADDR_A:-}" "${RN_ADDR_B:-}")
  for i in 0 1; do
    run_on "${hosts[$i]}" "mkdir -p '$remote_dir'"
    [[ -n "${addr[$i]}" ]] ||
      addr[i]=$(run_on "${hosts[$i]}" "hostname -I" | awk '{print $1}')
    [[ -n "${addr[$i]}" ]] ||
      { echo "bench-hosts: no address for ${hosts[$i]}; set RN_ADDR_${i/0/A}" >&2; exit 1; }
  done
  if ((copy)); then
    remote_bench=$remote_dir/rnotify-bench
    for h in "${hosts[@]}"; do put "$h" "$local_bench"; done
  else
    remote_bench=$local_bench
  fi
  for h in "${hosts[@]}"; do
    run_on "$h" "test -x '$remote_bench'" ||
      { echo "bench-hosts: $h has no $remote_bench: build it there, or pass --copy" >&2; exit 1; }
    has_gpu=0
    run_on "$h" "command -v nvidia-smi >/dev/null && nvidia-smi -L" 2>/dev/null |
      grep -q '^GPU' && has_gpu=1
    if ((gpu && !has_gpu)); then
      echo "bench-hosts: --gpu: $h lists no GPU (nvidia-smi -L)" >&2; exit 1
    elif ((gpu)); then
      # Its line says what is missing: driver, stub, dma-buf support.
      run_on "$h" "'$remote_bench' --gpu-check=$gpu_index" ||
        { echo "bench-hosts: --gpu: $h cannot (the line above says why)" >&2; exit 1; }
    elif ((has_gpu)); then
      echo "bench-hosts: $h has GPUs; host memory is measured (--gpu: GPU memory)"
    fi
  done
  provider=mlx5
  nic_keys="device = $device
gid_index = $gid_index"
  lcore_keys="lcores = 0-1
idle = busy"
  cpus=("" "")
fi

# The shared secret, for this run only.
(umask 077 && openssl rand -hex 32 >"$work/secret")
port=${RN_BENCH_PORT:-19641}
names=(bench-a bench-b)
for i in 0 1; do
  j=$((1 - i))
  cat >"$work/${names[$i]}.ini" <<INI
[dataplane]
name = ${names[$i]}
$lcore_keys
${cpus[$i]:+cpus = ${cpus[$i]}}
memory_mb = 256

[nic]
provider = $provider
$nic_keys

[control]
listen = ${addr[$i]}
port = $((port + i))
secret_file = $remote_dir/secret
connect_timeout_ms = 10000
dead_after_ms = 10000

[notify]
slot_size = 65536
endpoints_per_lcore = 1

[peer ${names[$j]}]
address = ${addr[$j]}
port = $((port + j))
connect = eager
INI
done
if ((dry)); then
  cp -p "$work/secret" "$work"/bench-*.ini "$remote_dir/"
else
  for i in 0 1; do put "${hosts[$i]}" "$work/secret" "$work/${names[$i]}.ini"; done
fi

memory="host memory"
((gpu == 0)) || memory="GPU memory"
echo "== bench-hosts: ${hosts[0]} (${addr[0]}) initiates, ${hosts[1]} (${addr[1]}) responds; provider $provider; $memory; --iterations $iterations --max-block $max_block"
args="--transfer --iterations $iterations --max-block $max_block"
if ((gpu)); then args+=" --gpu=$gpu_index"; fi
# run MODE ENV: one sweep; the initiator's table to stdout, its CSV to $out.
run() {
  local mode=$1 env=$2 status=0
  run_on "${hosts[1]}" "echo \$\$ >'$remote_dir/responder.pid'; $env exec '$remote_bench' -c '$remote_dir/bench-b.ini' --peer bench-a --respond $args" \
    >"$work/$mode-respond.log" 2>&1 &
  pids=($!)
  run_on "${hosts[0]}" "$env '$remote_bench' -c '$remote_dir/bench-a.ini' --peer bench-b $args --csv '$remote_dir/$mode.csv'" \
    >"$work/$mode.md" 2>"$work/$mode-initiate.log" || status=$?
  if ((status == 0)) && ! wait "${pids[0]}"; then status=1; fi
  ((status != 0)) || pids=()
  if ((status != 0)); then
    echo "bench-hosts: the $mode run failed; its logs:" >&2
    tail -n 20 "$work/$mode-initiate.log" "$work/$mode-respond.log" >&2
    exit 1
  fi
  if ((dry)); then cp "$remote_dir/$mode.csv" "$out/"; else get "${hosts[0]}" "$mode.csv"; fi
  echo "== $mode notifications"
  cat "$work/$mode.md"
}
run native ""

# The seed's rows beside its figures: average latency of READ/WRITE 4 KiB
# with a notification, and GB/s of the largest block (64 MiB) READ with one.
echo
echo "== beside the seed (nixlbench, two H20-3e hosts, GPU memory; avg latency)"
awk -F, -v dry="$dry" -v max="$max_block" -v mem="$memory" '
  FNR == 1 { next }
  { avg["native," $1 "," $2 "," $3] = $5; gb["native," $1 "," $2 "," $3] = $8 }
  function cell(v) { return v == "" ? "-" : v }
  END {
    print "| row | here (native, " mem ") | seed, native | seed, classic | goal |"
    print "| --- | ---: | ---: | ---: | --- |"
    printf "| READ 4 KiB + notify, avg (us) | %s | 19.2 | 440.3 | <= 10 us |\n",
      cell(avg["native,READ,4096,1"])
    printf "| WRITE 4 KiB + notify, avg (us) | %s | 18.0 | 436.0 | |\n",
      cell(avg["native,WRITE,4096,1"])
    printf "| READ %d B + notify (GB/s) | %s | 38.8 (64 MiB) | 30.8 (64 MiB) | >= 45 GB/s at 64 MiB, 400 Gb/s links |\n",
      max, cell(gb["native,READ," max ",1"])
    bad = avg["native,READ,4096,1"] == "" || avg["native,WRITE,4096,1"] == "" ||
          !(gb["native,READ," max ",1"] > 0)
    if (bad) {
      print "bench-hosts: the table lacks a row it must have" > "/dev/stderr"
      exit 1
    }
    if (dry)
      print "(dry run: the sim device over a veth pair on one 2-core host; the figures test the script, not the goals)"
    else {
      r = avg["native,READ,4096,1"]; g = gb["native,READ," max ",1"]
      printf "goal READ 4 KiB + notify <= 10 us: %s\n", (r != "" && r <= 10) ? "met" : "NOT met"
      if (max == 67108864)
        printf "goal 64 MiB >= 45 GB/s: %s\n", (g != "" && g >= 45) ? "met" : "NOT met"
    }
  }' "$out/native.csv"
if [[ -n "${RN_BENCH_OUT:-}" ]]; then
  echo "bench-hosts: CSVs in $out (native.csv)"
fi
