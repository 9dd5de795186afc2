#!/usr/bin/env bash
# darknet-mn on hank-ai's Darknet V5 (make DARKNET=hankai; docs/hankai.md),
# after tests/e2e/run_hankai_build.sh built and checked the fork: N x b against
# 1 x N*b training equivalence of detector train through the CPU
# communicators (weights to float rounding, seen equal), with subdivisions,
# hierarchical and two_dimensional on forced nodes, double_buffering=1;
# float16 gradients near float32's; overlap=1 and a checkpoint resumed equal
# to the blocking, uninterrupted run bit for bit; with batch norm, sync_bn=1
# equal (patch 0006), sync_bn=0 not; classifier training refused;
# rank-0-only output; a bad key, a missing file
# and a fatal error of the fork's parser end every rank non-zero with one
# message; a rank killed or stalled ends the job within collective_timeout,
# naming it, no weights written; the tutorial's -dont_show -map -log,
# -clear and the -gpus refusal; each rank reads its own half of the list; yolov4-tiny-fashion trained 60 iterations on 2 ranks: the fork's
# own CLI reads its weights (detector map: the detection count and each
# class's AP to a measured bound; detector test: the same objects), detector
# map on 2 ranks = 1 rank, and darknet-mn resumes the fork's weights;
# tests/static/layers.py and tests/static/boundary.py (--link against the fork's
# libdarknet.a) on this build. Its convolutions run on oneDNN, the build's
# default (tests/e2e/run_hankai_dnnl.sh checks the engine against the fork's
# path); the bounds held unchanged with it.
# Run by make test-hankai (env BUILD), or alone from the repository root.
. "$(dirname "$0")/../helpers/lib.sh"
T=$T/hankai
rm -rf "$T" && mkdir -p "$T"
HK=$BUILD/hankai-cpu
P=$HK/darknet_mn
PROG=$P   # for mn (lib.sh): this build, not ./darknet_mn
DK=third_party/darknet-hankai-cpu
if make -s -j2 DARKNET=hankai "$P" > "$T/build.log" 2>&1 && make -s "$TEST_BIN/mn_wcmp" "$TEST_BIN/mn_shapes" >> "$T/build.log" 2>&1; then
    ok "make DARKNET=hankai builds $P"
else
    bad "make DARKNET=hankai (see $T/build.log)"; tail -5 "$T/build.log"; finish
fi
fork_det_data || { bad "make fashion-det-data (see $T/det-data.log)"; finish; }

# Equivalence: a tiny detector (128x128, 10 classes), deterministic data in
# list order, 3 updates from the seed's weights: 2 ranks at batch 2 (and
# 1 x 4 with subdivisions 2) against 1 rank at batch 4.
mn_cfg "$T/e.cfg" detector width=128 height=128 batch=4 max_batches=3 learning_rate=0.001 burn_in=0 \
    '[convolutional]' '[maxpool]' '[convolutional]' filters=16 '[maxpool]' \
    '[convolutional]' size=1 filters=45 activation=linear '[yolo]' classes=10 -- deterministic=1 shuffle=0
eq_run() {   # [MAXB=K] eq_run NAME NP BATCH SUBDIVISIONS [DISTRIBUTED-LINE...]: trains $T/NAME.cfg (K updates, 3 by default)
    local name=$1 np=$2 b=$3 s=$4; shift 4
    sed -e "s/^batch=.*/batch=$b/" -e "s/^subdivisions=.*/subdivisions=$s/" -e "s/^max_batches=.*/max_batches=${MAXB:-3}/" \
        "${EQ_CFG:-$T/e.cfg}" > "$T/$name.cfg"
    printf '%s\n' "$@" >> "$T/$name.cfg"
    timeout 180 $MPI -n "$np" "$P" detector train "$T/y4.data" "$T/$name.cfg" > "$T/$name.log" 2>&1
}
eq_run ref 1 4 1
R=$T/backup/ref_final.weights
[ -f "$R" ] && ok "hankai 1 x 4 trained: $(grep -a '^3: loss' "$T/ref.log" | cut -d, -f1), seen $(seen_of "$R")" ||
    { bad "hankai 1 x 4 training (see $T/ref.log)"; tail -3 "$T/ref.log"; finish; }
