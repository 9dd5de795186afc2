#!/usr/bin/env bash
# oneDNN on hank-ai's base (make DARKNET=hankai, DNNL=1 as on the other
# bases: the adapter gives the layers the engine takes its own forward and
# backward, convolution on plugin/engine/mn_dnnl.c, batch norm with leaky or
# linear on mn_bn.c, 2x2 maxpool on mn_loops.c)
# against the fork's own im2col + gemm (MN_DNNL=0, the same binary), as
# tests/e2e/run_dnnl.sh does on the C bases:
#  - info names oneDNN, and MN_DNNL=0's the fork's path;
#  - one update from the same weights on the same images, on two detectors:
#    yolov4-tiny-fashion (batch norm, leaky, stride 2, 1x1, the route that
#    takes half the channels: groups=2 group_id=1) and a shapes net
#    (grouped, dilated, 5x5 unpadded, linear and logistic convolutions, a
#    route feeding a 3x3 and a 1x1 convolution, a 2x2 maxpool, and a 3x3
#    of 512 filters on 640 channels at 14x14 whose weight gradient is
#    mn_dnnl.c's sgemm over runs of 3 images). The
#    updates differ by the convolution's and batch norm's float rounding
#    only: within TOL, and not equal (the engine ran); the startup line
#    counts the engine's convolutional and maxpool layers;
#  - 2 ranks x 2 = 1 x 4 with the engine on the shapes net, also in
#    subdivisions, within run_hankai.sh's 1e-5.
# Measured (2-core VMs): the update within 3.2e-7 (shapes) of gemm's, hence
# TOL 1e-5; yolov4-tiny-fashion's within 8.3e-7 on one VM and 2.68e-5 on an
# AMD EPYC one (AVX2): oneDNN and OpenBLAS choose their kernels by the CPU,
# and batch norm over 8 images amplifies the rounding, as on the C bases'
# fashion.cfg (run_dnnl.sh: 1.15e-5), hence TOL_Y4 1e-4;
# the input gradient added to a route's instead of written over it, as the
# fork's col2im does, moved it by 0.56 and 0.2. N x b: 1.8e-7 and 1.5e-7.
# Run by make test-hankai (env BUILD), or alone from the repository root
# after make DARKNET=hankai.
. "$(dirname "$0")/../helpers/lib.sh"
T=$T/hankai-dnnl
rm -rf "$T" && mkdir -p "$T"
P=$BUILD/hankai-cpu/darknet_mn
PROG=$P
TOL=${HANKAI_DNNL_TOL:-1e-5}
TOL_Y4=${HANKAI_DNNL_TOL_Y4:-1e-4}
if make -s -j2 DARKNET=hankai "$P" > "$T/build.log" 2>&1 && make -s "$TEST_BIN/mn_wcmp" >> "$T/build.log" 2>&1; then
    ok "make DARKNET=hankai builds $P"
else
    bad "make DARKNET=hankai (see $T/build.log)"; tail -5 "$T/build.log"; finish
fi
if ! ldd "$P" | grep -q libdnnl; then bad "hankai: $P does not link oneDNN (libdnnl-dev missing, or DNNL=0)"; finish; fi
fork_det_data || { bad "make fashion-det-data (see $T/det-data.log)"; finish; }
V=$(dpkg-query -W -f='${Version}' libdnnl-dev | cut -d- -f1)

# info: the engine line, with and without MN_DNNL=0.
on=$($MPI -n 1 "$P" info 2>&1 | grep '^engine:')
off=$(MN_DNNL=0 $MPI -x MN_DNNL -n 1 "$P" info 2>&1 | grep '^engine:')
if [ "$on" = "engine: convolution oneDNN $V, gemm OpenBLAS sgemm" ] &&
   [ "$off" = "engine: convolution Darknet's im2col + gemm (oneDNN built in, off: MN_DNNL=0), gemm OpenBLAS sgemm" ]; then
    ok "hankai info: '$on'; under MN_DNNL=0 '$off'"
else bad "hankai info: '$on'; under MN_DNNL=0 '$off'"; fi

