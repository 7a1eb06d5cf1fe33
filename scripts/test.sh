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

# The sanitizers see the unit tests; the process tests exercise EAL, whose
# hugepage mappings ASan's shadow memory does not cover.
configure build-asan -Db_sanitize=address,undefined -Db_lundef=false
meson compile -C build-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --print-errorlogs --suite unit
