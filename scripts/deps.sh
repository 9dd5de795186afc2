#!/usr/bin/env bash
# What darknet-mn needs: installed where this script may, checked everywhere.
#   scripts/deps.sh [build|demo|test] [hankai]
# build (the default): what make needs; demo: make demo's data too (on
# Debian/Ubuntu both are installed together); test: make test's tools too
# (Debian's MPICH and stock darknet, clang, valgrind, strace ...);
# hankai: what hank-ai's Darknet builds with (cmake, OpenCV, and 64-bit
# OpenBLAS where BLAS=1), and libjpeg's and libpng's headers for the GPU
# bundle's static OpenCV.
#
# DEPS=auto (the default) installs missing Debian packages with apt-get where
# dpkg and apt are here and it runs as root or sudo works without a
# password; DEPS=1 installs (sudo may ask for the password); DEPS=0 never
# does. Then, and everywhere else (not root, RHEL, SUSE, environment
# modules), it checks what the build will use the way the build finds it:
# the compilers and pkg-config, so that the CPATH, LIBRARY_PATH and
# PKG_CONFIG_PATH a `module load` sets count; prefixes can be named
# (DNNL_ROOT, OPENBLAS_ROOT; hank-ai's OPENCV_ROOT, OPENBLAS64_ROOT). What
# is missing is one list, with the
# package names for Debian/Ubuntu, RHEL/Rocky and Spack, and exit status 1;
# what is optional (oneDNN, cairo) is not asked for: the build goes on
# without it and says so.
# The Makefile passes MPICC, BLAS, DNNL, CAIRO, DARKNET, DARKNET_SRC (the
# base's clone, from its variable SRC_VAR: DARKNET_SRC, ALEXEYAB_SRC or
# HANKAI_SRC) and FASHION_IDX.
# Idempotent: safe to re-run.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
what=build
hankai=${DEPS_HANKAI:-0}
for a in "$@"; do
    case $a in
    build | demo | test) what=$a ;;
    hankai) hankai=1 ;;
    *) echo "usage: $0 [build|demo|test] [hankai]" >&2; exit 2 ;;
    esac
done
MPICC=${MPICC:-mpicc}
CC=${CC:-cc}
BLAS=${BLAS:-1}
DARKNET=${DARKNET:-pjreddie}
DARKNET_SRC=${DARKNET_SRC:-}
FASHION_IDX=${FASHION_IDX:-/usr/share/datasets/fashion-mnist}
stamp=$top/third_party/deps.mk
[ "$what" = demo ] && stamp=$top/third_party/deps-demo.mk
[ "$what" = test ] && stamp=$top/third_party/deps-test.mk
[ "$hankai" = 1 ] && [ "$what" = build ] && stamp=$top/third_party/deps-hankai$([ "$BLAS" != 0 ] || echo -noblas).mk

# Debian's packages by use. The build's own, the demo's data, hank-ai's, the tests'.
deb_build="build-essential dpkg-dev pkg-config libopenmpi-dev openmpi-bin libopenblas-dev libdnnl-dev libcairo2-dev zlib1g-dev libstb-dev dataset-fashion-mnist"
deb_hankai="cmake libopencv-dev libjpeg-dev libpng-dev"
[ "$BLAS" = 1 ] && deb_hankai="$deb_hankai libopenblas64-dev"
deb_test="python3 procps iproute2 mpich libmpich-dev darknet clang libclang-rt-14-dev libomp-14-dev strace valgrind libsimgrid-dev faketime lmod"
pkgs=$deb_build
[ "$hankai" = 1 ] && pkgs="$pkgs $deb_hankai"
[ "$what" = test ] && pkgs="$pkgs $deb_test"

SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
# Debian or Ubuntu: dpkg answers and apt is here (a dpkg on another system knows no dpkg).
debian=0
dpkg-query -W dpkg > /dev/null 2>&1 && apt-get --version > /dev/null 2>&1 && debian=1
may_install() {
    [ "$debian" = 1 ] || return 1
    case ${DEPS:-auto} in
    0) return 1 ;;
    1) return 0 ;;
    esac
    [ -z "$SUDO" ] || { command -v sudo > /dev/null 2>&1 && sudo -n true 2> /dev/null; }
}
# pjreddie's Darknet comes from Debian's source package unless DARKNET_SRC
# names a clone (the forks' from ../shared's snapshots or DARKNET_SRC); the
# tests build its stock darknet from it too.
src_used=0
if [ "$what" = test ] || { [ "$DARKNET" = pjreddie ] && [ -z "$DARKNET_SRC" ]; }; then src_used=1; fi
need_src=0
if [ $src_used = 1 ] && ! ls "$top"/third_party/dl/darknet_*.dsc > /dev/null 2>&1; then need_src=1; fi
fetch_src() { mkdir -p "$top/third_party/dl" && (cd "$top/third_party/dl" && apt-get source -qq --download-only darknet > /dev/null); }

if may_install; then
    missing=""
    for p in $pkgs; do
        dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    if [ -n "$missing" ] || [ $need_src = 1 ]; then
        if [ $need_src = 1 ] && ! grep -rqs '^deb-src .*bookworm main\|^Types:.*deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
            echo "deb-src http://deb.debian.org/debian bookworm main" | $SUDO tee /etc/apt/sources.list.d/darknet-mn-src.list > /dev/null
        fi
        $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
    fi
    if [ -n "$missing" ]; then
        echo "deps: installing$missing"
        # Another make's install (side by side, .ci/run) holds the lock a while: wait for it.
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq $missing
    fi
    if [ $need_src = 1 ]; then fetch_src; fi
elif [ $need_src = 1 ] && [ "$debian" = 1 ]; then
    # Fetching a source package needs no root, only a deb-src line.
    fetch_src 2> /dev/null || true
fi

# The checks, as the build does it. Each missing item is one line:
# what, what it is for, then Debian/Ubuntu | RHEL/Rocky (dnf) | Spack.
missing=()
miss() {   # miss WHAT WHY [DEBIAN RHEL SPACK]
    local line
    line=$(printf '  %-20s %s' "$1" "$2")
    [ $# -gt 2 ] && line+=$(printf '\n  %-20s Debian/Ubuntu: %s | RHEL/Rocky: %s | Spack: %s' "" "$3" "$4" "$5")
    missing+=("$line")
}
compiles() {   # [RUN=1] compiles COMPILER SOURCE FLAGS...: the program links (and, with RUN=1, exits 0)
    local cc=$1 src=$2 out ext=c
    shift 2
    case $cc in *++) ext=cpp ;; esac
    out=$(mktemp -d)
    printf '%b\n' "$src" > "$out/t.$ext"
    local rc=0
    "$cc" "$out/t.$ext" -o "$out/t" "$@" > /dev/null 2>&1 || rc=1
    [ $rc = 1 ] || [ "${RUN:-0}" = 0 ] || "$out/t" > /dev/null 2>&1 || rc=1
    rm -rf "$out"
    return $rc
}
first() { local f; for f; do [ -e "$f" ] && { echo "$f"; break; }; done; return 0; }   # the first FILE... there
prefix_flags() { [ -n "$1" ] && echo "-I$1/include -L$1/lib -L$1/lib64"; }

command -v make > /dev/null 2>&1 || miss make "the build" make make gmake
if ! compiles "$CC" 'int main(void) { return 0; }'; then
    miss "C compiler ($CC)" "the build" build-essential "gcc make" gcc
fi
if ! command -v "$MPICC" > /dev/null 2>&1 || ! compiles "$MPICC" '#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); return MPI_Finalize(); }'; then
    miss "MPI ($MPICC)" "MPI's C wrapper: module load openmpi, or MPICC=<wrapper>" "libopenmpi-dev openmpi-bin" "openmpi-devel (module load mpi/openmpi-x86_64)" "openmpi or mpich"
fi
if [ "$BLAS" = 1 ] && ! compiles "$CC" '#include <cblas.h>\nint main(void) { openblas_set_num_threads(1); return 0; }' \
    $(prefix_flags "${OPENBLAS_ROOT:-}") -lopenblas; then
    miss OpenBLAS "Darknet's gemm (BLAS=0: its own loops, several times slower; OPENBLAS_ROOT=<prefix>)" libopenblas-dev "openblas-devel (CRB/EPEL)" openblas
