#!/usr/bin/env bash
# oneDNN convolution (DNNL=1 builds, issue 24) against Darknet's im2col +
# gemm (MN_DNNL=0, the same binary): one update from the same weights on the
# same images, on each base built here. oneDNN and mn_bn.c sum in another
# order, so the update (the weights' change, mn_wcmp FROM) differs by
# rounding only: within TOL. Measured: 2.2e-7 and 5.1e-7 on the nets without
# batch norm in training; 8.8e-6 and 1.15e-5 on cfg/fashion.cfg, the same
# with mn_bn.c summing all in double, so that is Darknet's float sums over
# 50176 values a channel (a wrong gradient moves it by 1e-2 or more;
# test_loops checks the formulas where a step shows them).
# The nets:
#  - cfg/fashion.cfg: batch norm, leaky, 3x3;
#  - shapes: a 1x1 and a 3x3 convolution whose input also feeds a route
#    (pjreddie's 1x1 backward writes the input gradient over the route's,
#    its 3x3 adds to it; the fork's writes over it at every size), stride 2
#    with 2 groups, 5x5 without padding, linear and logistic, and a 3x3 of
#    512 filters on 640 channels at 10x10, whose weight gradient is
#    mn_dnnl.c's sgemm over runs of 7 and 1 images; on the fork also
#    dilation 2.
# The startup line names oneDNN, and MN_DNNL=0's does not. Weights move
# both ways between stock Darknet and darknet-mn on oneDNN. test_loops: the
# engine's leaky and 2x2 maxpool loops give each base's own results, and its
# batch norm each base's to float rounding.
# Run by tests/run.sh (T, D, TEST_BIN, MPI set there), or alone after make.
. "$(dirname "$0")/../helpers/lib.sh"
suite_folder dnnl
TOL=${DNNL_TOL:-5e-5}

if ! ldd "$PROG" | grep -q libdnnl; then
    skip "oneDNN checks: this build has DNNL=0 (libdnnl-dev not installed)"
    finish
fi

# cfgs of the two nets, max_batches=M, deterministic batches.
nets() {   # nets DIR M EXTRA_SHAPES_KEY
    sed -e '/^\[distributed\]/,$d' -e "s/^max_batches=.*/max_batches=$2/" -e 's/^batch=.*/batch=16/' cfg/fashion.cfg > "$1/fashion.cfg"
    printf '[distributed]\ndeterministic=1\nshuffle=0\n' >> "$1/fashion.cfg"
    mn_cfg "$1/shapes.cfg" batch=8 max_batches="$2" policy=constant -burn_in -steps -scales \
        '[convolutional]' filters=8 \
        '[convolutional]' filters=8 size=1 pad=0 activation=linear \
        '[route]' layers=-1,-2 \
        '[convolutional]' filters=8 \
        '[route]' layers=-1,-2 \
        '[convolutional]' filters=16 stride=2 groups=2 activation=logistic ${3:+"$3"} \
        '[convolutional]' filters=8 size=5 pad=0 \
        '[convolutional]' filters=640 size=1 pad=0 activation=linear \
        '[convolutional]' filters=512 \
        '[convolutional]' filters=8 size=1 pad=0 activation=linear \
        '[maxpool]' '[connected]' '[softmax]' -- deterministic=1 shuffle=0
}
# train NAME PROG CFG MN_DNNL [WEIGHTS]: one run, backup folder $G/NAME.
train() {
    local name=$1 prog=$2 cfg=$3 v=$4 w=${5:-}
    mkdir -p "$G/$name"
    printf 'classes=10\ntrain=%s/train.list\nvalid=%s/test.list\nlabels=%s/labels.txt\nbackup=%s/%s\n' \
        "$D" "$D" "$D" "$G" "$name" > "$G/$name.data"
    MN_DNNL=$v timeout 120 $MPI -x MN_DNNL -n 1 "$prog" classifier train "$G/$name.data" "$cfg" $w \
        > "$G/$name.out" 2> "$G/$name.err"
}

check_base() {   # check_base LABEL PROG [EXTRA_SHAPES_KEY]
    local label=$1 prog=$2 B=$G/$1 net
    mkdir -p "$B/one" "$B/two"
    nets "$B/one" 1 "${3:-}"
    nets "$B/two" 2 "${3:-}"
    for net in fashion shapes; do
        train "$label-$net-start" "$prog" "$B/one/$net.cfg" 0
        local from=$G/$label-$net-start/${net}_final.weights
        train "$label-$net-gemm" "$prog" "$B/two/$net.cfg" 0 "$from"
        train "$label-$net-dnnl" "$prog" "$B/two/$net.cfg" 1 "$from"
        local a=$G/$label-$net-gemm/${net}_final.weights b=$G/$label-$net-dnnl/${net}_final.weights
        if [ ! -f "$a" ] || [ ! -f "$b" ]; then
            bad "$label $net: a run failed: $(cat "$G/$label-$net"-*.err | grep -m2 .)"; continue
        fi
        if "$TEST_BIN/mn_wcmp" "$a" "$b" "$TOL" "$from" > "$G/$label-$net.cmp" 2>&1; then
            ok "$label $net: one update, oneDNN against im2col+gemm: $(cat "$G/$label-$net.cmp") (tolerance $TOL)"
        else bad "$label $net: oneDNN's update is not im2col+gemm's: $(cat "$G/$label-$net.cmp") (tolerance $TOL)"; fi
    done
    local on off
    on=$(grep -o 'convolution oneDNN [^;]*' "$G/$label-shapes-dnnl.out")
    off=$(grep -c 'convolution oneDNN' "$G/$label-shapes-gemm.out")
    if [ "$on" = "convolution oneDNN $(dpkg-query -W -f='${Version}' libdnnl-dev | cut -d- -f1), 1 thread, 8 convolutional layers" ] &&
       [ "$off" = 0 ]; then ok "$label startup line: $on; none under MN_DNNL=0"
    else bad "$label startup line: '$on' (MN_DNNL=0: $off lines name oneDNN)"; fi
}

