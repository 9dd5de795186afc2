#!/usr/bin/env bash
# The GPU test plan (docs/gpu-check.md), for a machine with at least one
# CUDA GPU: `make gpu-check` (or DARKNET=alexeyab, DARKNET=hankai) builds
# the GPU variant and runs, on the tiny classifier and a slice of
# Fashion-MNIST (hank-ai's base, which has no classifier: a tiny detector on
# mn_shapes' images):
#  1. stream races: 2 ranks with and without CUDA_LAUNCH_BLOCKING=1 give
#     bit-identical weights (the blocking run twice first: if it differs
#     from itself, cuDNN chose a non-deterministic algorithm and the
#     comparison says nothing);
#  2. equivalence: 2 ranks x batch 2 against 1 rank x batch 4, with
#     NVIDIA_TF32_OVERRIDE=0, within 1e-4 (also through pure_nccl and
#     hierarchical where the machine has 2 GPUs);
#  2a. a detector on 2 ranks with -map: trained and evaluated on the GPU
#     (early: what a short phase must not lose);
#  2b. SIGUSR1 to rank 1: every rank stops with a checkpoint, and the rerun
#     resumes there bit-identical to an uninterrupted run; also with
#     double_buffering=1, whose mean in flight the checkpoint holds;
#  2c. overlap=1: 2 ranks, its buckets copied down during backward on a copy
#     stream (the staged route), float32 and float16, bit-identical to a
#     blocking run without it;
#  2d. double_buffering=1 with double_buffering_compensation: bit-identical
#     with and without CUDA_LAUNCH_BLOCKING=1;
#  2e. double buffering on the device (pure_nccl, 1 rank: its two device
#     buffers, NCCL on its own stream, the compensation and hand-over
#     kernels) bit-identical to the staged route's (flat, 1 rank); stopped
#     by SIGUSR1 and resumed bit-identical; float16 within its bound;
#  2f. double_buffering_local=1 (the default): one rank bit-identical to
#     fresh steps on the device and the staged route; 2 ranks averaged
#     into one model before each save;
#  3. a stalled rank (SIGSTOP to rank 1): rank 0's collective timeout
#     ends the job, and its rescue writes the last completed update from
#     its page-locked copy; the rerun resumes there bit-identical to an
#     uninterrupted run;
#  4. compute-sanitizer memcheck (2 ranks) and racecheck (1 rank) on a
#     short run: no error reported (last: the slowest rows, each run within
#     SAN_TIMEOUT, 600 s; skipped where the machine has no
#     compute-sanitizer).
# Prints one ok, FAIL or skip line a row, and the device. A bit-for-bit row
# that cannot decide says why: "not decisive" where identical runs already
# differ (row 1), and on one GPU where only a second GPU could show the
# fault (the device route's rows).
# DARKNET=alexeyab, hankai: the forks' builds; their CUDA batch norm calls
# the statistics hook through patches 0016 and 0022.
# GPU_CHECK_DRY=1: every row's logic on a CPU build, no GPU asked for (make
# test-gpu: the bundle's rehearsal, tests/gpu/gpu_builds.sh), so that only the
# GPU is left for the device; its ok lines say "dry", compute-sanitizer's
# rows are skipped. GPU_CHECK_PLAN=1: prints the number of rows and stops.
# Env: PROG (the GPU build's darknet_mn), BUILD; and from the bundle's
# run.sh (scripts/gpu_run.sh), where the build was made elsewhere: MPI,
# WCMP, GPU_DATA, GPU_DET_DATA (mn_shapes' set), GPU_CHECK_OUT (each row's
# outputs kept there as it ends), GPU_CHECK_WORK (the runs' folder).
. "$(dirname "$0")/../tests/helpers/lib.sh"
DRY=${GPU_CHECK_DRY:-0}
T=${GPU_CHECK_WORK:-$(pwd)/$BUILD/gpu-check$([ "$DRY" = 1 ] && echo "-dry-${DARKNET:-pjreddie}")}
: "${PROG:?PROG must name the GPU build (make gpu-check sets it)}"
if [ "$DRY" = 1 ]; then gpus=1
else gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU '); fi
# The rows, as the result lines below print them: stream races (one per
# communicator), equivalence (flat twice, and pure_nccl and hierarchical
# with 2 GPUs), -map, 2 stop rows, 2 overlap, double buffering, 3 on the
# device, the local mode, a stalled rank, the rescue, 2 sanitizer tools.
multi=$([ "$gpus" -ge 2 ] && echo 1 || echo 0)
ROWS=$((1 + multi + 2 + 2 * multi + 1 + 2 + 2 + 1 + 3 + 1 + 1 + 1 + 2))
# GPU_CHECK_PLAN=1: the count alone (gpu_run.sh's tally of rows not run).
if [ "${GPU_CHECK_PLAN:-0}" = 1 ]; then echo "$ROWS"; exit 0; fi
rm -rf "$T" && mkdir -p "$T"
if [ "$DRY" = 1 ]; then
    echo "no GPU: a dry run of the check's logic on $PROG" > "$T/devices"
    okd() { ok "$* (dry run: the logic, on a CPU build)"; }