fi
if [ "${DNNL:-}" != 0 ] && ! compiles "$CC" '#include <oneapi/dnnl/dnnl.h>\nint main(void) { return dnnl_version() == 0; }' \
    $(prefix_flags "${DNNL_ROOT:-}") -ldnnl; then
    if [ "${DNNL:-}" = 1 ]; then
        miss oneDNN "DNNL=1's convolution engine (DNNL_ROOT=<prefix>)" libdnnl-dev "onednn-devel (EPEL)" onednn
    fi   # else optional: the Makefile says so when it links darknet_mn
fi
if [ "${CAIRO:-}" != 0 ] && ! { command -v pkg-config > /dev/null 2>&1 && pkg-config --exists cairo; }; then
    if [ "${CAIRO:-}" = 1 ]; then
        miss cairo "CAIRO=1's training chart and predictions.png" "libcairo2-dev pkg-config" "cairo-devel pkgconf-pkg-config" "cairo pkgconf"
    fi
fi
# The clone of this base's Darknet, from its own variable (the Makefile's SRC_VAR).
if [ -n "$DARKNET_SRC" ] && [ ! -d "$DARKNET_SRC/src" ] && [ ! -f "$DARKNET_SRC/CMakeLists.txt" ]; then
    miss "${SRC_VAR:-DARKNET_SRC}" "$DARKNET_SRC has neither src/ nor CMakeLists.txt: a clone of $DARKNET's Darknet is needed"
fi
if [ $src_used = 1 ] && { ! ls "$top"/third_party/dl/darknet_*.dsc > /dev/null 2>&1 || ! dpkg-source --version > /dev/null 2>&1; }; then
    miss "pjreddie's Darknet" "its source: git clone https://github.com/pjreddie/darknet and make DARKNET_SRC=<clone> (commit 61c9d02e), or Debian's source package" \
        "dpkg-dev and a deb-src line (apt-get source darknet)" "DARKNET_SRC=<clone>" "DARKNET_SRC=<clone>"
fi
# The demo's data and the tool that draws it (make demo, make test).
if [ "$what" != build ]; then
    compiles "$CC" '#include <zlib.h>\nint main(void) { return zlibVersion() == 0; }' -lz ||
        miss zlib "the demo's data tools" zlib1g-dev zlib-devel zlib
    compiles "$CC" '#include "stb_image_write.h"\nint main(void) { return 0; }' -I/usr/include/stb ||
        miss "stb" "the demo's data tools (stb_image_write.h)" libstb-dev "stb-devel (EPEL)" stb
    ls "$FASHION_IDX"/train-images-idx3-ubyte.gz > /dev/null 2>&1 ||
        miss Fashion-MNIST "the demo's images: the four .gz files of github.com/zalandoresearch/fashion-mnist in FASHION_IDX=<dir>" \
            dataset-fashion-mnist "download them" "download them"