eq_check() {   # eq_check NAME WHAT [REFERENCE]: against $R
    local w=$T/backup/$1_final.weights ref=${3:-1 x 4}
    if [ -f "$w" ] && "$TEST_BIN/mn_wcmp" "$R" "$w" 1e-5 > "$T/$1.cmp" 2>&1 && [ "$(seen_of "$w")" = "$(seen_of "$R")" ]; then
        ok "hankai equivalence: $2 = $ref ($(cat "$T/$1.cmp"))"
    else bad "hankai equivalence: $2 vs $ref: $(cat "$T/$1.cmp" 2> /dev/null) seen $(seen_of "$w" 2> /dev/null) (see $T/$1.log)"; fi
}
eq_run sub2 1 4 2; eq_check sub2 "1 x 4 in subdivisions of 2"
for comm in naive flat single_node; do
    eq_run "np2-$comm" 2 2 1 "communicator=$comm"; eq_check "np2-$comm" "2 x 2 through $comm"
done
eq_run np2sub 2 2 2 communicator=flat; eq_check np2sub "2 x 2 in subdivisions of 2 through flat"
eq_run np4 4 1 1 communicator=naive; eq_check np4 "4 x 1 through naive"
# Batch norm (the two 3x3 layers): with sync_bn=1, 2 x 2 normalizes over the
# 4 images of 1 x 4, to the bound the other bases use; with sync_bn=0 each
# rank's 2 images, which must differ measurably (else the check could not fail).
sed 's/^filters=\(8\|16\)$/&\nbatch_normalize=1/' "$T/e.cfg" > "$T/e-bn.cfg"
EQ_CFG=$T/e-bn.cfg
eq_run bn 1 4 1; eq_run bnsub 1 4 2
R=$T/backup/bn_final.weights
eq_run sbn 2 2 1 communicator=flat sync_bn=1; eq_check sbn "batch norm, sync_bn=1: 2 x 2"
R=$T/backup/bnsub_final.weights
eq_run sbnsub 2 2 2 communicator=flat sync_bn=1; eq_check sbnsub "batch norm, sync_bn=1: 2 x 2 in subdivisions of 2" "1 x 4 in subdivisions of 2"
eq_run nosbn 2 2 1 communicator=flat
"$TEST_BIN/mn_wcmp" "$T/backup/bn_final.weights" "$T/backup/nosbn_final.weights" 1e30 > "$T/nosbn.cmp" 2>&1
rel0=$(grep -o 'relative difference [0-9.e+-]*' "$T/nosbn.cmp" | cut -d' ' -f3)
if [ -n "$rel0" ] && awk "BEGIN{exit !($rel0 > 1e-4)}"; then ok "hankai batch norm, sync_bn=0: 2 x 2 differs from 1 x 4 (relative difference $rel0)"
else bad "hankai batch norm, sync_bn=0: 2 x 2 vs 1 x 4 relative difference '$rel0' (see $T/nosbn.log)"; fi
EQ_CFG=; R=$T/backup/ref_final.weights
# The two-level communicators on nodes forced by MN_RANKS_PER_NODE (as
# run_alexeyab.sh does; this host is one node): 2 nodes of 1 rank, and 2 of 2.
for comm in hierarchical two_dimensional; do
    MPI="$MPI -x MN_RANKS_PER_NODE=1" eq_run "np2-$comm" 2 2 1 "communicator=$comm"
    eq_check "np2-$comm" "2 x 2 through $comm on 2 nodes of 1"
    MPI="$MPI -x MN_RANKS_PER_NODE=2" eq_run "np4-$comm" 4 1 1 "communicator=$comm"
    eq_check "np4-$comm" "4 x 1 through $comm on 2 nodes of 2"
    for n in 2 4; do   # the split took: rank 0 names 2 nodes
        grep -aq "on $n ranks (2 nodes), communicator $comm" "$T/np$n-$comm.log" || bad "hankai $comm on $n ranks: not on 2 nodes (see $T/np$n-$comm.log)"
    done