elif [ "$gpus" = 0 ]; then
    echo "gpu-check: no CUDA GPU here (nvidia-smi -L: $(nvidia-smi -L 2>&1 | head -1)); nothing was run"; exit 2
else
    nvidia-smi -L > "$T/devices" 2>&1
    okd() { ok "$@"; }
fi
# GPU_CHECK_OUT: where each row's outputs go as it ends (gpu_run.sh, whose
# phase may be cut): the runs' folder without weights, as runs.tgz.
keep_runs() {
    [ -n "${GPU_CHECK_OUT:-}" ] || return 0
    tar -C "$T" --exclude='*.weights' --exclude='*.ckpt-*' -czf "$GPU_CHECK_OUT/runs.tgz.part" . 2> /dev/null &&
        mv "$GPU_CHECK_OUT/runs.tgz.part" "$GPU_CHECK_OUT/runs.tgz"
}
ROW_DONE=keep_runs
# A bit-for-bit row that differs where row 1 found two identical blocking
# runs differing (cuDNN chose a non-deterministic algorithm) says so
# rather than FAIL: nothing can be judged from its bits.
nondet=0
bad_bits() {
    if [ $nondet = 1 ]; then skip "not decisive (identical runs differ on this machine, row 1: a non-deterministic cuDNN algorithm): $*"
    else bad "$@"; fi
}
# The device route's rows on one GPU: one rank's NCCL allreduce in place
# leaves its buffer as it was, so a wait left out of that route changes no
# bit there. They run, and say so; two GPUs (pure_nccl on 2 ranks) decide.
one_gpu=$([ "$DRY" = 0 ] && [ "$multi" = 0 ] && echo " (not decisive on one GPU: an in-place allreduce of one rank changes no bit, so a missing wait shows only with 2 GPUs)")
if [ "$DRY" = 1 ]; then echo "== gpu-check, dry run (no GPU asked for): $PROG"
else echo "== gpu-check on $(head -1 "$T/devices") ($gpus GPU(s)); $PROG"; fi
# The rows train the tiny classifier where the base has one, and a tiny
# detector (3 convolutions with batch norm, a [yolo] layer, 64x64) on
# hank-ai's, which has no classifier loader; every base also trains the
# detector once with -map (row 2a).
case ${DARKNET:-pjreddie} in
    alexeyab|pjreddie) TASK=classifier ;;
    hankai) TASK=detector ;;
    *) echo "gpu-check: DARKNET=$DARKNET: the bases are pjreddie, alexeyab and hankai"; exit 2 ;;
esac
if [ -n "${GPU_DATA:-}" ]; then D=$GPU_DATA   # scripts/gpu_bundle.sh's copy: no dataset package there
else fashion_slice "$T/fashion" 256 64 "$T/fashion.log" || { echo "gpu-check: mn_fashion failed (see $T/fashion.log)"; exit 1; }; fi
# The detector's images: 16 to train on, 8 to evaluate (mn_shapes, or the
# bundle's copy), labels beside the images on hank-ai's base (its rule).
S=$T/shapes
if [ -n "${GPU_DET_DATA:-}" ]; then cp -r "$GPU_DET_DATA" "$S"
else
    SHAPES=${SHAPES:-$BUILD/cpu/tests/mn_shapes}
    [ -x "$SHAPES" ] || make -s "$SHAPES" > /dev/null
    { "$SHAPES" "$S" train 16 1 jpg && "$SHAPES" "$S" valid 8 2 jpg; } > "$T/shapes.log" 2>&1 ||
        { echo "gpu-check: mn_shapes failed (see $T/shapes.log)"; exit 1; }
