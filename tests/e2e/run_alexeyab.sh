#!/usr/bin/env bash
# AlexeyAB's Darknet as the base (make DARKNET=alexeyab): builds it (the
# snapshot in ../shared/third_party or ALEXEYAB_SRC), then N x b against
# 1 x N*b training equivalence on 1-4 ranks through every CPU communicator,
# and with sync_bn; the replica check and nonfinite=skip; bn_average; a
# YOLOv4-tiny-style cfg (cfg/yolov4-tiny-fashion.cfg) trained on 2 ranks
# (sync_bn, bn_average, checkpoints and resume, watchdog; seen counts global
# images), whose weights the fork's own
# ./darknet loads and evaluates: its `detector map` finds the same number of
# detections as darknet-mn's and an mAP within 10% (+0.0005); float16 with double
# buffering; the refusal of a layer darknet-mn cannot average; the cfg check
# takes every cfg of the fork; the detection rows of run_input.sh; the
# plugin's calls go one way in this build too (tests/static/layers.py), and nothing
# outside base/ reads the network or its layers or calls Darknet (tests/static/boundary.py). Skipped (said as a skip)
# when neither source is here.
# Run by tests/run.sh (env T, MPI, BUILD), or alone from the repository root.
. "$(dirname "$0")/../helpers/lib.sh"
T=$T/alexeyab
rm -rf "$T" && mkdir -p "$T"

SNAPSHOT=${AB_SNAPSHOT:-../shared/third_party/darknet-alexeyab-59596d78.tar.xz}
if [ -z "${ALEXEYAB_SRC:-}" ] && [ ! -f "$SNAPSHOT" ]; then
    skip "AlexeyAB base: neither ALEXEYAB_SRC nor $SNAPSHOT is here"
    finish
fi
AB=$BUILD/alexeyab-cpu
TB=$AB/tests
DK=third_party/darknet-alexeyab-cpu
if make -s -j"$(nproc)" DARKNET=alexeyab "$AB/darknet_mn" "$TB/test_equiv" "$TB/test_syncbn" "$TB/test_replica" "$TB/test_bnavg" "$TB/test_cfg" \
        "$BUILD/tools/mn_fashion_det" > "$T/build.log" 2>&1; then
    ok "make DARKNET=alexeyab builds $AB/darknet_mn and the fork's own $DK/darknet"
else
    bad "make DARKNET=alexeyab (see $T/build.log)"; tail -5 "$T/build.log"; finish
fi
# Each base reads its own clone variable: pjreddie's DARKNET_SRC (kept in
# ~/.bashrc, as the cluster page has it) and hank-ai's do not reach this
# build; where neither the snapshot nor ALEXEYAB_SRC is here, one line says
# where the source comes from.
make -s DARKNET=alexeyab DARKNET_SRC=/nonexistent HANKAI_SRC=/nonexistent "$AB/darknet_mn" > "$T/othersrc.log" 2>&1
rc=$?
# (One job, so make stops at the missing source before it records the tree's
# settings, which would unpack the fork anew at the next build.)
env -u MAKEFLAGS make -s -j1 DARKNET=alexeyab AB_SNAPSHOT=/nonexistent.tar.xz BUILD="$T/none" PROG="$T/none/darknet_mn" "$T/none/darknet_mn" > "$T/nosrc.log" 2>&1
rc2=$?
if [ $rc = 0 ] && [ $rc2 != 0 ] && ! grep -q nonexistent "$T/othersrc.log" &&
   grep -q "^darknet-mn: AlexeyAB's Darknet source is not here (/nonexistent.tar.xz): git clone https://github.com/AlexeyAB/darknet <dir>; git -C <dir> checkout 59596d7880f6504768df41d6daa586f5cb2b932f; then make DARKNET=alexeyab ALEXEYAB_SRC=<dir>" "$T/nosrc.log"; then
    ok "make DARKNET=alexeyab with DARKNET_SRC and HANKAI_SRC set elsewhere: built; without its source: $(head -c 80 "$T/nosrc.log")..."
else bad "the bases' source variables: with the others' set, status $rc ($(head -2 "$T/othersrc.log")); without a source, status $rc2: $(head -2 "$T/nosrc.log")"; fi
if python3 tests/static/layers.py "$(make -s --no-print-directory print-layers)" "$AB/libdarknet_mn.a" > "$T/layers.out" 2>&1; then cat "$T/layers.out"
else sed 's/^/     /' "$T/layers.out" | cut -c1-600; bad "layers: $AB/libdarknet_mn.a (tests/static/layers.py)"; fi
if python3 tests/static/boundary.py "$(make -s --no-print-directory print-layers)" main.c \
        --link $(make -s --no-print-directory BUILD="$BUILD" DARKNET=alexeyab print-link) > "$T/boundary.out" 2>&1; then
    while read -r line; do ok "alexeyab: ${line#ok   }"; done < "$T/boundary.out"