check_base pjreddie "$PROG"
AB=$BUILD/alexeyab-cpu/darknet_mn
if [ -x "$AB" ]; then check_base alexeyab "$AB" ${AB_EXTRA-dilation=2}
else skip "AlexeyAB's base: $AB is not built (make DARKNET=alexeyab)"; fi

# Weights stay Darknet's: stock pjreddie Darknet (unpatched, im2col + its own
# gemm) reads weights that darknet-mn trained on oneDNN, darknet-mn reads
# weights that stock trained, and the two predict the same top 5 for an
# image (percentages within 0.05: the engines' sums agree to about 1e-6).
STOCK=third_party/darknet-stock/darknet
same_top5() {   # same_top5 NAME WEIGHTS: stock's and darknet-mn's predict
    local img cfg=$G/stock.cfg
    img=$(head -1 "$D/test.list")
    "$STOCK" classifier predict "$G/stock.data" "$cfg" "$2" "$img" > "$G/$1-stock.top" 2> /dev/null
    $MPI -n 1 "$PROG" classifier predict "$G/stock.data" "$cfg" "$2" "$img" 2> /dev/null | grep '%: ' > "$G/$1-mn.top"
    if [ "$(wc -l < "$G/$1-stock.top")" = 5 ] && paste -d' ' "$G/$1-stock.top" "$G/$1-mn.top" |
        awk '{ a = $1 + 0; b = $3 + 0; if (a - b > 0.05 || b - a > 0.05) bad = 1
               # classes tied at the printed floor, 0.00%, may come in either order
               if ($2 != $4 && (a > 0.05 || b > 0.05)) bad = 1 } END { exit bad }'; then
        ok "$1: stock Darknet and darknet-mn predict the same top 5 ($(head -1 "$G/$1-mn.top") against $(head -1 "$G/$1-stock.top"))"
    else bad "$1: top 5 differ: $(paste -sd' ' "$G/$1-stock.top") against $(paste -sd' ' "$G/$1-mn.top")"; fi
}
if make -s "$STOCK" > "$G/stock-build.log" 2>&1; then
    sed -e '/^\[distributed\]/,$d' "$G/pjreddie/two/fashion.cfg" > "$G/stock.cfg"
    mkdir -p "$G/stock-train"
    printf 'classes=10\ntop=5\ntrain=%s/train.list\nvalid=%s/test.list\nlabels=%s/labels.txt\nbackup=%s/stock-train\n' \
        "$D" "$D" "$D" "$G" > "$G/stock.data"
    mnw=$G/pjreddie-fashion-dnnl/fashion_final.weights stw=$G/stock-train/stock.weights
    same_top5 "oneDNN-trained weights in stock Darknet" "$mnw"
    (cd "$G" && "$OLDPWD/$STOCK" classifier train stock.data stock.cfg > stock-train.out 2>&1)
    same_top5 "stock-trained weights in darknet-mn (oneDNN)" "$stw"
    # Each reads the other's file and writes it back (partial, every layer)
    # byte for byte after the 20-byte header, whose seen count partial resets.
    n=$(( $(grep -c '^\[' "$G/stock.cfg") - 1 ))
    "$STOCK" partial "$G/stock.cfg" "$mnw" "$G/by-stock.weights" "$n" > /dev/null 2>&1
    $MPI -n 1 "$PROG" partial "$G/stock.cfg" "$stw" "$G/by-mn.weights" "$n" > /dev/null 2>&1
    if cmp -s -i 20 "$mnw" "$G/by-stock.weights" && cmp -s -i 20 "$stw" "$G/by-mn.weights"; then
        ok "weights files: stock Darknet rewrites darknet-mn's, and darknet-mn stock's, byte for byte ($(stat -c %s "$mnw") bytes)"
    else bad "weights files differ once rewritten: $(cmp -i 20 "$mnw" "$G/by-stock.weights" 2>&1; cmp -i 20 "$stw" "$G/by-mn.weights" 2>&1)"; fi
else bad "stock Darknet did not build (see $G/stock-build.log)"; fi

# The engine's unrolled loops (plugin/engine/mn_loops.c) against each base's own.
unit_test loops-pjreddie 1 -- "$TEST_BIN/test_loops" "$G"
if [ -x "$AB" ] && make -s DARKNET=alexeyab "$BUILD/alexeyab-cpu/tests/test_loops" > "$G/loops-build.log" 2>&1; then
    unit_test loops-alexeyab 1 -- "$BUILD/alexeyab-cpu/tests/test_loops" "$G"
elif [ -x "$AB" ]; then bad "test_loops for AlexeyAB's base did not build (see $G/loops-build.log)"; fi

finish