fi
if [ "${DARKNET:-pjreddie}" = hankai ] && [ -d "$S/labels" ]; then mv "$S"/labels/*.txt "$S/images/" && rmdir "$S/labels"; fi
for v in train valid; do ls "$S/images/$v"*.jpg > "$S/$v.list"; done
data() {   # data NAME [TASK]: a data cfg with its own backup folder
    if [ "${2:-$TASK}" = classifier ]; then
        printf 'classes=10\ntrain=%s/train.list\nvalid=%s/test.list\nlabels=%s/labels.txt\nbackup=%s/%s\ntop=2\n' \
            "$D" "$D" "$D" "$T" "$1" > "$T/$1.data"
    else printf 'classes=3\ntrain=%s/train.list\nvalid=%s/valid.list\nnames=%s/names.txt\nbackup=%s/%s\n' \
            "$S" "$S" "$S" "$T" "$1" > "$T/$1.data"; fi
    mkdir -p "$T/$1"
    echo "$T/$1.data"
}
cfg() {   # [TASK=detector] cfg NAME BATCH MAXB [distributed lines...]: the tiny classifier or detector, with batch norm
    local f=$T/$1.cfg b=$2 m=$3; shift 3
    if [ "$TASK" = classifier ]; then
        mn_cfg "$f" batch="$b" max_batches="$m" '[convolutional]' batch_normalize=1 '[maxpool]' '[connected]' \
            '[softmax]' -- deterministic=1 shuffle=0 "$@"
    else mn_cfg "$f" detector batch="$b" max_batches="$m" burn_in=0 -- deterministic=1 shuffle=0 "$@"; fi
    echo "$f"
}
# [TASK=detector] run NAME NP [ENV=V...] -- CFG [ARGS...]: training; its weights file is $T/NAME/NAME_final.weights.
run() {
    local name=$1 np=$2 envs=(); shift 2
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    local c=$1; shift
    on_ranks "$T/$name" 300 "$np" "${envs[@]}" -- "$PROG" "$TASK" train "$(data "$name")" "$c" "$@"
}
w() { echo "$T/$1/$1_final.weights"; }
# The iteration after which a signal row signals, and the length of the
# plain stop and rescue rows: a CPU build (a dry run) does 400 updates of
# the classifier on 2 ranks in a second or two, sometimes before the signal
# lands, so there they are signalled early and the classifier runs longer
# (not with double buffering, whose stale steps diverge past iteration 400
# of a run without BLAS).
early=$([ "$DRY" = 1 ] && echo 5 || echo 50)
long=$([ "$DRY" = 1 ] && [ "$TASK" = classifier ] && echo 1500 || echo 400)
WCMP=${WCMP:-$BUILD/cpu/tests/mn_wcmp}
[ -x "$WCMP" ] || make -s "$WCMP" > /dev/null

echo "-- 1. stream races: CUDA_LAUNCH_BLOCKING=1 against 0, 2 ranks (flat: ranks share GPU 0 here)"
for c in flat $( [ "$gpus" -ge 2 ] && echo pure_nccl ); do
    for r in b1 b2 nb; do
        blocking=$([ $r = nb ] && echo 0 || echo 1)
        run "race-$c-$r" 2 CUDA_LAUNCH_BLOCKING=$blocking NVIDIA_TF32_OVERRIDE=0 -- "$(cfg "race-$c-$r" 4 20 communicator=$c)"
    done
    if ! all_rc "$T/race-$c-b1" 2 0 || ! all_rc "$T/race-$c-nb" 2 0; then bad "races $c: a run failed (see $T/race-$c-*.err.*)"
    elif ! "$WCMP" "$(w race-$c-b1)" "$(w race-$c-b2)" 0 > "$T/race-$c-self.log"; then
        msg="races $c: two CUDA_LAUNCH_BLOCKING=1 runs differ ($(cat "$T/race-$c-self.log"))"
        # A CPU build's identical runs agree: there it is a fault.
        if [ "$DRY" = 1 ]; then bad "$msg"
        else nondet=1; skip "not decisive: $msg: a non-deterministic cuDNN algorithm"; fi
    elif "$WCMP" "$(w race-$c-nb)" "$(w race-$c-b1)" 0 > "$T/race-$c.log"; then okd "races $c: bit-identical with and without CUDA_LAUNCH_BLOCKING=1 ($(cat "$T/race-$c.log"))"
    else bad "races $c: the asynchronous run differs from the blocking one ($(cat "$T/race-$c.log")): a stream race"; fi
done

# sync_bn=1: the classifier has batch norm, whose statistics over a rank's 2
# images are not the 4 images' (without it 2 x 2 differs from 1 x 4 by 0.25
# on the CPU build as on the GPU: the first GPU run's FAIL). On AlexeyAB's
# cuDNN build it takes the fork's own kernels (patch 0016), so these rows
# check that path too. float16 rounds each gradient: 3.1e-4 on the CPU
# build.
echo "-- 2. N x b against 1 x N*b (NVIDIA_TF32_OVERRIDE=0, sync_bn=1)"
# 10 updates of the classifier; 3 of the detector, whose large early loss
# (about 80) moves its weights far more per update (run_hankai.sh's bound).
eqn=$([ "$TASK" = classifier ] && echo 10 || echo 3)
run eq-one 1 NVIDIA_TF32_OVERRIDE=0 -- "$(cfg eq-one 4 $eqn sync_bn=1)"
for v in flat flat:allreduce_grad_dtype=float16 $( [ "$gpus" -ge 2 ] && echo pure_nccl hierarchical ); do
    c=${v%%:*} opt=$([ "$v" = "$c" ] || echo "${v#*:}") name=eq-$(tr ':=_' '---' <<< "$v")
    bound=$(case $opt in *float16) echo 2e-3 ;; *) echo 1e-4 ;; esac)
    run "$name" 2 NVIDIA_TF32_OVERRIDE=0 -- "$(cfg "$name" 2 $eqn communicator=$c sync_bn=1 $opt)"
    if all_rc "$T/$name" 2 0 && all_rc "$T/eq-one" 1 0 && "$WCMP" "$(w "$name")" "$(w eq-one)" "$bound" > "$T/$name.log"; then
        okd "equivalence $c${opt:+ $opt}: 2 x 2 = 1 x 4 within $bound ($(cat "$T/$name.log"))"
    else bad "equivalence $c${opt:+ $opt}: $(cat "$T/$name.log" 2> /dev/null) (see $T/$name.err.*)"; fi
done

# The detector as a user trains it: 2 ranks of one GPU, -map evaluating on
# the GPU at max_batches (burn_in past it: the rate is warming up, so only
# that an evaluation ran and gave a number counts, not its value). Early:
# what YOLO's users run, answered before the rows a short phase may lose.
echo "-- 2a. a detector on 2 ranks with -map"
TASK=detector run map 2 -- "$(TASK=detector cfg map 4 8 communicator=flat)" -dont_show -map
if all_rc "$T/map" 2 0 && grep -q '^8: eval mAP@0.5 [0-9.]* on 8 images' "$T/map.out.0" && [ -s "$(w map)" ]; then
    okd "detector, -map on 2 ranks: $(grep -m1 '^8: eval' "$T/map.out.0" | cut -c1-120)"
else bad "detector with -map: ranks $(rcs "$T/map" 2); $(grep -h ': eval\|error' "$T"/map.out.0 "$T"/map.err.0 | head -3) (see $T/map.err.*)"; fi
# stop_row NAME WHAT LENGTH [distributed lines...]: SIGUSR1 to rank 1 at iteration 50
# or later, every rank exit 75, the rerun resumes there and ends
# bit-identical to an uninterrupted run. With double buffering the
# checkpoint holds the mean in flight (the GPU's momentum pulled, then the
# two host buffers; pushed back in the other order on resume).
stop_row() {
    local n=$1 what=$2 len=$3; shift 3
    run "$n-ref" 2 -- "$(cfg "$n-ref" 4 "$len" "$@")"
    local sc at first stopped
    sc=$(cfg "$n" 4 "$len" "$@")
    run "$n" 2 -- "$sc" &
    for _ in $(seq 600); do grep -aq "^$early: loss" "$T/$n.out.0" 2> /dev/null && break; sleep 0.05; done
    signal_rank1 USR1 "$T/$n.data"
    wait
    at=$(sed -n 's/.*stopped at iteration \([0-9]*\) .*/\1/p' "$T/$n.out.0")
    ended_with "$T/$n" 2 75; stopped=$?
    first=$(rcs "$T/$n" 2)
    run "$n" 2 -- "$sc"
    if all_rc "$T/$n-ref" 2 0 && [ -n "$at" ] && [ $stopped = 0 ] && all_rc "$T/$n" 2 0 &&
       grep -q "resuming from checkpoint .*$n.ckpt-$at" "$T/$n.out.0" && "$WCMP" "$(w "$n")" "$(w "$n-ref")" 0 > "$T/$n.log"; then
        okd "stop signal$what: stopped at iteration $at, every rank that reported exit 75 ($first), resumed there, bit-identical to an uninterrupted run ($(cat "$T/$n.log"))"
    else bad_bits "stop signal$what: stopped at '$at' with $first; rerun $(rcs "$T/$n" 2); $(cat "$T/$n.log" 2> /dev/null); $(grep -h 'resuming' "$T/$n.out.0")"; fi
}
echo "-- 2b. a stop signal: SIGUSR1 to rank 1, a checkpoint of the GPU state, the rerun bit-identical"
stop_row stop "" "$long"
stop_row stop-dbuf " with double_buffering=1 (stale from iteration 11)" 400 double_buffering=1 double_buffering_local=0 double_buffering_fresh=10