fi
if [ "$hankai" = 1 ]; then
    command -v cmake > /dev/null 2>&1 || miss cmake "hank-ai's Darknet" cmake cmake cmake
    # OpenCV 4 as the Makefile takes it: OPENCV_ROOT's opencv4.pc, else its
    # include/opencv4 and the fork's four modules; without OPENCV_ROOT,
    # pkg-config's opencv4 (PKG_CONFIG_PATH). Static: the .pc's private libraries too.
    cv_pc=opencv4 cv_flags=""
    if [ -n "${OPENCV_ROOT:-}" ]; then
        cv_pc=$(first "$OPENCV_ROOT"/lib{,64}/pkgconfig/opencv4.pc)
        cv_lib=$(first "$OPENCV_ROOT"/lib{,64}/libopencv_core.so)
        [ -n "$cv_pc" ] || [ -z "$cv_lib" ] ||
            cv_flags="-I$OPENCV_ROOT/include/opencv4 -L${cv_lib%/*} -lopencv_highgui -lopencv_imgcodecs -lopencv_imgproc -lopencv_core -Wl,-rpath,${cv_lib%/*}"
    fi
    if [ -n "$cv_pc" ] && pkg-config --exists "$cv_pc" 2> /dev/null; then
        static=--static
        [ -e "$(pkg-config --variable=libdir "$cv_pc")/libopencv_core.so" ] && static=""
        cv_flags=$(pkg-config --cflags $static --libs "$cv_pc")
        [ -z "${OPENCV_ROOT:-}" ] || cv_flags+=" -Wl,-rpath,$(pkg-config --variable=libdir "$cv_pc")"
    fi
    if [ -z "$cv_flags" ] || ! compiles "${CXX:-c++}" '#include <opencv2/imgcodecs.hpp>\nint main() { return cv::imread("none.png").empty() ? 0 : 1; }' $cv_flags; then
        miss OpenCV "hank-ai's Darknet reads images with it: $([ -n "${OPENCV_ROOT:-}" ] && echo "OPENCV_ROOT=$OPENCV_ROOT holds none that links (docs/hankai.md)" ||
            echo "pkg-config finds no opencv4: load your site's OpenCV module, or name its prefix, OPENCV_ROOT=<prefix>")" libopencv-dev opencv-devel opencv
    fi
    # 64-bit OpenBLAS where BLAS=1 (a GPU build skips it): the cblas.h and
    # library the Makefile takes (OPENBLAS64_ROOT, else Debian's layout), with
    # 64-bit integers in both, as the fork's gemm passes them.
    if [ "$BLAS" = 1 ]; then
        if [ -n "${OPENBLAS64_ROOT:-}" ]; then
            b64_inc=$(first "$OPENBLAS64_ROOT"/include{,/openblas}/cblas.h)
            b64_lib=$(first "$OPENBLAS64_ROOT"/lib{,64}/libopenblas64.so "$OPENBLAS64_ROOT"/lib{,64}/libopenblas.so)
            b64_where="OPENBLAS64_ROOT=$OPENBLAS64_ROOT"
            b64_flags="-I${b64_inc%/*} $b64_lib -Wl,-rpath,${b64_lib%/*}"
        else
            b64_inc=$(first "/usr/include/$("$CC" -print-multiarch 2> /dev/null)/openblas64-pthread/cblas.h")
            b64_lib=-lopenblas64
            b64_where="Debian's layout"
            b64_flags="-I${b64_inc%/*} $b64_lib"
        fi
        b64_names=(libopenblas64-dev "openblas-devel (its libopenblas64; untried)" "openblas+ilp64 (OPENBLAS64_ROOT=\$OPENBLAS_ROOT)")
        if [ -z "$b64_inc" ] || [ -z "$b64_lib" ]; then
            miss "64-bit OpenBLAS" "hank-ai's Darknet's gemm (BLAS=1): no cblas.h and libopenblas64.so (or Spack's libopenblas.so) in $b64_where; name the prefix of one built with 64-bit integers, OPENBLAS64_ROOT=<prefix> (docs/hankai.md), or BLAS=0 to build without" "${b64_names[@]}"
        elif ! RUN=1 compiles "$CC" '#include <cblas.h>\n#include <string.h>\nint main(void) { return sizeof(blasint) != 8 || !strstr(openblas_get_config(), "USE64BITINT"); }' $b64_flags; then
            miss "64-bit OpenBLAS" "hank-ai's Darknet's gemm (BLAS=1): the OpenBLAS of $b64_where ($b64_inc, $b64_lib) has 32-bit integers, or does not link; BLAS=0 builds without it" "${b64_names[@]}"
        fi
    fi
fi
if [ "$what" = test ]; then
    # make test runs on Debian or Ubuntu (docs/testing.md): Debian's names only.
    for p in $deb_test; do
        [ "$debian" = 1 ] && dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" && continue
        miss "$p" "make test's tools (Debian's package $p)"
    done
fi

if [ ${#missing[@]} -gt 0 ]; then
    {
        why=""
        if [ "$debian" = 1 ] && ! may_install; then
            if [ "${DEPS:-auto}" = 0 ]; then why=" (DEPS=0: nothing was installed)"
            else why=" (nothing was installed: not root, and sudo asks for a password; DEPS=1 lets make run sudo, or ask your admin to install them)"; fi
        fi
        echo "deps: darknet-mn's $what needs what is not here$why:"
        printf '%s\n' "${missing[@]}"
    } >&2
    exit 1
fi
mkdir -p "$top/third_party/dl"
[ -f "$top/third_party/dl/.fetched" ] || touch "$top/third_party/dl/.fetched"
# The Makefile includes this file; its being newer than this script tells
# make that what is above is here (make re-reads itself after remaking it).
echo "# written by scripts/deps.sh $what$([ "$hankai" = 1 ] && echo ' hankai'): what it needs is here" > "$stamp"
echo "deps: ok"
