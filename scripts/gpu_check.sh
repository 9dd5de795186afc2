#!/usr/bin/env bash
# The GPU test plan (docs/gpu-check.md), for a machine with at least one
# CUDA GPU: `make gpu-check` (or DARKNET=alexeyab) builds the GPU variant
# and runs, on the tiny classifier and a slice of Fashion-MNIST:
#  1. stream races: 2 ranks with and without CUDA_LAUNCH_BLOCKING=1 give
#     bit-identical weights (the blocking run twice first: if it differs
#     from itself, cuDNN chose a non-deterministic algorithm and the
#     comparison says nothing);
#  2. equivalence: 2 ranks x batch 2 against 1 rank x batch 4, with
#     NVIDIA_TF32_OVERRIDE=0, within 1e-4 (also through pure_nccl and
#     hierarchical where the machine has 2 GPUs);
#  3. a killed rank: kill -9 of rank 1 ends the job within the timeout;
#  4. compute-sanitizer memcheck (2 ranks) and racecheck (1 rank) on a
#     short run: no error reported.
# About 10 minutes on one GPU. Prints one ok/FAIL line each and the device.
# Env: PROG (the GPU build's darknet_mn), BUILD.
. "$(dirname "$0")/../tests/lib.sh"
T=$(pwd)/$BUILD/gpu-check
rm -rf "$T" && mkdir -p "$T"
: "${PROG:?PROG must name the GPU build (make gpu-check sets it)}"
if ! nvidia-smi -L > "$T/devices" 2>&1 || [ ! -s "$T/devices" ]; then
    echo "gpu-check: no CUDA GPU here (nvidia-smi -L: $(head -1 "$T/devices")); nothing was run"; exit 2
fi
gpus=$(grep -c '^GPU ' "$T/devices")
echo "== gpu-check on $(head -1 "$T/devices") ($gpus GPU(s)); $PROG"
fashion_slice "$T/fashion" 256 64 "$T/fashion.log" || { echo "gpu-check: mn_fashion failed (see $T/fashion.log)"; exit 1; }
data() {   # data NAME: a data cfg with its own backup folder
    printf 'classes=10\ntrain=%s/train.list\nvalid=%s/test.list\nlabels=%s/labels.txt\nbackup=%s/%s\ntop=2\n' \
        "$D" "$D" "$D" "$T" "$1" > "$T/$1.data"
    mkdir -p "$T/$1"
    echo "$T/$1.data"
}
cfg() {   # cfg NAME BATCH MAXB [distributed lines...]: the tiny classifier with batch norm
    local f=$T/$1.cfg b=$2 m=$3; shift 3
    mn_cfg "$f" batch="$b" max_batches="$m" '[convolutional]' batch_normalize=1 '[maxpool]' '[connected]' '[softmax]' \
        -- deterministic=1 shuffle=0 "$@"
    echo "$f"
}
# run NAME NP [ENV=V...] -- CFG: classifier training; its weights file is $T/NAME/NAME_final.weights.
run() {
    local name=$1 np=$2 envs=(); shift 2
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    on_ranks "$T/$name" 300 "$np" "${envs[@]}" -- "$PROG" classifier train "$(data "$name")" "$2"
}
w() { echo "$T/$1/$1_final.weights"; }
WCMP=$BUILD/cpu/tests/mn_wcmp
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
    elif "$WCMP" "$(w race-$c-nb)" "$(w race-$c-b1)" 0 > "$T/race-$c.log"; then ok "races $c: bit-identical with and without CUDA_LAUNCH_BLOCKING=1 ($(cat "$T/race-$c.log"))"
    else bad "races $c: the asynchronous run differs from the blocking one ($(cat "$T/race-$c.log")): a stream race"; fi
done

echo "-- 2. N x b against 1 x N*b (NVIDIA_TF32_OVERRIDE=0)"
run eq-one 1 NVIDIA_TF32_OVERRIDE=0 -- "$(cfg eq-one 4 10)"
for c in flat $( [ "$gpus" -ge 2 ] && echo pure_nccl hierarchical ); do
    run "eq-$c" 2 NVIDIA_TF32_OVERRIDE=0 -- "$(cfg "eq-$c" 2 10 communicator=$c)"
    if all_rc "$T/eq-$c" 2 0 && all_rc "$T/eq-one" 1 0 && "$WCMP" "$(w "eq-$c")" "$(w eq-one)" 1e-4 > "$T/eq-$c.log"; then
        ok "equivalence $c: 2 x 2 = 1 x 4 ($(cat "$T/eq-$c.log"))"
    else bad "equivalence $c: $(cat "$T/eq-$c.log" 2> /dev/null) (see $T/eq-$c.err.*)"; fi
done

echo "-- 3. a killed rank"
kc=$(cfg kill 4 100000 collective_timeout=20)
t0=$SECONDS
run kill 2 -- "$kc" &
sleep 20
for p in $(pgrep -f "^$PROG classifier train $T/kill.data"); do   # rank 1's darknet_mn, not its shell
    tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && kill -9 "$p"
done
wait
took=$((SECONDS - t0))
if [ "$(cat "$T/kill.rc")" != 0 ] && [ "$(cat "$T/kill.rc")" != 124 ] && [ $took -lt 120 ]; then
    ok "killed rank: the job ended in ${took}s (mpiexec $(cat "$T/kill.rc")): $(cat "$T"/kill.err.* | grep -m1 darknet-mn)"
else bad "killed rank: mpiexec $(cat "$T/kill.rc") after ${took}s"; fi

echo "-- 4. compute-sanitizer"
if command -v compute-sanitizer > /dev/null; then
    for tool in memcheck racecheck; do
        np=$([ $tool = memcheck ] && echo 2 || echo 1)
        sc=$(cfg "san-$tool" 4 3)
        on_ranks "$T/san-$tool" 600 "$np" -- compute-sanitizer --tool "$tool" --error-exitcode 9 "$PROG" classifier train "$(data "san-$tool")" "$sc"
        if all_rc "$T/san-$tool" "$np" 0 && ! grep -q "ERROR SUMMARY: [1-9]" "$T"/san-$tool.out.*; then
            ok "compute-sanitizer $tool on $np rank(s): $(grep -h -m1 'ERROR SUMMARY' "$T"/san-$tool.out.* | head -1)"
        else bad "compute-sanitizer $tool: $(rcs "$T/san-$tool" "$np"); see $T/san-$tool.out.*"; fi
    done
else bad "compute-sanitizer is not on PATH (it comes with the CUDA toolkit)"; fi
echo "device: $(head -1 "$T/devices")"
finish gpu-check
