#!/usr/bin/env bash
# Installs what darknet-mn needs from Debian's archive and fetches Darknet's
# source package into third_party/dl. Idempotent: safe to re-run.
# scripts/deps.sh hankai (or DEPS_HANKAI=1) also installs what hank-ai's
# Darknet builds with, which no other base needs: cmake, OpenCV (its image
# reading, a large package) and 64-bit-integer OpenBLAS (its cblas).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
hankai=${DEPS_HANKAI:-0}
case ${1:-} in
'') ;;
hankai) hankai=1 ;;
*) echo "usage: $0 [hankai]" >&2; exit 2 ;;
esac

pkgs="build-essential dpkg-dev pkg-config python3 procps iproute2 libopenmpi-dev openmpi-bin mpich libmpich-dev libstb-dev zlib1g-dev libcairo2-dev libopenblas-dev libdnnl-dev dataset-fashion-mnist darknet clang libclang-rt-14-dev libomp-14-dev strace valgrind"
[ "$hankai" = 1 ] && pkgs="$pkgs cmake libopencv-dev libopenblas64-dev"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done

src=/etc/apt/sources.list.d/darknet-mn-src.list
need_src=0
ls "$top"/third_party/dl/darknet_*.dsc >/dev/null 2>&1 || need_src=1

if [ -n "$missing" ] || [ $need_src = 1 ]; then
  if [ $need_src = 1 ] && ! grep -rqs '^deb-src .*bookworm main\|^Types:.*deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "deb-src http://deb.debian.org/debian bookworm main" | $SUDO tee "$src" >/dev/null
  fi
  $SUDO apt-get update -qq
fi
if [ -n "$missing" ]; then
  echo "deps: installing$missing"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi
if [ $need_src = 1 ]; then
  mkdir -p "$top/third_party/dl"
  (cd "$top/third_party/dl" && apt-get source --download-only darknet)
fi
mkdir -p "$top/third_party/dl"
[ -f "$top/third_party/dl/.fetched" ] || touch "$top/third_party/dl/.fetched"
# The Makefile includes this file; its being newer than this script tells
# make that everything above is installed (make re-reads itself after it).
echo "# written by scripts/deps.sh: Debian's packages and Darknet's source are installed" > "$top/third_party/deps.mk"
# With DARKNET=hankai the Makefile includes this one too: hank-ai's
# Darknet's packages are here, and its pkg-config flags can be read.
[ "$hankai" = 1 ] && echo "# written by scripts/deps.sh hankai: cmake libopencv-dev libopenblas64-dev are installed" > "$top/third_party/deps-hankai.mk"
echo "deps: ok"