done
# double_buffering=1 (ChainerMN's: double_buffering_local=0, double_buffering_handover=0): the first update applies nothing, each
# later one the previous step's mean (burn_in=0: no fresh steps). So 1 step
# with it keeps the seed's weights (W0, bit for bit), and 2 x 2 with it for 2
# steps = 1 x 4 without it for 1, on what training changed (mn_wcmp FROM):
# the weights barely move in a step, a check on them alone would pass anyway.
MAXB=1 eq_run db1 1 4 1 double_buffering=1 double_buffering_local=0 double_buffering_handover=0
MAXB=1 eq_run off1 1 4 1
MAXB=2 eq_run db2 2 2 1 communicator=flat double_buffering=1 double_buffering_local=0 double_buffering_handover=0
W0=$T/backup/db1_final.weights
if [ -f "$W0" ] && ! "$TEST_BIN/mn_wcmp" "$T/backup/off1_final.weights" "$W0" 0 > "$T/db0.cmp" 2>&1 &&
   "$TEST_BIN/mn_wcmp" "$T/backup/db2_final.weights" "$T/backup/off1_final.weights" 1e-5 "$W0" > "$T/db.cmp" 2>&1 &&
   grep -aq "double_buffering=1" "$T/db2.log"; then
    ok "hankai double_buffering: 2 x 2, 2 steps with it = 1 x 4, 1 step without it ($(cat "$T/db.cmp")); without it 1 step moves the weights"
else bad "hankai double_buffering: $(cat "$T/db.cmp" "$T/db0.cmp" 2> /dev/null) (see $T/db2.log)"; fi
# float16 gradients: near float32's 2 x 2 (the other bases' bound, 5%, here
# on what training changed), not equal to it.
eq_run np2-f16 2 2 1 communicator=flat allreduce_grad_dtype=float16
F16=$T/backup/np2-f16_final.weights F32=$T/backup/np2-flat_final.weights
if [ -f "$F16" ] && "$TEST_BIN/mn_wcmp" "$F16" "$F32" 0.05 "$W0" > "$T/f16.cmp" 2>&1 && ! "$TEST_BIN/mn_wcmp" "$F16" "$F32" 0 > /dev/null 2>&1; then
    ok "hankai allreduce_grad_dtype=float16: 2 x 2 near float32's, not equal ($(cat "$T/f16.cmp"))"
else bad "hankai float16: $(cat "$T/f16.cmp" 2> /dev/null) (see $T/np2-f16.log)"; fi
# overlap=1: the fork's backward calls the hook (patch 0008) layer by layer,
# buckets go out during the backward; bit for bit the blocking 2 x 2.
MPI="$MPI -x MN_PIECE_BYTES=4096" eq_run np2-ov 2 2 1 communicator=flat overlap=1 bucket_mb=0.002 "timeline=$T/ov.json"
if grep -aq "overlap=1: [0-9]* buckets" "$T/np2-ov.log" && grep -q '"name":"backward"' "$T/ov.json" &&
   "$TEST_BIN/mn_wcmp" "$T/backup/np2-ov_final.weights" "$F32" 0 > "$T/ov.cmp" 2>&1; then
    ok "hankai overlap=1 = blocking, bit for bit, 2 x 2 ($(grep -ao '[0-9]* buckets' "$T/np2-ov.log"); $(cat "$T/ov.cmp"))"
else bad "hankai overlap=1 vs blocking: $(cat "$T/ov.cmp" 2> /dev/null) (see $T/np2-ov.log)"; fi
# Checkpoint and resume: 2 x 2 stopped at iteration 2 (its checkpoint), then
# the same cfg to 3 resumes there (seen 8 on) and ends bit for bit on the
# uninterrupted run's weights.
MAXB=2 eq_run ck 2 2 1 communicator=flat checkpoint_interval=2
s2=$(seen_of "$T/backup/ck_final.weights" 2> /dev/null)
sed -i 's/^max_batches=.*/max_batches=3/' "$T/ck.cfg"
timeout 180 $MPI -n 2 "$P" detector train "$T/y4.data" "$T/ck.cfg" > "$T/ck-resume.log" 2>&1
if [ "$s2" = 8 ] && grep -aq "resuming from checkpoint $T/backup/ck.ckpt-2: iteration 2" "$T/ck-resume.log" &&
   grep -aq '^3: loss' "$T/ck-resume.log" && ! grep -aq '^[12]: loss' "$T/ck-resume.log" &&
   [ "$(seen_of "$T/backup/ck_final.weights")" = 12 ] && "$TEST_BIN/mn_wcmp" "$T/backup/ck_final.weights" "$F32" 0 > "$T/ck.cmp" 2>&1; then
    ok "hankai checkpoint: stopped at 2 (seen 8), resumed to 3 (seen 12) = the uninterrupted 2 x 2 ($(cat "$T/ck.cmp"))"