# The two nets, max_batches=M, batch B, deterministic batches in list order.
nets() {   # nets DIR M B
    fork_y4_cfg "$1/y4.cfg"
    sed -i -e "s/^max_batches=.*/max_batches=$2/" -e "s/^batch=.*/batch=$3/" "$1/y4.cfg"
    printf '\n[distributed]\ndeterministic=1\nshuffle=0\n' >> "$1/y4.cfg"
    mn_cfg "$1/shapes.cfg" detector width=64 height=64 batch="$3" max_batches="$2" burn_in=0 learning_rate=0.01 \
        '[convolutional]' batch_normalize=1 filters=16 \
        '[convolutional]' batch_normalize=1 filters=8 size=1 pad=0 activation=linear \
        '[route]' layers=-1,-2 \
        '[convolutional]' batch_normalize=1 filters=8 \
        '[route]' layers=-1,-2 \
        '[convolutional]' batch_normalize=1 filters=16 stride=2 groups=2 activation=logistic \
        '[convolutional]' batch_normalize=1 filters=16 dilation=2 \
        '[convolutional]' filters=16 size=5 pad=0 \
        '[maxpool]' \
        '[convolutional]' filters=640 size=1 pad=0 activation=linear \
        '[convolutional]' filters=512 \
        '[convolutional]' size=1 pad=0 filters=45 activation=linear \
        '[yolo]' classes=10 -- deterministic=1 shuffle=0
}
conv_layers() { grep -c '^\[convolutional\]' "$1"; }
# pool_layers CFG: its [maxpool] sections with size=2 and stride=2 (every
# input here is even, so the engine takes each).
pool_layers() { awk 'function end() { if (p && s == 2 && t == 2) n++; p = 0 }
                    /^\[/ { end() } /^\[maxpool\]/ { p = 1; s = 0; t = 0 } /^size=/ { s = $0; sub(/.*=/, "", s) }
                    /^stride=/ { t = $0; sub(/.*=/, "", t) } END { end(); print n + 0 }' "$1"; }
# train NAME CFG MN_DNNL NP [WEIGHTS]: one run, backup folder $T/NAME.
train() {
    local name=$1 cfg=$2 v=$3 np=$4 w=${5:-}
    mkdir -p "$T/$name"
    sed "s|^backup=.*|backup=$T/$name|" "$T/y4.data" > "$T/$name.data"
    MN_DNNL=$v timeout 180 $MPI -x MN_DNNL -n "$np" "$P" detector train "$T/$name.data" "$cfg" $w > "$T/$name.log" 2>&1
}

# One update from the same weights: both paths from iteration 1 to 2.
mkdir -p "$T/one" "$T/two"
nets "$T/one" 1 8
nets "$T/two" 2 8
for net in y4 shapes; do
    train "$net-start" "$T/one/$net.cfg" 0 1
    from=$T/$net-start/${net}_final.weights
    train "$net-gemm" "$T/two/$net.cfg" 0 1 "$from"
    train "$net-dnnl" "$T/two/$net.cfg" 1 1 "$from"
    a=$T/$net-gemm/${net}_final.weights b=$T/$net-dnnl/${net}_final.weights tol=$TOL
    [ "$net" = y4 ] && tol=$TOL_Y4
    if [ ! -f "$from" ] || [ ! -f "$a" ] || [ ! -f "$b" ]; then
        bad "hankai $net: a run failed: $(grep -ahm2 'error\|darknet-mn: rank' "$T/$net"-*.log)"; continue
    fi
    if "$TEST_BIN/mn_wcmp" "$a" "$b" "$tol" "$from" > "$T/$net.cmp" 2>&1 && ! "$TEST_BIN/mn_wcmp" "$a" "$b" 0 > /dev/null 2>&1; then
        ok "hankai $net: one update, oneDNN against the fork's im2col+gemm: $(cat "$T/$net.cmp") (tolerance $tol; not equal)"
    else bad "hankai $net: oneDNN's update is not the fork's: $(cat "$T/$net.cmp") (tolerance $tol, and not equal)"; fi
    pools=$(pool_layers "$T/two/$net.cfg")
    want="convolution oneDNN $V, 1 thread, $(conv_layers "$T/two/$net.cfg") convolutional layers; 2x2 maxpool unrolled on $pools layer$([ "$pools" = 1 ] || echo s)"
    got=$(grep -ao 'convolution oneDNN [^;]*; 2x2 maxpool unrolled on [0-9]* layers*' "$T/$net-dnnl.log")
    if [ "$got" = "$want" ] && ! grep -aq 'convolution oneDNN' "$T/$net-gemm.log"; then ok "hankai $net startup line: $got; none under MN_DNNL=0"
    else bad "hankai $net startup line: '$got', want '$want' (MN_DNNL=0: $(grep -ac 'convolution oneDNN' "$T/$net-gemm.log") lines name oneDNN)"; fi
done

# N ranks x b = 1 x N*b with the engine, 3 updates, on the shapes net
# without batch norm (with it the fork's statistics sums round apart by
# 1.3e-5 on its own path too; run_hankai.sh's sync_bn rows, on the engine
# now, cover it): each image is its own oneDNN call, so its sums do not
# depend on the batch it is in.
mkdir -p "$T/eq"
nets "$T/eq" 3 4
sed -i '/^batch_normalize=/d' "$T/eq/shapes.cfg"
sed 's/^batch=.*/batch=2/' "$T/eq/shapes.cfg" > "$T/eq/np2.cfg"
echo communicator=flat >> "$T/eq/np2.cfg"
sed 's/^subdivisions=.*/subdivisions=2/' "$T/eq/np2.cfg" > "$T/eq/np2sub.cfg"
sed 's/^subdivisions=.*/subdivisions=2/' "$T/eq/shapes.cfg" > "$T/eq/sub.cfg"
eq_check() {   # eq_check NAME REFERENCE WHAT: $T/NAME's weights against $T/REFERENCE's
    local w=$T/$1/${1#eq-}_final.weights r=$T/$2/${2#eq-}_final.weights
    if [ -f "$w" ] && [ -f "$r" ] && "$TEST_BIN/mn_wcmp" "$r" "$w" 1e-5 > "$T/$1.cmp" 2>&1 && [ "$(seen_of "$w")" = "$(seen_of "$r")" ] &&
       grep -aq 'convolution oneDNN' "$T/$1.log" && grep -aq 'convolution oneDNN' "$T/$2.log"; then
        ok "hankai equivalence on oneDNN: $3 ($(cat "$T/$1.cmp"))"
    else bad "hankai equivalence on oneDNN: $3: $(cat "$T/$1.cmp" 2> /dev/null) (see $T/$1.log)"; fi
}
train eq-shapes "$T/eq/shapes.cfg" 1 1
train eq-np2 "$T/eq/np2.cfg" 1 2
train eq-sub "$T/eq/sub.cfg" 1 1
train eq-np2sub "$T/eq/np2sub.cfg" 1 2
eq_check eq-np2 eq-shapes "2 x 2 = 1 x 4"
eq_check eq-np2sub eq-sub "2 x 2 in subdivisions of 2 = 1 x 4 in subdivisions of 2"

finish
