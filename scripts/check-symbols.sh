#!/usr/bin/env bash
# Every external symbol of the built static libraries carries the rn_
# prefix: they link into applications, where a bare name (conn_send,
# timers_run) would collide with the application's own. Fails listing the
# offenders, as "library: symbol".
# Usage: scripts/check-symbols.sh [BUILD_DIR]
#   BUILD_DIR: relative to the repository root; default build
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:-build}
mapfile -t libs < <(find "$dir" -name '*.a' | sort)
if ((${#libs[@]} == 0)); then
  echo "check-symbols: no static library under $dir; build first" >&2
  exit 1
fi

offenders=()
for lib in "${libs[@]}"; do
  # Meson's archives are thin: nm reads the objects they name.
  symbols=$(nm -g --defined-only "$lib") ||
    { echo "check-symbols: nm cannot read $lib" >&2; exit 1; }
  mapfile -t -O "${#offenders[@]}" offenders < <(awk -v lib="$lib" \
    'NF == 3 && $3 !~ /^rn_/ { print lib ": " $3 }' <<<"$symbols")
done

if ((${#offenders[@]})); then
  echo "check-symbols: ${#offenders[@]} external symbols without the rn_" \
    "prefix (rename them rn_<object>_<verb>, or make them static):" >&2
  printf '%s\n' "${offenders[@]}" >&2
  exit 1
fi
echo "check-symbols: $dir, ${#libs[@]} static libraries: every external" \
  "symbol carries the rn_ prefix"