else bad "hankai checkpoint and resume: seen $s2 at 2, $(cat "$T/ck.cmp" 2> /dev/null) (see $T/ck.log, $T/ck-resume.log)"; fi
# Batch norm resumed on fewer ranks (tests/helpers/lib.sh): the detector with batch
# norm at 1 image a rank, cut at 2 on 4 ranks, resumed on 2 to 6.
sed 's/^batch=.*/batch=1/' "$T/e-bn.cfg" > "$T/shrink.cfg" && echo checkpoint_interval=2 >> "$T/shrink.cfg"
shrink_bn_row hk detector "$T/y4.data" "$T/shrink.cfg" 2 6
# classifier train: refused on every rank, one message naming the base and where it works.
printf 'classes=10\ntrain=%s\nvalid=%s\nlabels=%s\nbackup=%s\n' "$T/det/train.list" "$T/det/valid.list" data/fashion.names "$T/cls" > "$T/cls.data"
mn_cfg "$T/cls.cfg"
ERROR_LINES=1 expect_error "$T/cls" 2 "classifier training (the fork has no classifier loader: train classifiers with darknet-mn built on AlexeyAB's Darknet, make DARKNET=alexeyab, or pjreddie's, make; detector train works here) is not supported on hank-ai's Darknet" -- "$P" classifier train "$T/cls.data" "$T/cls.cfg"
# Rank 0 alone prints the training lines (a cfg of its own: a start at
# iteration 0 beside np2-flat's final weights is refused).
cp "$T/np2-flat.cfg" "$T/out.cfg"
on_ranks "$T/out" 120 2 -- "$P" detector train "$T/y4.data" "$T/out.cfg"
if all_rc "$T/out" 2 0 && grep -aq '^3: loss' "$T/out.out.0" && ! grep -aq 'loss' "$T/out.out.1"; then
    ok "hankai: rank 0 alone prints ($(grep -ac . "$T/out.out.0") lines; rank 1: $(grep -ac . "$T/out.out.1"))"
else bad "hankai rank-0-only output: exit $(rcs "$T/out" 2), rank 1 printed $(grep -ac loss "$T/out.out.1") loss lines"; fi

# User errors: every rank non-zero, one message naming the key or file.
{ cat "$T/np2-flat.cfg"; echo bogus_key=1; } > "$T/badkey.cfg"
expect_error "$T/badkey" 2 "bogus_key" -- "$P" detector train "$T/y4.data" "$T/badkey.cfg"
expect_error "$T/nofile" 2 "$T/missing.data" -- "$P" detector train "$T/missing.data" "$T/np2-flat.cfg"
# A key the fork's parser refuses (darknet-mn's cfg check leaves a layer's
# keys to it): its darknet_fatal_error, through the hook, ends every rank
# with the input's status, 65; memory the fork cannot get (layer 0's output
# is 4 GiB, each rank has 3) with a rerun's, 75 (it was 65).
sed 's/^size=1$/size=1\nbogus_layer_key=3/' "$T/np2-flat.cfg" > "$T/fatal.cfg"
mn_cfg "$T/memory.cfg" detector batch=2 width=1024 height=1024 -burn_in -policy -steps -scales max_batches=1 \
    '[convolutional]' filters=512 '[convolutional]' size=1 filters=45 activation=linear '[yolo]' classes=10
printf '#!/bin/sh\nulimit -v 3145728\nexec "$@"\n' > "$T/limited.sh" && chmod +x "$T/limited.sh"
for row in "fatal 65 bogus_layer_key" "memory 75 failed to calloc"; do
    set -- $row; name=$1 want=$2; shift 2; what="$*"
    on_ranks "$T/$name" 120 2 -- "$T/limited.sh" "$P" detector train "$T/y4.data" "$T/$name.cfg"
    # MPI_Abort may kill a rank's shell before it writes its exit code: none is
    # 0, and the launcher's is the abort's. Whichever rank meets the error
    # first says it; the others are killed before they reach it.
    if ! rcs "$T/$name" 2 | grep -qw 0 && [ "$(cat "$T/$name.rc")" = "$want" ] && grep -aq "$what" "$T/$name".out.* "$T/$name".err.* &&
       grep -aq "darknet-mn: rank [01] (.*): fatal: .*aborting all ranks" "$T/$name".err.* && ! ls core* > /dev/null 2>&1; then
        ok "hankai $name error of the fork: every rank ends, mpiexec $want ($(rcs "$T/$name" 2)): $(grep -ah 'fatal: ' "$T/$name".err.* | head -1 | cut -c1-160)"
    else bad "hankai $name error: exit $(rcs "$T/$name" 2), mpiexec $(cat "$T/$name.rc"), not $want: $(cat "$T/$name".err.* | head -3)"; fi
