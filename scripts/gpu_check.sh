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
#  3. a killed rank: kill -9 of rank 1 ends the job within the timeout;
#  3b. the rescue: rank 1 stalled, rank 0 writes the last completed update
#     from its page-locked copy, and the rerun resumes there bit-identical
#     to an uninterrupted run;
#  4. compute-sanitizer memcheck (2 ranks) and racecheck (1 rank) on a
#     short run: no error reported (last: the slowest row, each run within
#     SAN_TIMEOUT, 600 s).
# Prints one ok/FAIL line each and the device.
# DARKNET=alexeyab, hankai: the forks' builds; their CUDA batch norm calls
# the statistics hook through patches 0016 and 0022 (never run on a GPU
# before this check).
# GPU_CHECK_DRY=1: every row's logic on a CPU build, no GPU asked for (make
# test: tests/run_gpucheck.sh), so that only the GPU is left for the device;
# its ok lines say "dry", the rows only a GPU can answer (compute-sanitizer)
# are counted as skipped, and the killed rank's wait is 5 s, not 20.
# Env: PROG (the GPU build's darknet_mn), BUILD; and from gpu_bundle.sh's
# run.sh, where the build was made elsewhere: MPI, WCMP, GPU_DATA,
# GPU_DET_DATA (mn_shapes' set), GPU_CHECK_OUT.
. "$(dirname "$0")/../tests/lib.sh"
DRY=${GPU_CHECK_DRY:-0}
T=$(pwd)/$BUILD/gpu-check$([ "$DRY" = 1 ] && echo "-dry-${DARKNET:-pjreddie}")
rm -rf "$T" && mkdir -p "$T"
: "${PROG:?PROG must name the GPU build (make gpu-check sets it)}"
if [ "$DRY" = 1 ]; then
    echo "no GPU: a dry run of the check's logic on $PROG" > "$T/devices"
    gpus=1
    okd() { ok "$* (dry run: the logic, on a CPU build)"; }
elif ! nvidia-smi -L > "$T/devices" 2>&1 || [ ! -s "$T/devices" ]; then
    echo "gpu-check: no CUDA GPU here (nvidia-smi -L: $(head -1 "$T/devices")); nothing was run"; exit 2
else
    gpus=$(grep -c '^GPU ' "$T/devices")
    okd() { ok "$@"; }
fi
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
        bad "races $c: not decisive: two CUDA_LAUNCH_BLOCKING=1 runs differ ($(cat "$T/race-$c-self.log")): a non-deterministic cuDNN algorithm"
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
# stop_row NAME [distributed lines...]: SIGUSR1 to rank 1 at iteration 50
# or later, every rank exit 75, the rerun resumes there and ends
# bit-identical to an uninterrupted run. With double buffering the
# checkpoint holds the mean in flight (the GPU's momentum pulled, then the
# two host buffers; pushed back in the other order on resume).
stop_row() {
    local n=$1 what=$2; shift 2
    run "$n-ref" 2 -- "$(cfg "$n-ref" 4 400 "$@")"
    local sc at first stopped
    sc=$(cfg "$n" 4 400 "$@")
    run "$n" 2 -- "$sc" &
    for _ in $(seq 600); do grep -aq '^50: loss' "$T/$n.out.0" 2> /dev/null && break; sleep 0.05; done
    signal_rank1 USR1 "$T/$n.data"
    wait
    at=$(sed -n 's/.*stopped at iteration \([0-9]*\) .*/\1/p' "$T/$n.out.0")
    ended_with "$T/$n" 2 75; stopped=$?
    first=$(rcs "$T/$n" 2)
    run "$n" 2 -- "$sc"
    if all_rc "$T/$n-ref" 2 0 && [ -n "$at" ] && [ $stopped = 0 ] && all_rc "$T/$n" 2 0 &&
       grep -q "resuming from checkpoint .*$n.ckpt-$at" "$T/$n.out.0" && "$WCMP" "$(w "$n")" "$(w "$n-ref")" 0 > "$T/$n.log"; then
        okd "stop signal$what: stopped at iteration $at, every rank that reported exit 75 ($first), resumed there, bit-identical to an uninterrupted run ($(cat "$T/$n.log"))"
    else bad "stop signal$what: stopped at '$at' with $first; rerun $(rcs "$T/$n" 2); $(cat "$T/$n.log" 2> /dev/null); $(grep -h 'resuming' "$T/$n.out.0")"; fi
}
echo "-- 2b. a stop signal: SIGUSR1 to rank 1, a checkpoint of the GPU state, the rerun bit-identical"
stop_row stop ""
stop_row stop-dbuf " with double_buffering=1 (stale from iteration 11)" double_buffering=1 double_buffering_local=0 double_buffering_fresh=10

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
    else bad "overlap=1 $dt: ${nb:-no} buckets; ranks $(rcs "$T/ov-$dt-ov" 2); $(cat "$T/ov-$dt.log" 2> /dev/null) (see $T/ov-$dt-ov.err.*)"; fi
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
else bad "double_buffering=1: ranks $(rcs "$T/dbuf-b0" 2) and $(rcs "$T/dbuf-b1" 2); $(cat "$T/dbuf.log" 2> /dev/null) (see $T/dbuf-b0.err.*)"; fi

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
    okd "double_buffering=1 on the device ($devc): bit-identical to the staged route ($(cat "$T/dbd.log"))"