# 256-byte pieces and buckets of 2 of them (1 in float16, whose pieces hold
# twice the values): several buckets even where the
# tiny classifier averages 232 floats (AlexeyAB's fork never trains
# [connected]: its parser leaves l.train 0). The reference runs with
# CUDA_LAUNCH_BLOCKING=1, so that a copy stream that read a bucket before
# backward wrote it, or an average of a copy not yet landed, differs from it.
echo "-- 2c. overlap=1 against none, bit for bit (flat, 2 ranks: the staged route, a copy stream)"
for dt in float32 float16; do
    for v in blk ov; do
        run "ov-$dt-$v" 2 MN_PIECE_BYTES=256 CUDA_LAUNCH_BLOCKING=$([ $v = blk ] && echo 1 || echo 0) -- \
            "$(cfg "ov-$dt-$v" 4 20 communicator=flat allreduce_grad_dtype=$dt $([ $v = ov ] && echo overlap=1 bucket_mb=0.0003))"
    done
    nb=$(sed -n 's/^darknet-mn: overlap=1: \([0-9]*\) buckets\{0,1\} .*/\1/p' "$T/ov-$dt-ov.out.0")
    if all_rc "$T/ov-$dt-blk" 2 0 && all_rc "$T/ov-$dt-ov" 2 0 && [ "${nb:-0}" -ge 2 ] &&
       "$WCMP" "$(w "ov-$dt-ov")" "$(w "ov-$dt-blk")" 0 > "$T/ov-$dt.log"; then
        okd "overlap=1 $dt: $nb buckets, bit-identical to a blocking run without it ($(cat "$T/ov-$dt.log"))"
    else bad_bits "overlap=1 $dt: ${nb:-no} buckets; ranks $(rcs "$T/ov-$dt-ov" 2); $(cat "$T/ov-$dt.log" 2> /dev/null) (see $T/ov-$dt-ov.err.*)"; fi