done

# A rank killed (SIGKILL) or stalled (SIGSTOP) at iteration 3 of 400, on 3
# ranks with collective_timeout=4 (as tests/e2e/run_fault.sh on the other
# bases): every rank gone within the timeout and a margin, mpiexec
# non-zero, a message naming rank 2, and no weights file in the backup folder.
fault_row() {   # fault_row NAME SIG WANT SECONDS
    local name=$1 sig=$2 want=$3 took held
    sed 's/^max_batches=.*/max_batches=400/; s/^batch=.*/batch=2/' "$T/e.cfg" > "$T/$name.cfg"
    printf 'communicator=flat\ncollective_timeout=4\n' >> "$T/$name.cfg"
    sed "s|^backup=.*|backup=$T/$name|" "$T/y4.data" > "$T/$name.data"
    bg_ranks "$T/$name" 3 "$P" detector train "$T/$name.data" "$T/$name.cfg"
    if wait_iter "$T/$name" 3; then
        rank_signal "$sig" "$T/$name" 2
        held=$(ls -A "$T/$name" 2> /dev/null | grep -v '^\.darknet_mn\.lock$' | tr '\n' ' ')
        # ends_within: gone in time, mpiexec non-zero (-1 where the subshell cannot wait for it).
        if took=$(ends_within "$T/$name" "$4") && grep -aq "$want" "$T/$name.err" && ! grep -q 'weights\|ckpt' <<< "$held"; then
            ok "hankai $name: SIG$sig to rank 2 of 3 at iteration 3: all gone in $took; $(grep -am1 "$want" "$T/$name.err" | cut -c1-130); backup folder: ${held:-empty}"
        else bad "hankai $name: $took; backup folder '$held'; $(tail -3 "$T/$name.err")"; fi
    else bad "hankai $name: training never reached iteration 3 ($(tail -3 "$T/$name.err"))"; fi
    rank_signal CONT "$T/$name" 2; rank_signal 9 "$T/$name" 2
}
fault_row kill KILL "rank 2" 15
fault_row stall STOP "rank 2 ([^)]*) did not arrive within 4 s\|did not complete in time (collective_timeout=4 s)" 20

# The tutorial's command (tests/e2e/run_tutorial.sh on the other bases), labels
# beside the images as the fork's guide has them: 2 ranks train and -map
# evaluates at max_batches (the other bases' cadence) into _best, -log holds
# rank 0's output and nothing of it reaches the terminal.
HS=$(shapes_set "$T/shapes" beside) || bad "hankai: mn_shapes could not write the set"
mn_cfg "$T/yolo.cfg" detector max_batches=4
SB=$T/shapes/backup
on_ranks "$T/tut" 180 2 -- "$P" detector train "$HS" "$T/yolo.cfg" -dont_show -map -log "$T/tut-train.log"
L=$T/tut-train.log
if ! all_rc "$T/tut" 2 0; then bad "hankai tutorial: exit codes $(rcs "$T/tut" 2): $(cat "$T"/tut.err.* | head -3)"
elif grep -q '^darknet-mn: labels:' "$L"; then bad "hankai tutorial: labels beside the images are the fork's own rule: $(grep -m1 labels: "$L")"
elif ! grep -q '^darknet-mn: -map: evaluating mAP@0.5 every 100 iterations (4 epochs of 8 images, at least 100), not before iteration 10 (burn_in), and at 4 (max_batches)' "$L"; then
    bad "hankai tutorial: no -map start line in $L"
elif [ "$(grep -c '^[0-9]*: eval mAP@0.5' "$L")" != 1 ] || ! grep -q '^4: eval mAP@0.5 [0-9.]* on 4 images' "$L"; then
    bad "hankai tutorial: want one evaluation, at 4: $(grep ': eval' "$L")"