else sed 's/^/     /' "$T/boundary.out" | head -20 | cut -c1-300; bad "boundary: network or layer reads or Darknet calls outside base/ (tests/static/boundary.py)"; fi

# The classifier's Fashion-MNIST slice: tests/run.sh's, or one of our own when run alone.
[ -n "$D_GIVEN" ] || { make -s "$BUILD/tools/mn_fashion" > /dev/null && fashion_slice "$T/fashion" 512 200 "$T/fashion.log"; }

# unit_test NAME NP ENV... -- CMD... (tests/helpers/lib.sh), named "alexeyab NAME".
SUITE_LABEL=alexeyab

# The cfg check takes every cfg of the fork (mish, [sam], route groups, ...)
# and ours, but for its ResNets: written for pjreddie's shortcut (which
# resamples), they add layers of two sizes, which the fork's parser asserts
# against; refused with the layer and both sizes instead.
PJ_STYLE='/(resnet50|resnet101|resnet152|resnext152-32x4d)\.cfg$'
# cspx-p7-mish.cfg lists 20 anchor pairs for num=16 and masks up to 19:
# refused (Darknet copies every anchor into room for num pairs).
unit_test fork-cfgs-accepted 2 -- "$TB/test_cfg" $(ls "$DK"/cfg/*.cfg | grep -Ev "$PJ_STYLE|/cspx-p7-mish\.cfg$") cfg/*.cfg
if ! timeout 60 $MPI -n 2 "$TB/test_cfg" "$DK/cfg/cspx-p7-mish.cfg" > "$T/anchors.log" 2>&1 &&
   grep -aq "cspx-p7-mish.cfg:[0-9]*: \[yolo\] anchors= lists 20 pairs, more than num=16" "$T/anchors.log"; then
    ok "alexeyab cspx-p7-mish.cfg refused: $(grep -ao '\[yolo\] anchors=.*' "$T/anchors.log" | head -1)"
else bad "alexeyab cspx-p7-mish.cfg: not refused for its anchors: $(head -2 "$T/anchors.log")"; fi
for c in $(ls "$DK"/cfg/*.cfg | grep -E "$PJ_STYLE"); do
    if ! timeout 60 $MPI -n 2 "$TB/test_cfg" "$c" > "$T/pjstyle.log" 2>&1 &&
       grep -aq "$c:[0-9]*: layer 17 (\[shortcut\]) takes layer 16, 32x32, and layer 13, 64x64: AlexeyAB's Darknet adds only layers of one size" "$T/pjstyle.log"; then
        ok "alexeyab $(basename "$c") refused: $(grep -ao 'layer 17.*' "$T/pjstyle.log" | head -1)"
    else bad "alexeyab $(basename "$c"): not refused with the shortcut's sizes: $(head -2 "$T/pjstyle.log")"; fi
done

bench_step alexeyab "$AB/darknet_mn"

# Equivalence: every CPU communicator, on the node layouts it takes.
eq() {   # eq COMM NP [RANKS_PER_NODE]
    local d=$T/eq-$1-$2-${3:-real}
    mkdir -p "$d"
    if [ -n "${3:-}" ]; then unit_test "equiv-$1-np$2-${3}pernode" "$2" MN_RANKS_PER_NODE=$3 -- "$TB/test_equiv" "$1" 2 "$d"
    else unit_test "equiv-$1-np$2" "$2" -- "$TB/test_equiv" "$1" 2 "$d"; fi
}
for n in 1 2 3 4; do eq naive $n; eq flat $n; eq single_node $n; done
eq hierarchical 2 1; eq hierarchical 3 2; eq hierarchical 4 2
eq two_dimensional 2 1; eq two_dimensional 4 2
for n in 1 2 3 4; do mkdir -p "$T/sbn-$n" && unit_test "syncbn-np$n" $n -- "$TB/test_syncbn" 1 2 "$T/sbn-$n"; done
mkdir -p "$T/sbn-off" && unit_test "syncbn-off-np2" 2 -- "$TB/test_syncbn" 0 2 "$T/sbn-off"
for n in 1 2 3; do mkdir -p "$T/rep-$n" && unit_test "replica-np$n" $n -- "$TB/test_replica" "$T/rep-$n"; done
mkdir -p "$T/bnavg" && unit_test "bnavg-np2" 2 -- "$TB/test_bnavg" "$T/bnavg"
limit_row "$TB/test_replica" "$T/limit"

# The detection set in the fork's layout (tests/helpers/lib.sh).
fork_det_data || { bad "make fashion-det-data (see $T/det-data.log)"; finish; }

# YOLOv4-tiny-style, 2 ranks, 60 iterations of 8 images a rank, deterministic
# data (the same weights on every run), at half the full rate from the start.
fork_y4_cfg "$T/y4.cfg"
printf '\n[distributed]\ndeterministic=1\nsync_bn=1\nbn_average=1\ncheckpoint_interval=30\ncollective_timeout=60\n' >> "$T/y4.cfg"
W=$T/backup/y4_final.weights
if timeout 300 $MPI -n 2 "$AB/darknet_mn" detector train "$T/y4.data" "$T/y4.cfg" > "$T/y4-train.log" 2>&1 && [ -f "$W" ] &&
   grep -q '^60: loss' "$T/y4-train.log"; then
    ok "alexeyab yolov4-tiny-fashion on 2 ranks: $(grep -a '^60: loss' "$T/y4-train.log" | cut -d, -f1-2)"
else bad "alexeyab yolov4-tiny-fashion training (see $T/y4-train.log)"; tail -3 "$T/y4-train.log"; fi
# Batch-norm biases train on the fork's CPU path (patches/alexeyab/0010):
# layer 0's 8 start at 0, and stayed there without the patch.
b0=$(python3 -c "
import struct, sys
d = open(sys.argv[1], 'rb').read(); major, minor = struct.unpack('<2i', d[:8])
o = 12 + (8 if major * 10 + minor >= 2 else 4)
print(sum(1 for v in struct.unpack('<8f', d[o:o + 32]) if v != 0))" "$W" 2>&1)
[ "$b0" = 8 ] && ok "alexeyab: the batch-norm biases of layer 0 trained (8 of 8 moved from 0)" ||
    bad "alexeyab: $b0 of layer 0's 8 batch-norm biases moved from 0"
# The same detections; the mAP within 10% plus 0.0005: darknet-mn takes VOC's
# AP on the VOC files' clipped pixel boxes, the fork on unclipped relative
# ones (seen 1-5% apart on larger models). This one trains the same on
# every run, here and in CI's fresh root, but after 60 iterations its mAP is
# small: darknet-mn 0.0014 against the fork's 0.0012, 17% apart, which a
# relative bound alone refused.
timeout 300 $MPI -n 2 "$AB/darknet_mn" detector map "$T/y4.data" "$T/y4.cfg" "$W" > "$T/y4-map-mn.log" 2>&1
timeout 300 "$DK/darknet" detector map "$T/y4.data" "$T/y4.cfg" "$W" > "$T/y4-map-ab.log" 2>&1
mn_map=$(grep -ao 'mAP@0.50 [0-9.]*' "$T/y4-map-mn.log" | cut -d' ' -f2)
mn_det=$(grep -ao '[0-9]* detections' "$T/y4-map-mn.log" | cut -d' ' -f1)
ab_map=$(grep -ao 'mean average precision (mAP@0.50) = [0-9.]*' "$T/y4-map-ab.log" | awk '{print $NF}')
ab_det=$(grep -ao 'detections_count = [0-9]*' "$T/y4-map-ab.log" | awk '{print $NF}')
if [ -n "$mn_map" ] && [ -n "$ab_map" ] && [ "$mn_det" = "$ab_det" ] &&
   awk -v a="$mn_map" -v b="$ab_map" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && b > 0 && d <= 0.1 * b + 0.0005) }'; then
    ok "alexeyab detector map: darknet-mn $mn_map ($mn_det detections), the fork's ./darknet $ab_map ($ab_det detections)"
else bad "alexeyab detector map: darknet-mn '$mn_map' ($mn_det detections) vs the fork's '$ab_map' ($ab_det)"; fi

# seen in the weights header counts the global images (the fork derives it
# from cur_iteration when it saves: 60 x 8 x 2 = 960); a longer max_batches
# resumes from the checkpoint of iteration 60 and ends at 64 x 16 = 1024.
s60=$(seen_of "$W")
sed -i 's/^max_batches=.*/max_batches=64/' "$T/y4.cfg"
if [ "$s60" = 960 ] && timeout 120 $MPI -n 2 "$AB/darknet_mn" detector train "$T/y4.data" "$T/y4.cfg" > "$T/y4-resume.log" 2>&1 &&
   grep -aq "resuming from checkpoint $T/backup/y4.ckpt-60: iteration 60" "$T/y4-resume.log" && grep -aq '^64: loss' "$T/y4-resume.log" &&
   [ "$(seen_of "$W")" = 1024 ]; then
    ok "alexeyab seen 960 after 60 iterations of 2 x 8 images; resumed from checkpoint 60 to 64, seen $(seen_of "$W")"
else bad "alexeyab seen $s60 (want 960), resume (see $T/y4-resume.log), seen $(seen_of "$W") (want 1024)"; fi

# float16 gradients with double buffering (2 fresh iterations, then stale)
# and the hierarchical communicator on 2 forced nodes: trains, and the
# replica check at the end passes.
sed 's/^max_batches=.*/max_batches=6/' cfg/yolov4-tiny-fashion.cfg > "$T/y4h.cfg"
printf '\n[distributed]\ncommunicator=hierarchical\nallreduce_grad_dtype=float16\ndouble_buffering=1\ndouble_buffering_fresh=2\n' >> "$T/y4h.cfg"
if timeout 120 $MPI -x MN_RANKS_PER_NODE=1 -n 2 "$AB/darknet_mn" detector train "$T/y4.data" "$T/y4h.cfg" > "$T/y4h.log" 2>&1 &&
   grep -q '^6: loss' "$T/y4h.log" && [ -f "$T/backup/y4h_final.weights" ]; then
    ok "alexeyab float16 + double buffering + hierarchical on 2 nodes: $(grep -a '^6: loss' "$T/y4h.log" | cut -d, -f1)"
else bad "alexeyab float16 + double buffering (see $T/y4h.log)"; tail -3 "$T/y4h.log"; fi

# overlap=1 on this base: from the same weights, deterministic batches, 3
# ranks and 64 KiB pieces, bit for bit the blocking run (patch 0004 calls the
# hook from the fork's backward_network).
for v in blk ov; do
    sed -e 's/^max_batches=.*/max_batches=4/' -e 's/^batch=.*/batch=2/' -e 's/^subdivisions=.*/subdivisions=1/' cfg/yolov4-tiny-fashion.cfg > "$T/y4$v.cfg"
    printf '\n[distributed]\ndeterministic=1\nshuffle=0\n' >> "$T/y4$v.cfg"
    [ $v = ov ] && printf 'overlap=1\nbucket_mb=0.1\ntimeline=%s\n' "$T/y4ov.json" >> "$T/y4$v.cfg"
    timeout 120 $MPI -x MN_PIECE_BYTES=65536 -n 3 "$AB/darknet_mn" detector train "$T/y4.data" "$T/y4$v.cfg" "$W" -clear > "$T/y4$v.log" 2>&1
done
# backward events come from the hook alone: the fork called it
if grep -aq "overlap=1: [0-9]* buckets" "$T/y4ov.log" && grep -q '"name":"backward"' "$T/y4ov.json" &&
   "$TEST_BIN/mn_wcmp" "$T/backup/y4ov_final.weights" "$T/backup/y4blk_final.weights" 0 > "$T/y4ov.cmp"; then
    ok "alexeyab overlap=1 = blocking, bit for bit, 3 ranks from the same weights ($(grep -ao '[0-9]* buckets' "$T/y4ov.log"); $(cat "$T/y4ov.cmp"))"
else bad "alexeyab overlap=1 vs blocking: $(cat "$T/y4ov.cmp" 2> /dev/null) (see $T/y4ov.log)"; fi

# classifier train on this base, in the default (random-sampling) loader
# mode and the deterministic one, 1 and 2 ranks: the fork's crop range is
# min_crop/max_crop (it has no min_ratio), which the adapter must pass on;
# reading pjreddie's ratios gave crop scale 0, NaN images at iteration 1 and
# a heap corrupted by maxpool's backward.
printf 'classes=10\ntrain=%s\nvalid=%s\nlabels=%s\nbackup=%s\ntop=2\n' "$D/train.list" "$D/test.list" "$D/labels.txt" "$T/backup" > "$T/cls.data"
for mode in default deterministic; do
    for n in 1 2; do
        sed 's/^max_batches=.*/max_batches=8/; s/^batch=.*/batch=16/' cfg/fashion.cfg > "$T/cls-$mode-$n.cfg"
        [ $mode = deterministic ] && sed -i 's/^\[distributed\]/[distributed]\ndeterministic=1/' "$T/cls-$mode-$n.cfg"
        if timeout 120 $MPI -n $n "$AB/darknet_mn" classifier train "$T/cls.data" "$T/cls-$mode-$n.cfg" > "$T/cls-$mode-$n.log" 2>&1 &&
           grep -aq '^8: loss [0-9]' "$T/cls-$mode-$n.log" && [ -f "$T/backup/cls-$mode-${n}_final.weights" ]; then
            ok "alexeyab classifier train, $mode data, $n rank(s): $(grep -a '^8: loss' "$T/cls-$mode-$n.log" | cut -d, -f1)"
        else bad "alexeyab classifier train, $mode data, $n rank(s) (see $T/cls-$mode-$n.log)"; grep -a 'darknet-mn: rank\|corruption' "$T/cls-$mode-$n.log" | head -3; fi
    done
done
# Batch norm resumed on fewer ranks (tests/helpers/lib.sh): the tiny classifier
# with batch norm, cut at 10 on 4 ranks, resumed on 2 to 40.
mn_cfg "$T/shrink.cfg" learning_rate=0.01 -burn_in -policy -steps -scales max_batches=40 \
    -- deterministic=1 shuffle=0 checkpoint_interval=10
sed -i 's/^\[convolutional\]/[convolutional]\nbatch_normalize=1/' "$T/shrink.cfg"
PROG=$AB/darknet_mn shrink_bn_row ab classifier "$T/cls.data" "$T/shrink.cfg" 10 40
# NaN input cannot corrupt memory (patches/alexeyab/0006): min_crop=0 makes
# every image NaN; the job stops at the loss check and valgrind sees no
# write outside a buffer (the fork's maxpool wrote delta[-1] before).
if command -v valgrind > /dev/null; then
    sed 's/^min_crop=.*/min_crop=0/; s/^max_crop=.*/max_crop=0/; s/^max_batches=.*/max_batches=2/; s/^batch=.*/batch=8/' cfg/fashion.cfg > "$T/nan.cfg"
    timeout 120 $MPI -n 1 valgrind -q --error-limit=no "$AB/darknet_mn" classifier train "$T/cls.data" "$T/nan.cfg" > "$T/nan.log" 2>&1
    rc=$?
    if [ $rc = $EX_USER ] && grep -aq "iteration 1: the loss or the averaged gradient is NaN or Inf" "$T/nan.log" && ! grep -aq "Invalid write" "$T/nan.log"; then
        ok "alexeyab NaN images: stopped at the loss check, exit $rc, valgrind: no invalid write"
    else bad "alexeyab NaN images: exit $rc, $(grep -ac 'Invalid write' "$T/nan.log") invalid writes (see $T/nan.log)"; fi
else bad "valgrind not installed: the NaN-input memory check did not run"; fi

# A weighted shortcut: refused before training, naming the cfg, the layer and its kind, on every rank.
printf '[net]\nbatch=2\nwidth=32\nheight=32\nchannels=3\nmax_batches=2\n\n[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=leaky\n\n[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=leaky\n\n[shortcut]\nfrom=-2\nweights_type=per_feature\nweights_normalization=softmax\nactivation=linear\n\n[convolutional]\nfilters=45\nsize=1\nactivation=linear\n\n[yolo]\nmask=0,1,2\nanchors=18,36, 37,18, 29,45\nclasses=10\nnum=3\n' > "$T/wsc.cfg"
on_ranks "$T/wsc" 60 2 -- "$AB/darknet_mn" detector train "$T/y4.data" "$T/wsc.cfg"
if [ "$(cat "$T/wsc.rc.0" 2>/dev/null)" != 0 ] && [ "$(cat "$T/wsc.rc.1" 2>/dev/null)" != 0 ] && [ -f "$T/wsc.rc.1" ] &&
   grep -aq "$T/wsc.cfg: layer 2 is a shortcut layer with weights_type (weighted shortcut), which darknet-mn cannot average across ranks (AlexeyAB's Darknet)" "$T/wsc.err.0"; then
    ok "alexeyab weighted shortcut refused: $(grep -a 'cannot average' "$T/wsc.err.0" | head -1)"
else bad "alexeyab weighted shortcut: exit $(rcs "$T/wsc" 2); $(grep -av '^ \|^$' "$T"/wsc.err.0 | tail -2)"; fi

# The detection rows of the bad-input matrix (issue 25) on this base, its
# label files beside the images: every bad label line, class count and image.
if DARKNET=alexeyab PROG="$AB/darknet_mn" T="$T" BUILD="$BUILD" MPI="$MPI" bash tests/e2e/run_input.sh 'det-*' > "$T/input.log" 2>&1; then
    ok "alexeyab: the bad-input matrix's detection rows ($(grep -c '^ok' "$T/input.log") ok)"
else bad "alexeyab: the bad-input matrix's detection rows: $(grep -a '^FAIL' "$T/input.log" | head -3)"; fi

finish
