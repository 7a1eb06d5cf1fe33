#!/usr/bin/env bash
# What `meson install` gives an application: install the build into a
# temporary folder (--destdir), build tests/client/installed_client.c
# against the installed rn_client.h and rnotify.pc only (PKG_CONFIG_PATH
# into it), start two of the installed rnotifyd on loopback, and run the
# program against the first: it attaches and sends to the second, and its
# send's fate comes back. Starts daemons: run it under
# flock /tmp/rnotify-test.lock, as scripts/test.sh is.
# Usage: scripts/test-install.sh [BUILD_DIR]     (default build)
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
dest=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$dest"
}
trap cleanup EXIT

meson install -C "$build" --destdir "$dest" --quiet >/dev/null
prefix=$(meson introspect "$build" --buildoptions |
         python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
root=$dest$prefix
pc=$(find "$root" -name rnotify.pc -print -quit)
[[ -n "$pc" ]] || { echo "test-install: no rnotify.pc installed under $root" >&2; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
# The .pc file names the real prefix; the files lie under $dest.
pkg=(pkg-config --define-variable=prefix="$root" rnotify)
libdir=$("${pkg[@]}" --variable=libdir)
cc -Wall -Werror -o "$dest/installed_client" tests/client/installed_client.c \
  $("${pkg[@]}" --cflags --libs) -Wl,-rpath,"$libdir"
if nm -D --undefined-only "$libdir/librnotify.so" | grep -q ' rte_'; then
  echo "test-install: the installed librnotify needs DPDK symbols" >&2
  exit 1
fi

rnotifyd=$(find "$root" -name rnotifyd -type f -print -quit)
# The service: its unit names the installed binary and configuration.
unit=$root/lib/systemd/system/rnotifyd.service
conf=$(find "$dest" -path '*/rnotify/rnotifyd.ini' -print -quit)
for want in "ExecStart=$prefix/${rnotifyd#"$root/"} -c " "${conf#"$dest"}"; do
  grep -qF -- "$want" "$unit" 2>/dev/null ||
    { echo "test-install: $unit lacks '$want'" >&2; exit 1; }
done
for f in rnotify-ctl rnotifyd; do
  [[ -x $root/bin/$f ]] || { echo "test-install: no $root/bin/$f" >&2; exit 1; }
done
port=${RN_INSTALL_TEST_PORT:-19641}
for side in a b; do
  if [[ $side == a ]]; then own=$port peer=b other=$((port + 1));
  else own=$((port + 1)) peer=a other=$port; fi
  cat >"$dest/in-$side.ini" <<INI
[dataplane]
name = in-$side
memory_mb = 64
idle = adaptive

[nic]
provider = sim

[control]
listen = 127.0.0.1
port = $own

[notify]
slots = 16
slot_size = 4096

[client]
socket = $dest/in-$side.sock

[peer in-$peer]
address = 127.0.0.1
port = $other
INI
  "$rnotifyd" -c "$dest/in-$side.ini" 2>"$dest/in-$side.log" &
  pids+=($!)
done
for side in a b; do
  for _ in $(seq 200); do
    [[ -S $dest/in-$side.sock ]] && break
    sleep 0.05
  done
done
if ! "$dest/installed_client" "$dest/in-a.sock" in-b nobody; then
  echo "test-install: the installed client failed; the daemons' logs:" >&2
  tail -n 20 "$dest/in-a.log" "$dest/in-b.log" >&2
  exit 1
fi
echo "test-install: built against $pc; it attached to the installed rnotifyd and sent"