elif [ ! -s "$SB/yolo_best.weights" ] || [ ! -s "$SB/yolo_final.weights" ]; then bad "hankai tutorial: no _best or _final weights"
elif grep -aq 'loss' "$T/tut.out.0" "$T/tut.err.0"; then bad "hankai tutorial: rank 0's output reached the terminal despite -log"
elif ! grep -q '^4: loss' "$L"; then bad "hankai tutorial: $L lacks the training lines"
else ok "hankai tutorial: detector train ... -dont_show -map -log: $(grep '^4: eval' "$L" | cut -d, -f1); seen $(seen_of "$SB/yolo_final.weights")"; fi
# -clear from the final weights (iteration 4) beside them: a start over that
# would replace them and _best, refused (64); moved aside as the message
# says, trained again from iteration 0, seen counted from 0 (4 updates of
# 2 x 8: 64).
on_ranks "$T/clear0" 180 2 -- "$P" detector train "$HS" "$T/yolo.cfg" "$SB/yolo_final.weights" -dont_show -clear
mkdir -p "$SB/old" && mv "$SB"/yolo_*.weights "$SB/old/"
on_ranks "$T/clear" 180 2 -- "$P" detector train "$HS" "$T/yolo.cfg" "$SB/old/yolo_final.weights" -dont_show -clear
if all_rc "$T/clear0" 2 $EX_USAGE && grep -aq "holds an earlier training of yolo ($SB/yolo_final.weights, $SB/yolo_best.weights) and this run would start over" "$T/clear0.err.0" &&
   all_rc "$T/clear" 2 0 && grep -aq "starting from $SB/old/yolo_final.weights at iteration 0 (-clear: seen set to 0" "$T/clear.out.0" &&
   grep -aq '^1: loss' "$T/clear.out.0" && grep -aq '^4: loss' "$T/clear.out.0" && [ "$(seen_of "$SB/yolo_final.weights")" = 64 ]; then
    ok "hankai -clear: beside the final and best weights refused ($EX_USAGE); moved aside, from them at iteration 0, 4 updates again, seen 64"
else bad "hankai -clear: exit $(rcs "$T/clear0" 2) then $(rcs "$T/clear" 2); $(head -1 "$T/clear0.err.0" | cut -c1-200); $(grep -ah 'starting\|resum' "$T/clear.out.0"); seen $(seen_of "$SB/yolo_final.weights" 2> /dev/null); $(head -2 "$T/clear.err.0")"; fi
refused "$T/gpus" "^darknet-mn: -gpus is not used: darknet-mn runs one MPI rank per GPU; launch mpiexec -n 2 ./darknet_mn detector train $HS $T/yolo.cfg -dont_show -map" \
    "$P" detector train "$HS" "$T/yolo.cfg" -dont_show -map -gpus 0,1

# Scattering: unshuffled (shuffle=0, deterministic=0) rank r reads the r-th
# half of the list, through the fork's random loader. Eight good images
# and eight that do not decode (labels beside them): last, the job ends on
# rank 1 naming one of them and rank 0 never reads one; first, the reverse.
mkdir -p "$T/bad"
head -8 "$T/det/train.list" > "$T/good.list"
for i in 1 2 3 4 5 6 7 8; do
    printf 'not an image\n' > "$T/bad/bad$i.jpg"; cp "$(sed -n "${i}p" "$T/good.list" | sed 's/\.jpg$/.txt/')" "$T/bad/bad$i.txt"
    echo "$T/bad/bad$i.jpg"
done > "$T/bad.list"
sed 's/^max_batches=.*/max_batches=400/; s/^batch=.*/batch=2/; s/^deterministic=1/deterministic=0/' "$T/e.cfg" > "$T/sc.cfg"
for order in last first; do
    if [ $order = last ]; then cat "$T/good.list" "$T/bad.list"; else cat "$T/bad.list" "$T/good.list"; fi > "$T/sc-$order.list"
    sed "s|^train=.*|train=$T/sc-$order.list|; s|^backup=.*|backup=$T/sc-$order|" "$T/y4.data" > "$T/sc-$order.data"
    bg_ranks "$T/sc-$order" 2 "$P" detector train "$T/sc-$order.data" "$T/sc.cfg"
    r=1 o=0; [ $order = first ] && r=0 o=1
    if took=$(ends_within "$T/sc-$order" 60) && grep -aq "rank $r (.*): image $T/bad/bad[1-8]\.jpg is not a" "$T/sc-$order.err" && ! grep -aq "rank $o (.*): image" "$T/sc-$order.err"; then
        ok "hankai scattering: the bad half $order: rank $r alone reads it, all gone in $took; $(grep -aom1 "rank $r (.*): image .*" "$T/sc-$order.err" | cut -c1-120)"
    else bad "hankai scattering, the bad half $order: $took; $(grep -a 'darknet-mn' "$T/sc-$order.err" | head -3)"; fi
done

