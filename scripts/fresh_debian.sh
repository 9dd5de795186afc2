#!/usr/bin/env bash
# scripts/fresh_debian.sh CMD...: run each CMD, in order, as a new user types
# it, in a Debian 12 root made from Debian's archive a minute ago (mmdebstrap:
# nothing in it but apt, make and git), holding a copy of this checkout's
# committed tree with ../shared beside it. What the README promises on a fresh
# machine is tested here, not on this one, where every package was installed
# long ago. Needs root (chroot, mounts); .ci/run calls it.
#
# The root gets /proc, /sys, /dev and a tmpfs /dev/shm (Open MPI's shared
# memory) mounted. On any exit they are unmounted, and the root removed only
# once nothing is mounted under it, never across a file-system boundary: a
# removal through a /dev still bound inside would empty the machine's own.
# NVIDIA's CUDA (with cuDNN and NCCL) is no Debian package: a GPU user
# installs it under /usr/local/cuda. Where this machine has it there, the
# root gets it bound read-only at the same place, its bin on PATH, as such
# a user has it (FRESH_CUDA=0: a machine without it).
# FRESH_KEEP=1 keeps the root (its path is printed) for a look afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: $0 CMD... (each run in the fresh root's checkout)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "fresh_debian: needs root (mmdebstrap, chroot and mounts)" >&2; exit 2; }
[ -d ../shared ] || { echo "fresh_debian: no ../shared beside the checkout" >&2; exit 2; }
if ! command -v mmdebstrap > /dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap > /dev/null
fi
MIRROR=${FRESH_MIRROR:-http://deb.debian.org/debian}
base=$(mktemp -d /var/tmp/darknet-mn-fresh.XXXXXX)
root=$base/root

unmount_all() {   # deepest first; lazily where a process still holds one
    local m
    for m in $(findmnt -rn -o TARGET | grep "^$root\(/\|$\)" | sort -r); do
        umount "$m" 2> /dev/null || umount -l "$m" || true
    done
}
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    # Processes a failed command left inside (an mpiexec, a rank) hold mounts.
    local pids
    pids=$(for p in /proc/[0-9]*; do [ "$(readlink "$p/root" 2> /dev/null)" = "$root" ] && echo "${p#/proc/}"; done || true)
    [ -n "$pids" ] && kill -9 $pids 2> /dev/null || true
    unmount_all
    if findmnt -rn -o TARGET | grep -q "^$root\(/\|$\)"; then
        echo "fresh_debian: still mounted under $root; not removed:" >&2
        findmnt -rn -o TARGET | grep "^$root\(/\|$\)" >&2
        exit 1
    elif [ "${FRESH_KEEP:-0}" = 1 ]; then echo "fresh_debian: kept $root"
    else rm -rf --one-file-system "$base"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=$SECONDS
mmdebstrap --quiet --variant=apt --include=make,git bookworm "$root" "$MIRROR"
echo "fresh_debian: Debian 12 root in $((SECONDS - t0)) s: $root"
# What Debian's installer writes and mmdebstrap does not: the host name in
# /etc/hosts (without it every lookup of it, Open MPI's at each start,
# waits for the DNS server to time out: 5 s an mpiexec).
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$(hostname)" > "$root/etc/hosts"
# The checkout as committed (what a clone gets) and ../shared beside it.
home=$root/root
mkdir -p "$home/darknet-mn"
git archive HEAD | tar -C "$home/darknet-mn" -xf -
cp -a ../shared "$home/shared"
# The root a mount point of its own, private, as a real machine's / is:
# `ip netns exec` (the testbeds) remounts / and fails on a plain folder.
mount --bind "$root" "$root"
mount --make-private "$root"
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --bind /dev "$root/dev"
mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
mount -t tmpfs tmpfs "$root/run"
path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
cuda=$(readlink -f /usr/local/cuda 2> /dev/null || true)
if [ "${FRESH_CUDA:-1}" = 1 ] && [ -x "$cuda/bin/nvcc" ]; then
    mkdir -p "$root$cuda"
    mount --bind "$cuda" "$root$cuda"
    mount -o remount,bind,ro "$root$cuda"
    ln -sfn "$cuda" "$root/usr/local/cuda"
    # As NVIDIA's installer does: its libraries on the loader's path.
    printf '%s\n' "$cuda/lib64" "$cuda/lib" > "$root/etc/ld.so.conf.d/zz-cuda.conf"
    chroot "$root" ldconfig
    path=/usr/local/cuda/bin:$path
    echo "fresh_debian: $cuda bound read-only (CUDA, as a GPU user installs it)"
fi
for cmd in "$@"; do
    t=$SECONDS
    echo "fresh_debian: $ $cmd"
    # A login shell's environment, none of this machine's (PATH, OMPI_*, CUDA).
    if ! env -i HOME=/root TERM=dumb PATH="$path" LANG=C.UTF-8 chroot "$root" /bin/bash -c "cd /root/darknet-mn && $cmd" < /dev/null; then
        echo "fresh_debian: FAILED after $((SECONDS - t)) s: $cmd" >&2
        exit 1
    fi
    echo "fresh_debian: ok in $((SECONDS - t)) s: $cmd"
done
echo "fresh_debian: all $# commands passed in $((SECONDS - t0)) s"