done

# Double buffering on a GPU: the gradient copied down, averaged on the host
# thread while the next step computes, the previous mean copied up, and
# corrected (double_buffering_compensation) at the weights pulled beside
# the gradient. With and without CUDA_LAUNCH_BLOCKING=1 the weights must be
# the same bits.
echo "-- 2d. double_buffering=1 with compensation: CUDA_LAUNCH_BLOCKING=1 against 0 (flat, 2 ranks, stale from iteration 6)"
for b in 1 0; do
    run "dbuf-b$b" 2 CUDA_LAUNCH_BLOCKING=$b -- \
        "$(cfg "dbuf-b$b" 4 20 communicator=flat double_buffering=1 double_buffering_local=0 double_buffering_fresh=5 double_buffering_compensation=100)"
done
if all_rc "$T/dbuf-b1" 2 0 && all_rc "$T/dbuf-b0" 2 0 && grep -q "^darknet-mn: double_buffering=1: iterations 1-5 averaged fresh" "$T/dbuf-b0.out.0" &&
   "$WCMP" "$(w dbuf-b0)" "$(w dbuf-b1)" 0 > "$T/dbuf.log"; then
    okd "double_buffering=1 with compensation: bit-identical with and without CUDA_LAUNCH_BLOCKING=1 ($(cat "$T/dbuf.log"))"