# Weights both ways, on weights that detect (the tiny network above, 3
# updates, finds nothing): yolov4-tiny-fashion (fork_y4_cfg, as
# run_hankai_build.sh trains it on AlexeyAB's base) trained by darknet-mn on
# this base on 2 ranks, 60 iterations (about 25 s).
HKCLI=$(hankai_cli "$DK")
ROOT=$(pwd)
fork_y4_cfg "$T/y4.cfg"
printf '\n[distributed]\ndeterministic=1\n' >> "$T/y4.cfg"
W=$T/backup/y4_final.weights
t0=$SECONDS
if timeout 300 $MPI -n 2 "$P" detector train "$T/y4.data" "$T/y4.cfg" > "$T/y4-train.log" 2>&1 && [ -f "$W" ]; then
    ok "hankai: yolov4-tiny-fashion trained 60 iterations on 2 ranks ($((SECONDS - t0)) s): $(grep -a '^60: loss' "$T/y4-train.log" | cut -d, -f1)"
else bad "hankai: yolov4-tiny-fashion training (see $T/y4-train.log)"; tail -3 "$T/y4-train.log"; fi
timeout 300 $MPI -n 1 "$P" detector map "$T/y4.data" "$T/y4.cfg" "$W" > "$T/map1.log" 2>&1
timeout 300 $MPI -n 2 "$P" detector map "$T/y4.data" "$T/y4.cfg" "$W" > "$T/map2.log" 2>&1
timeout 300 "$HKCLI" detector map -nocolor "$T/y4.data" "$T/y4.cfg" "$W" > "$T/map-hk.log" 2>&1
# The fork's detector map on them against darknet-mn's: both find
# detections and an mAP > 0; the counts within 0.5% and each class's AP
# within 15% + 0.1 points (tests/helpers/map_near.py). The fork's map loads each image resized by
# OpenCV (INTER_LINEAR_EXACT), darknet-mn whole, then by Darknet's
# resize_image: confidences move a little, and the boxes over 0.005 are not
# quite the same (seen: 12731 against 12727 at the rate 0.01, 22855 against
# 22830 at fork_y4_cfg's 0.005, 0.11%); darknet-mn takes VOC's
# AP on clipped pixel boxes, the fork on unclipped relative ones (see
# run_alexeyab.sh). Seen: class 5 at 1.005% against 0.922% (9%), class 2
# at 7.44% against 7.18%; mAP 2.76% against 2.72%.
if r=$(python3 tests/helpers/map_near.py "$T/map-hk.log" "$T/map1.log" 2>&1); then ok "hankai: the fork's detector map on darknet-mn's weights: $r"
else bad "hankai: the fork's detector map on darknet-mn's weights: $r (see $T/map1.log, $T/map-hk.log)"; fi
# Every class's AP and the summary, less the rank count.
map_lines() { grep -a '^darknet-mn: \(class\|.* detections\)' "$1" | sed 's/ on [0-9]* ranks//'; }
if [ -n "$(map_lines "$T/map1.log")" ] && [ "$(map_lines "$T/map1.log")" = "$(map_lines "$T/map2.log")" ]; then
    ok "hankai detector map on 2 ranks = 1 rank: $(map_lines "$T/map2.log" | tail -1) and $(map_lines "$T/map2.log" | grep -c class) classes' AP"
else bad "hankai detector map: 1 rank '$(map_lines "$T/map1.log" | tail -1)', 2 ranks '$(map_lines "$T/map2.log" | tail -1)' (diff $T/map1.log $T/map2.log)"; fi
# detector test on three validation images: the fork's objects (-out JSON)
# are darknet-mn's lines "name: P% (x X, y Y, w W, h H)", one to one, to
# their rounding (a point, a pixel). Both load the whole image and resize it
# with Darknet's resize_image: the same confidences.
TH=0.02
for i in 000000 000001 000002; do
    img=$T/det/valid/$i.jpg
    (cd "$T" && timeout 60 $MPI -n 2 "$ROOT/$P" detector test y4.data y4.cfg "$W" "$img" -thresh $TH -out "mn-$i" > "mn-$i.log" 2>&1)
    (cd "$T" && timeout 60 "$ROOT/$HKCLI" detector test -nocolor y4.data y4.cfg "$W" "$img" -thresh $TH -dont_show -out "hk-$i.json" > "hk-$i.log" 2>&1)