else bad "double_buffering=1 on the device: $(rcs "$T/dbd-dev" 1)$([ "$ondev" = 0 ] && echo "not on the device; ")$(cat "$T/dbd.log" 2> /dev/null) (see $T/dbd-dev.err.0)"; fi
run dbd-ref 1 -- "$(cfg dbd-ref 4 400 communicator=$devc "${dbo[@]}")"
dsc=$(cfg dbd-stop 4 400 communicator=$devc "${dbo[@]}")
run dbd-stop 1 -- "$dsc" &
# One rank of a CPU build (a dry run) does 400 updates in about 2 s: signalled early.
for _ in $(seq 600); do grep -aq "^$([ "$DRY" = 1 ] && echo 5 || echo 50): loss" "$T/dbd-stop.out.0" 2> /dev/null && break; sleep 0.05; done
signal_rank1 USR1 "$T/dbd-stop.data" 0
wait
at=$(sed -n 's/.*stopped at iteration \([0-9]*\) .*/\1/p' "$T/dbd-stop.out.0")
first=$(rcs "$T/dbd-stop" 1)
run dbd-stop 1 -- "$dsc"
if all_rc "$T/dbd-ref" 1 0 && [ -n "$at" ] && [ "$first" = "75 " ] && all_rc "$T/dbd-stop" 1 0 &&
   grep -q "resuming from checkpoint .*dbd-stop.ckpt-$at" "$T/dbd-stop.out.0" && "$WCMP" "$(w dbd-stop)" "$(w dbd-ref)" 0 > "$T/dbd-stop.log"; then
    okd "double_buffering=1 on the device stopped by SIGUSR1 at iteration $at, the mean in flight checkpointed, resumed bit-identical to an uninterrupted run ($(cat "$T/dbd-stop.log"))"
else bad "double_buffering=1 on the device, stop: at '$at' with $first; rerun $(rcs "$T/dbd-stop" 1); $(cat "$T/dbd-stop.log" 2> /dev/null) (see $T/dbd-stop.err.0)"; fi
run dbd-f16 1 -- "$(cfg dbd-f16 4 20 communicator=$devc allreduce_grad_dtype=float16 "${dbo[@]}")"
if all_rc "$T/dbd-f16" 1 0 && "$WCMP" "$(w dbd-f16)" "$(w dbd-dev)" 2e-3 > "$T/dbd-f16.log"; then
    okd "double_buffering=1 on the device, float16: within 2e-3 of float32 ($(cat "$T/dbd-f16.log"))"
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
    okd "double_buffering_local=1: one rank bit-identical to fresh steps on the device ($devc: $(cat "$T/dbl-dev.log")) and staged ($(cat "$T/dbl-stg.log")); 2 ranks one model at each save"
else bad "double_buffering_local=1: ranks $(rcs "$T/dbl-dev" 1), $(rcs "$T/dbl-stg" 1), $(rcs "$T/dbl-two" 2)$([ "$ondev" = 0 ] && echo "; not on the device"); $(cat "$T"/dbl-dev.log "$T"/dbl-stg.log 2> /dev/null) (see $T/dbl-dev.err.0, $T/dbl-two.err.*)"; fi

echo "-- 3. a killed rank"
kc=$(cfg kill 4 100000 collective_timeout=20)
t0=$SECONDS
run kill 2 -- "$kc" &
sleep $([ "$DRY" = 1 ] && echo 5 || echo 20)
signal_rank1 KILL "$T/kill.data"
wait
took=$((SECONDS - t0))
# The launcher's own status depends on it: rank 1's shell outlives its
# darknet_mn and exits 0, and MPICH's mpiexec then says 0 where Open MPI's
# says 1; what counts is that the job ended, rank 1 killed, rank 0 not done.
r0=$(cat "$T/kill.rc.0" 2> /dev/null || echo killed)
if [ "$(cat "$T/kill.rc.1" 2> /dev/null)" = 137 ] && [ "$r0" != 0 ] && [ "$(cat "$T/kill.rc")" != 124 ] && [ $took -lt 120 ]; then
    okd "killed rank: the job ended in ${took}s (rank 1 137, rank 0 $r0, mpiexec $(cat "$T/kill.rc"))"