else bad_bits "double_buffering=1: ranks $(rcs "$T/dbuf-b0" 2) and $(rcs "$T/dbuf-b1" 2); $(cat "$T/dbuf.log" 2> /dev/null) (see $T/dbuf-b0.err.*)"; fi

# Double buffering on the device: pure_nccl on one rank (an NCCL
# communicator of one: its allreduce is exact), so that one GPU runs the
# device route's buffers, streams and kernels; the staged route (flat) on one
# rank averages the same means on the host, and the compensation kernel
# rounds each operation as the host does, so the bits must agree (weight
# prediction runs on the device on both routes; its weights kept reach the
# host for the staged route's compensation). A dry run
# has no pure_nccl: both use flat there (the rows' logic only).
echo "-- 2e. double buffering on the device (pure_nccl, 1 rank) against the staged route (flat, 1 rank)"
devc=$([ "$DRY" = 1 ] && echo flat || echo pure_nccl)
dbo=(double_buffering=1 double_buffering_local=0 double_buffering_fresh=5 double_buffering_compensation=100 double_buffering_prediction=0.5)
run dbd-stg 1 -- "$(cfg dbd-stg 4 20 communicator=flat "${dbo[@]}")"
run dbd-dev 1 -- "$(cfg dbd-dev 4 20 communicator=$devc "${dbo[@]}")"
ondev=$([ "$DRY" = 1 ] || grep -c "^darknet-mn: double_buffering=1 on the device" "$T/dbd-dev.out.0")
if all_rc "$T/dbd-stg" 1 0 && all_rc "$T/dbd-dev" 1 0 && [ "$ondev" != 0 ] && "$WCMP" "$(w dbd-dev)" "$(w dbd-stg)" 0 > "$T/dbd.log"; then
    okd "double_buffering=1 on the device ($devc): bit-identical to the staged route ($(cat "$T/dbd.log"))$one_gpu"
else bad_bits "double_buffering=1 on the device: $(rcs "$T/dbd-dev" 1)$([ "$ondev" = 0 ] && echo "not on the device; ")$(cat "$T/dbd.log" 2> /dev/null) (see $T/dbd-dev.err.0)"; fi
run dbd-ref 1 -- "$(cfg dbd-ref 4 400 communicator=$devc "${dbo[@]}")"
dsc=$(cfg dbd-stop 4 400 communicator=$devc "${dbo[@]}")
run dbd-stop 1 -- "$dsc" &
for _ in $(seq 600); do grep -aq "^$early: loss" "$T/dbd-stop.out.0" 2> /dev/null && break; sleep 0.05; done
signal_rank1 USR1 "$T/dbd-stop.data" 0
wait
at=$(sed -n 's/.*stopped at iteration \([0-9]*\) .*/\1/p' "$T/dbd-stop.out.0")
first=$(rcs "$T/dbd-stop" 1)
run dbd-stop 1 -- "$dsc"
if all_rc "$T/dbd-ref" 1 0 && [ -n "$at" ] && [ "$first" = "75 " ] && all_rc "$T/dbd-stop" 1 0 &&
   grep -q "resuming from checkpoint .*dbd-stop.ckpt-$at" "$T/dbd-stop.out.0" && "$WCMP" "$(w dbd-stop)" "$(w dbd-ref)" 0 > "$T/dbd-stop.log"; then
    okd "double_buffering=1 on the device stopped by SIGUSR1 at iteration $at, the mean in flight checkpointed, resumed bit-identical to an uninterrupted run ($(cat "$T/dbd-stop.log"))$one_gpu"