done
if r=$(python3 - "$T" << 'EOF' 2>&1
import json, re, sys
t, n, names = sys.argv[1], 0, set()
for i in ("000000", "000001", "000002"):
    log = open("%s/mn-%s.log" % (t, i), errors="replace").read()
    size = re.search(r"darknet-mn: wrote \S+ \((\d+)x(\d+)\)", log)
    if not size: sys.exit("darknet-mn's detector test on %s.jpg wrote no image (see %s/mn-%s.log)" % (i, t, i))
    w, h = int(size[1]), int(size[2])
    mn = [(a, int(p), [int(v) for v in b]) for a, p, *b in
          re.findall(r"(?m)^(\w+): (\d+)% \(x (-?\d+), y (-?\d+), w (\d+), h (\d+)\)$", log)]
    hk = []
    for o in json.load(open("%s/hk-%s.json" % (t, i)))[0]["objects"]:
        c = o["relative_coordinates"]
        hk.append((o["name"], 100 * o["confidence"], [(c["center_x"] - c["width"] / 2) * w, (c["center_y"] - c["height"] / 2) * h,
                                                      c["width"] * w, c["height"] * h]))
    if len(mn) != len(hk): sys.exit("%s.jpg: darknet-mn finds %d objects, the fork %d" % (i, len(mn), len(hk)))
    for a, p, b in mn:
        m = [q for q in hk if q[0] == a and abs(q[1] - p) <= 0.51 and max(abs(x - y) for x, y in zip(q[2], b)) <= 0.51]
        if not m: sys.exit("%s.jpg: darknet-mn's %s %d%% %s has no match among the fork's" % (i, a, p, b))
        hk.remove(m[0])
        names.add(a)
    n += len(mn)
if not n: sys.exit("no object over the threshold")
print("%d objects (%s)" % (n, ", ".join(sorted(names))))
EOF
); then ok "hankai: the fork's detector test on darknet-mn's weights (3 images, -thresh $TH) = darknet-mn's: $r"
else bad "hankai: the fork's detector test on darknet-mn's weights: $r (see $T/mn-*.log, $T/hk-*.log)"; fi
# The fork trains 3 iterations (-seed 7, no prompt); darknet-mn resumes its weights to 5.
sed '/^\[distributed\]/,$d' "$T/ref.cfg" > "$T/hk.cfg"
(cd "$T" && timeout 300 "$OLDPWD/$HKCLI" detector train -nocolor -dont_show -yes -seed 7 y4.data hk.cfg > hk-train.log 2>&1)
HW=$T/backup/hk_final.weights
sed "s/^max_batches=.*/max_batches=5/" "$T/np2-flat.cfg" > "$T/hk5.cfg"
if [ -f "$HW" ] && [ "$(seen_of "$HW")" = 12 ] &&
   timeout 180 $MPI -n 2 "$P" detector train "$T/y4.data" "$T/hk5.cfg" "$HW" > "$T/hk5.log" 2>&1 &&
   grep -aq '^5: loss' "$T/hk5.log" && ! grep -aq '^1: loss' "$T/hk5.log" && [ "$(seen_of "$T/backup/hk5_final.weights")" = 20 ]; then
    ok "hankai: darknet-mn resumes the fork's weights (seen 12) on 2 ranks to iteration 5, seen 20"
else bad "hankai: resume of the fork's weights (see $T/hk-train.log, $T/hk5.log): seen $(seen_of "$HW" 2> /dev/null)"; fi

# The plugin's calls go one way in this build too, and nothing outside base/
# reads the network or calls the fork.
if python3 tests/static/layers.py "$(make -s --no-print-directory print-layers)" "$HK/libdarknet_mn.a" > "$T/layers.out" 2>&1; then
    while read -r l; do ok "hankai: ${l#ok   }"; done < "$T/layers.out"
else sed 's/^/     /' "$T/layers.out" | cut -c1-600; bad "layers: $HK/libdarknet_mn.a (tests/static/layers.py)"; fi
if python3 tests/static/boundary.py "$(make -s --no-print-directory print-layers)" main.c \
        --link $(make -s --no-print-directory BUILD="$BUILD" DARKNET=hankai print-link) > "$T/boundary.out" 2>&1; then
    while read -r l; do ok "hankai: ${l#ok   }"; done < "$T/boundary.out"
else sed 's/^/     /' "$T/boundary.out" | head -20 | cut -c1-300; bad "boundary: network or layer reads or Darknet calls outside base/ (tests/static/boundary.py)"; fi

bench_step hankai "$P"

finish
