#!/usr/bin/env bash
# Install what rnotify needs from Debian's packages (only what is missing),
# then reserve 2 MiB hugepages when this user can. Idempotent; prints one line
# when there is nothing to do. Never fails for lack of hugepages: rnotifyd
# falls back to ordinary memory.
set -euo pipefail

packages=(meson ninja-build pkg-config gcc libibverbs-dev rdma-core
          ibverbs-providers libdpdk-dev dpdk dpdk-dev libcmocka-dev
          libhugetlbfs-bin libbsd-dev libnuma-dev iproute2 clang
          libclang-rt-14-dev valgrind python3 libssl-dev
          openssl python3-dev python3-pytest python3-matplotlib)
# Enough 2 MiB pages for a few test daemons side by side (1 GiB).
hugepages_wanted=${RNOTIFY_HUGEPAGES:-512}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
    || missing+=("$p")
done

if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: missing packages: ${missing[*]}; run as root to install them" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The control plane's shared secret (docs/security.md), made once, mode
# 0600: a node whose [control] secret_file names it proves it in every
# handshake. Nodes of one deployment need the same file.
secret=${RNOTIFY_SECRET_FILE:-${XDG_CONFIG_HOME:-$HOME/.config}/rnotify/secret}
if [[ ! -e $secret ]]; then
  mkdir -p "$(dirname "$secret")"
  (umask 077 && openssl rand -hex 32 > "$secret")
  echo "setup: wrote a new shared secret to $secret (mode 0600)"
fi

hugepages_line() {
  local total free kib
  total=$(awk '/^HugePages_Total:/ {print $2}' /proc/meminfo)
  free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
  kib=$(awk '/^Hugepagesize:/ {print $2}' /proc/meminfo)
  echo "${total:-0} hugepages of ${kib:-?} KiB reserved, ${free:-0} free"
}

mount_hugetlbfs() {
  mkdir -p /dev/hugepages
  mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null || true
}

if [[ $(id -u) -ne 0 ]]; then
  echo "setup: packages present; not root, so no hugepages reserved (rnotifyd uses ordinary memory)"
  exit 0
fi
current=$(cat /proc/sys/vm/nr_hugepages)
# /proc rather than hugeadm --pool-pages-min, which also leaves
# nr_overcommit_hugepages raised for good.
if ((current < hugepages_wanted)) &&
   ! echo "$hugepages_wanted" > /proc/sys/vm/nr_hugepages 2>/dev/null; then
  echo "setup: packages present; hugepages could not be reserved (rnotifyd uses ordinary memory)"
  exit 0
fi
mount_hugetlbfs
echo "setup: packages present; $(hugepages_line)"
