#!/usr/bin/env bash
# make zoo: every cfg in each base's cfg/ folder, adapted as a user would for
# the Fashion-MNIST sets (64-128 px, 10 classes, batch 2), trained 3
# iterations on 2 ranks (tools/mn_zoo.py says how each cfg is adapted and
# judged); then N x b = 1 x N*b on real cfgs. Tables: build/zoo/<base>.md;
# the last run's are in docs/zoo.md. About 40 minutes on 2 cores, most of it
# the fork's largest cfgs on its own gemm loops. ZOO_BASE=hankai (make zoo
# DARKNET=hankai): hank-ai's cfg/ alone (not cfg/unsupported), on the build
# make DARKNET=hankai made, judged by the fork's own CLI.
set -u
BUILD=${BUILD:-build}
OUT=$BUILD/zoo
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mkdir -p "$OUT"
rc=0
one() {   # one BASE MN DARKNET CFGDIR EQUIV-CFGS
    echo "== $1: $4"
    python3 tools/mn_zoo.py --base "$1" --mn "$2" --darknet "$3" --cfgs "$4" --det "$BUILD/fashion-det" \
        --cls "$BUILD/fashion" --out "$OUT/$1" --timeout 600 --table "$OUT/$1.md" || rc=1
    python3 tools/mn_zoo.py --base "$1" --mn "$2" --darknet "$3" --cfgs "$4" --det "$BUILD/fashion-det" \
        --cls "$BUILD/fashion" --out "$OUT/$1-eq" --wcmp "$BUILD/cpu/tests/mn_wcmp" --equiv "$5" || rc=1
}
make -s "$BUILD/cpu/tests/mn_wcmp" || exit 1
if [ "${ZOO_BASE:-}" = hankai ]; then
    HK=third_party/darknet-hankai-cpu
    one hankai "$BUILD/hankai-cpu/darknet_mn" "$HK/build-mn/src-cli/darknet" "$HK/cfg" yolov4-tiny.cfg,yolov3-tiny.cfg,yolov7-tiny.cfg
    echo "make zoo: table in $OUT/hankai.md"
    exit $rc
fi
one pjreddie ./darknet_mn third_party/darknet-cpu/darknet third_party/darknet-cpu/cfg yolov3-tiny.cfg,darknet19.cfg,resnet18.cfg
if make -s DARKNET=alexeyab "$BUILD/alexeyab-cpu/darknet_mn"; then
    one alexeyab "$BUILD/alexeyab-cpu/darknet_mn" third_party/darknet-alexeyab-cpu/darknet third_party/darknet-alexeyab-cpu/cfg \
        yolov4-tiny.cfg,yolov7-tiny.cfg,darknet19.cfg,efficientnet_b0.cfg
else
    echo "make zoo: AlexeyAB's base did not build (its snapshot is in ../shared/third_party, or set ALEXEYAB_SRC)"; rc=1
fi
echo "make zoo: tables in $OUT/pjreddie.md and $OUT/alexeyab.md"
exit $rc
