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
meson test -C build --print-errorlogs

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

# Fuzz the control protocol decoder for a bounded time from a corpus of
# valid frames; a crash or sanitizer report fails the run.
corpus=build-asan/fuzz-corpus
mkdir -p "$corpus"
build-asan/tests/fuzz/proto_seeds "$corpus"
build-asan/tests/fuzz/fuzz_proto -max_total_time="${RNOTIFY_FUZZ_SECONDS:-60}" \
  -print_final_stats=1 "$corpus" 2>&1 | grep -E '^(Done|stat::number_of_executed_units)|ERROR|SUMMARY' || true
test "${PIPESTATUS[0]}" -eq 0