else bad "killed rank: mpiexec $(cat "$T/kill.rc") after ${took}s, ranks $(rcs "$T/kill" 2)"; fi

# The rescue on a GPU: rank 1 stalled (SIGSTOP) once rank 0 reported
# iteration 50; rank 0's watchdog ends the job after collective_timeout=3
# and its rescue thread writes the last completed update from the host
# copies the copy stream made after each update (mn_held.c: it reads host
# memory, with nothing of the GPU but an event query). The rerun of the
# same command resumes past it and ends bit-identical to an uninterrupted
# run (row 2b's: the same cfg but for collective_timeout, which changes no
# update).
echo "-- 3b. the rescue: rank 1 stalled, rank 0 writes the last completed update from its host copy"
rsc=$(cfg resc 4 400 collective_timeout=3)
run resc 2 -- "$rsc" &
for _ in $(seq 600); do grep -aq '^50: loss' "$T/resc.out.0" 2> /dev/null && break; sleep 0.05; done
signal_rank1 STOP "$T/resc.data"
wait
signal_rank1 KILL "$T/resc.data"
last=$(grep -ao '^[0-9]*: loss' "$T/resc.out.0" | tail -1 | cut -d: -f1)
k=$(ls "$T/resc" | sed -n 's/^resc\.ckpt-\([0-9]*\)$/\1/p' | sort -n | tail -1)
said=$(grep -aho "rank 0 ([^)]*): ending: the last completed update, iteration [0-9]*" "$T"/resc.err.* | head -1)
run resc 2 -- "$rsc"
first=$(grep -ao '^[0-9]*: loss' "$T/resc.out.0" | head -1 | cut -d: -f1)
if all_rc "$T/stop-ref" 2 0 && [ -n "$k" ] && [ -n "$last" ] && [ "$k" -ge "$last" ] && [ -n "$said" ] &&
   [ "$first" = $((k + 1)) ] && all_rc "$T/resc" 2 0 && "$WCMP" "$(w resc)" "$(w stop-ref)" 0 > "$T/resc.log"; then
    okd "rescue: rank 1 stalled at iteration $last; ${said%%(*}wrote iteration $k; the rerun starts at $first and ends bit-identical to an uninterrupted run ($(cat "$T/resc.log"))"
else bad "rescue: last reported ${last:-none}, checkpoint ${k:-none}, said '${said:-nothing}', rerun from ${first:-none} ($(rcs "$T/resc" 2)); $(cat "$T/resc.log" 2> /dev/null) (see $T/resc.err.*)"; fi

# GPU_CHECK_OUT: a folder to keep every run's output in (gpu_bundle.sh's
# run.sh), before the sanitizer, the slowest row, and again after it: a
# phase that runs out of time still leaves the runs before it.
keep_runs() { [ -z "${GPU_CHECK_OUT:-}" ] || tar -C "$T" --exclude='*.weights' --exclude='*.ckpt-*' -czf "$GPU_CHECK_OUT/gpu-check-runs.tgz" .; }
keep_runs
echo "-- 4. compute-sanitizer"
if [ "$DRY" = 1 ]; then
    skipped=$((${skipped:-0} + 1)); echo "skip compute-sanitizer: a GPU's (dry run)"
elif command -v compute-sanitizer > /dev/null; then
    for tool in memcheck racecheck; do
        np=$([ $tool = memcheck ] && echo 2 || echo 1)
        sc=$(cfg "san-$tool" 4 3)
        on_ranks "$T/san-$tool" "${SAN_TIMEOUT:-600}" "$np" -- compute-sanitizer --tool "$tool" --error-exitcode 9 "$PROG" "$TASK" train "$(data "san-$tool")" "$sc"
        if all_rc "$T/san-$tool" "$np" 0 && ! grep -q "ERROR SUMMARY: [1-9]\|RACECHECK SUMMARY: [1-9]" "$T"/san-$tool.out.*; then
            ok "compute-sanitizer $tool on $np rank(s): $(grep -h -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' "$T"/san-$tool.out.* | head -1)"
        else bad "compute-sanitizer $tool: $(rcs "$T/san-$tool" "$np"); see $T/san-$tool.out.*"; fi
    done
else bad "compute-sanitizer is not on PATH (it comes with the CUDA toolkit)"; fi
echo "device: $(head -1 "$T/devices")"
keep_runs
finish gpu-check
