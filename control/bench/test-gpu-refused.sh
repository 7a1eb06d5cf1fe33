#!/usr/bin/env bash
# rnotify-bench --gpu where it cannot run: one line saying why, at once.
# - this host as it is: no libcuda.so.1 (or, with a GPU, the check passes);
# - the CUDA toolkit's stub as libcuda.so.1: cuInit fails, and the line
#   says it is the stub, not a driver;
# - scripts/bench-hosts.sh --dry-run --gpu stops before it makes any
#   namespace: this host's line, or (with a GPU) that the sim has no
#   dma-buf.
set -u
bench=${RNOTIFY_BENCH:?RNOTIFY_BENCH names rnotify-bench}
cd "$(dirname "$0")/../.."
fail() { echo "FAIL: $*"; exit 1; }
one_line() {   # TEXT: one line, the bench's
  [[ $(printf '%s\n' "$1" | wc -l) -eq 1 && $1 == "rnotify-bench: --gpu: "* ]]
}

gpu=0
if out=$("$bench" --gpu-check 2>&1); then
  gpu=1
  echo "this host has a GPU: $out"
else
  one_line "$out" || fail "--gpu-check: not one line: $out"
  echo "ok: --gpu-check here: $out"
fi

stub=/usr/local/cuda/lib64/stubs/libcuda.so
if [[ -f $stub ]]; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  ln -s "$stub" "$dir/libcuda.so.1"
  out=$(LD_LIBRARY_PATH=$dir "$bench" --gpu-check 2>&1) &&
    fail "the stub passed for a driver: $out"
  one_line "$out" && [[ $out == *stub* ]] ||
    fail "--gpu-check on the stub: $out"
  echo "ok: --gpu-check on the stub: $out"
else
  echo "no $stub: its case not run"
fi

start=$SECONDS
out=$(RNOTIFY_BENCH=$bench scripts/bench-hosts.sh --dry-run --gpu 2>&1)
rc=$?
((rc == 1)) || fail "bench-hosts --dry-run --gpu: exit $rc: $out"
((SECONDS - start < 10)) || fail "bench-hosts --dry-run --gpu: not early"
if ((gpu)); then
  [[ $out == *"the sim registers no dma-buf"* ]] || fail "bench-hosts: $out"
else
  one_line "$(head -n 1 <<<"$out")" || fail "bench-hosts: $out"
fi
[[ $out != *"== bench-hosts:"* ]] || fail "bench-hosts ran: $out"
echo "ok: bench-hosts --dry-run --gpu: $out"
