#!/usr/bin/env bash
# Build and run every test: the normal build's unit and process tests, then
# the unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
# Usage: scripts/test.sh            (from anywhere; builds under build/)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

configure() { # dir, extra meson options...
  local dir=$1; shift
  if [[ -f $dir/build.ninja ]]; then
    meson configure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
}

configure build
meson compile -C build
# Every external symbol of the static libraries carries the rn_ prefix:
# checked before the tests, so a bare name fails fast.
scripts/check-symbols.sh build
meson test -C build --print-errorlogs
# What `meson install` gives an application: a program built against the
# installed rnotify.pc attaches to the installed rnotifyd and sends.
scripts/test-install.sh build

# The two-host transfer benchmark, end to end, its "hosts" two network
# namespaces joined by a veth pair, the sim device between them
# (scripts/bench-hosts.sh --dry-run; ~20 s). Needs root: without it the
# script exits 77 and this says SKIP; any other failure fails the run.
hosts_rc=0
RNOTIFY_BENCH=build/control/bench/rnotify-bench \
  scripts/bench-hosts.sh --dry-run --iterations 5 >build/bench-hosts.log 2>&1 ||
  hosts_rc=$?
case $hosts_rc in
  0) echo "bench-hosts --dry-run: OK"; tail -n 6 build/bench-hosts.log ;;
  77) echo "bench-hosts --dry-run: SKIP ($(tail -n 1 build/bench-hosts.log))" ;;
  *) echo "bench-hosts --dry-run: FAIL ($hosts_rc); build/bench-hosts.log:" >&2
     tail -n 40 build/bench-hosts.log >&2; exit 1 ;;
esac

# Second build: clang with AddressSanitizer + UndefinedBehaviorSanitizer and
# the libFuzzer targets. The sanitizers see the unit tests and the
# notification bench (two whole processes, native and TCP); the other
# process tests run in the normal build only (they take minutes).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
[[ -f build-asan/build.ninja ]] ||
  CC=clang meson setup build-asan -Dfuzz=true -Db_lundef=false \
    -Db_sanitize=address,undefined >/dev/null
meson compile -C build-asan
meson test -C build-asan --print-errorlogs --suite unit --suite sanitized

# Fuzz the decoders for a bounded time each, from corpora of valid inputs;
# a crash or sanitizer report fails the run. The seed is printed;
# RNOTIFY_TEST_SEED=N runs with seed N (as the unit and process tests do).
fuzz() { # target, corpus folder, seconds
  local log=build-asan/$1.log status=0
  build-asan/tests/fuzz/"$1" -max_total_time="$3" -print_final_stats=1 \
    ${RNOTIFY_TEST_SEED:+-seed="$RNOTIFY_TEST_SEED"} "$2" >"$log" 2>&1 ||
    status=$?
  grep -E '^(INFO: Seed|Done|stat::number_of_executed_units)|ERROR|SUMMARY' \
    "$log" || true
  [[ $status -eq 0 ]] || { echo "fuzz: $1 failed ($status); see $log" >&2; tail -n 40 "$log" >&2; }
  return "$status"
}
# The control protocol, as a connection feeds it.
corpus=build-asan/fuzz-corpus
mkdir -p "$corpus"
build-asan/tests/fuzz/proto_seeds "$corpus"
fuzz fuzz_proto "$corpus" "${RNOTIFY_FUZZ_SECONDS:-45}"
# Notification frames, as a receive slot holds them: empty, and kv0/ready.
corpus=build-asan/fuzz-corpus-frame
mkdir -p "$corpus"
printf '\0\0\0\0\0\0\0\0' >"$corpus/empty"
printf '\3\0\0\0kv0\5\0\0\0ready' >"$corpus/kv"
fuzz fuzz_notify_frame "$corpus" "${RNOTIFY_FUZZ_FRAME_SECONDS:-15}"