else bad_bits "double_buffering=1 on the device, stop: at '$at' with $first; rerun $(rcs "$T/dbd-stop" 1); $(cat "$T/dbd-stop.log" 2> /dev/null) (see $T/dbd-stop.err.0)"; fi
run dbd-f16 1 -- "$(cfg dbd-f16 4 20 communicator=$devc allreduce_grad_dtype=float16 "${dbo[@]}")"
if all_rc "$T/dbd-f16" 1 0 && "$WCMP" "$(w dbd-f16)" "$(w dbd-dev)" 2e-3 > "$T/dbd-f16.log"; then
    okd "double_buffering=1 on the device, float16: within 2e-3 of float32 ($(cat "$T/dbd-f16.log"))$one_gpu"
else bad "double_buffering=1 on the device, float16: $(rcs "$T/dbd-f16" 1); $(cat "$T/dbd-f16.log" 2> /dev/null) (see $T/dbd-f16.err.0)"; fi

# double_buffering_local=1 (the default): one rank's mean is its own
# gradient, so the stale parts cancel exactly and a run equals one whose
# steps are all fresh (double_buffering_fresh: the momentum part set aside
# and added back alike), bit for bit, on the device (its local kernel, the
# fresh copy taken before the reduce overwrites the buffer) and on the
# staged route; 2 ranks drift apart and are averaged on the GPU before each
# save, so the run ends with the replica check passed.
echo "-- 2f. double_buffering_local=1: 1 rank = fresh steps (device and staged); 2 ranks end as one model"
dlo=(double_buffering=1 double_buffering_fresh=5)
run dbl-dev 1 -- "$(cfg dbl-dev 4 20 communicator=$devc "${dlo[@]}")"
run dbl-stg 1 -- "$(cfg dbl-stg 4 20 communicator=flat "${dlo[@]}")"
run dbl-off 1 -- "$(cfg dbl-off 4 20 communicator=flat double_buffering=1 double_buffering_fresh=20)"
run dbl-two 2 -- "$(cfg dbl-two 4 20 communicator=flat checkpoint_interval=5 "${dlo[@]}")"
ondev=$([ "$DRY" = 1 ] || grep -c "^darknet-mn: double_buffering=1 on the device" "$T/dbl-dev.out.0")
if all_rc "$T/dbl-dev" 1 0 && all_rc "$T/dbl-stg" 1 0 && all_rc "$T/dbl-off" 1 0 && all_rc "$T/dbl-two" 2 0 && [ "$ondev" != 0 ] &&
   grep -q "^darknet-mn: double_buffering_local=1" "$T/dbl-two.out.0" &&
   "$WCMP" "$(w dbl-dev)" "$(w dbl-off)" 0 > "$T/dbl-dev.log" && "$WCMP" "$(w dbl-stg)" "$(w dbl-off)" 0 > "$T/dbl-stg.log"; then
    okd "double_buffering_local=1: one rank bit-identical to fresh steps on the device ($devc: $(cat "$T/dbl-dev.log")) and staged ($(cat "$T/dbl-stg.log")); 2 ranks one model at each save$one_gpu"
else bad_bits "double_buffering_local=1: ranks $(rcs "$T/dbl-dev" 1), $(rcs "$T/dbl-stg" 1), $(rcs "$T/dbl-two" 2)$([ "$ondev" = 0 ] && echo "; not on the device"); $(cat "$T"/dbl-dev.log "$T"/dbl-stg.log 2> /dev/null) (see $T/dbl-dev.err.0, $T/dbl-two.err.*)"; fi

# The rescue on a GPU: rank 1 stalled (SIGSTOP) once rank 0 reported
# iteration 50; rank 0's watchdog ends the job after collective_timeout=3
# and its rescue thread writes the last completed update from the host
# copies the copy stream made after each update (mn_rescue_gpu.c: it reads host
# memory, with nothing of the GPU but an event query). The rerun of the
# same command resumes past it and ends bit-identical to an uninterrupted
# run (row 2b's: the same cfg but for collective_timeout, which changes no
# update).
# A stalled rank is what a hung GPU, driver or link looks like to the
# others: the job must end through darknet-mn's own collective timeout
# (a killed rank would be ended by the launcher, which proves nothing of it).
echo "-- 3. a stalled rank: rank 1 stopped, rank 0's collective timeout ends the job; the rescue writes the last completed update"
rsc=$(cfg resc 4 $long collective_timeout=3)
run resc 2 -- "$rsc" &
for _ in $(seq 600); do grep -aq "^$early: loss" "$T/resc.out.0" 2> /dev/null && break; sleep 0.05; done
signal_rank1 STOP "$T/resc.data"
t0=$SECONDS
wait
took=$((SECONDS - t0))
signal_rank1 KILL "$T/resc.data"
timed=$(grep -aho "did not \(complete in time\|arrive within 3 s\) (collective_timeout[^)]*)" "$T/resc.err.0" | head -1)
if [ -n "$timed" ] && [ "$(cat "$T/resc.rc")" != 124 ] && [ "$(cat "$T/resc.rc.0" 2> /dev/null)" != 0 ] && [ $took -le 60 ]; then
    okd "stalled rank: rank 0 said '$timed' and the job ended ${took} s after the stop (rank 0 $(cat "$T/resc.rc.0" 2> /dev/null || echo killed), mpiexec $(cat "$T/resc.rc"))"
else bad "stalled rank: ended ${took} s after the stop (at most 60), mpiexec $(cat "$T/resc.rc"), ranks $(rcs "$T/resc" 2); rank 0: $(grep -a 'collective_timeout\|error' "$T/resc.err.0" | head -2)"; fi
last=$(grep -ao '^[0-9]*: loss' "$T/resc.out.0" | tail -1 | cut -d: -f1)
k=$(ls "$T/resc" | sed -n 's/^resc\.ckpt-\([0-9]*\)$/\1/p' | sort -n | tail -1)
said=$(grep -aho "rank 0 ([^)]*): ending: the last completed update, iteration [0-9]*" "$T"/resc.err.* | head -1)
run resc 2 -- "$rsc"
first=$(grep -ao '^[0-9]*: loss' "$T/resc.out.0" | head -1 | cut -d: -f1)
if all_rc "$T/stop-ref" 2 0 && [ -n "$k" ] && [ -n "$last" ] && [ "$k" -ge "$last" ] && [ -n "$said" ] &&
   [ "$first" = $((k + 1)) ] && all_rc "$T/resc" 2 0 && "$WCMP" "$(w resc)" "$(w stop-ref)" 0 > "$T/resc.log"; then
    okd "rescue: rank 1 stalled at iteration $last; ${said%%(*}wrote iteration $k; the rerun starts at $first and ends bit-identical to an uninterrupted run ($(cat "$T/resc.log"))"
else bad_bits "rescue: last reported ${last:-none}, checkpoint ${k:-none}, said '${said:-nothing}', rerun from ${first:-none} ($(rcs "$T/resc" 2)); $(cat "$T/resc.log" 2> /dev/null) (see $T/resc.err.*)"; fi

echo "-- 4. compute-sanitizer"
for tool in memcheck racecheck; do
    np=$([ $tool = memcheck ] && echo 2 || echo 1)
    if [ "$DRY" = 1 ]; then skip "compute-sanitizer $tool: a GPU's (dry run)"; continue; fi
    if ! command -v compute-sanitizer > /dev/null; then skip "compute-sanitizer $tool: not on this machine (it comes with the CUDA toolkit)"; continue; fi
    sc=$(cfg "san-$tool" 4 3)
    on_ranks "$T/san-$tool" "${SAN_TIMEOUT:-600}" "$np" -- compute-sanitizer --tool "$tool" --error-exitcode 9 "$PROG" "$TASK" train "$(data "san-$tool")" "$sc"
    if all_rc "$T/san-$tool" "$np" 0 && ! grep -q "ERROR SUMMARY: [1-9]\|RACECHECK SUMMARY: [1-9]" "$T"/san-$tool.out.*; then
        ok "compute-sanitizer $tool on $np rank(s): $(grep -h -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' "$T"/san-$tool.out.* | head -1)"
    else bad "compute-sanitizer $tool: $(rcs "$T/san-$tool" "$np"); see $T/san-$tool.out.*"; fi
done
echo "device: $(head -1 "$T/devices")"
finish gpu-check
