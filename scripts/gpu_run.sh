#!/usr/bin/env bash
# The bundle's run (docs/gpu-check.md), copied into it as run.sh by
# scripts/gpu_bundle.sh. On the GPU machine, from a clone of this
# repository: bash BUNDLE/run.sh [OUT]. With GPU_REHEARSAL=1, on a machine
# without a GPU, the same plan on the CPU builds the bundle carries in
# bin/cpu/ (the check's rows in their dry form, GPU_CHECK_DRY=1): the same
# data, folders, cuts and tally, and the budget the Env below gives, so
# that a lent GPU finds the run itself working.
#
# The plan: a probe (each build's info on 1 and 2 ranks, one bench step),
# one phase a base (scripts/gpu_check.sh: the forks' first, which YOLO's
# users train on), then each fork's speed row (scripts/gpu_speed.sh). Every
# phase starts with two tokens in its environment, the run's and its own,
# which each process it starts inherits (MPICH's launcher puts every rank
# in a session of its own, out of reach of a process group's kill). When a
# phase ends, or its seconds are spent, every process carrying its token is
# stopped, then killed: nothing of a phase outlives it, nor of the run.
#
# OUT gets run.log (everything), gpu-speed.txt, and per base
# <base>/check.log (its rows, as they come) and <base>/runs.tgz (its runs'
# outputs, renewed after each row): the 8 files a lent machine sends back.
# The last lines: a tally per base, then the verdict; exit 0 only on PASS.
# Env: RUN_S (the whole, 420 s), PROBE_S (30), PHASE_S (95), SPEED_S (40,
# one round of each run), SAN_TIMEOUT (25, each compute-sanitizer run),
# WORK (the runs' scratch folder, BUNDLE/work).
set -u
B=$(cd "$(dirname "$0")" && pwd)
O=${1:-$B/out}
mkdir -p "$O" && O=$(cd "$O" && pwd)
REH=${GPU_REHEARSAL:-0}
RUN_S=${RUN_S:-420} PROBE_S=${PROBE_S:-30} PHASE_S=${PHASE_S:-95} SPEED_S=${SPEED_S:-40}
W=${WORK:-$B/work}
BASES="alexeyab hankai pjreddie" FORKS="alexeyab hankai"
rm -rf "$W" "$O/run.log" "$O/gpu-speed.txt" && mkdir -p "$W"
say() { echo "$*" | tee -a "$O/run.log"; }
end=$((SECONDS + RUN_S))
want=$((PROBE_S + 3 * PHASE_S + 2 * SPEED_S))
say "== bundle: $B; budget: probe $PROBE_S s + 3 phases x $PHASE_S s + 2 speed rows x $SPEED_S s = $want s of RUN_S $RUN_S s"
if [ "$want" -gt "$RUN_S" ]; then say "== gpu-check: FAIL (the budget, $want s, is past RUN_S, $RUN_S s)"; exit 1; fi
if [ "$REH" = 1 ]; then
    BIN=$B/bin/cpu
    export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    say "== rehearsal (GPU_REHEARSAL=1): the CPU builds of $BIN, the check's rows dry"
else
    BIN=$B/bin
    # NVIDIA's libraries wherever this machine keeps them (the toolkit, or
    # the wheels a PyTorch image carries), CUDA 13's names or 12's: the
    # probe's ldd says which the builds miss.
    nv=$(for l in libcudart.so.13 libcudart.so.12 libcublas.so.13 libcublas.so.12 libcurand.so.10 libcudnn.so.9 libnccl.so.2; do
             find /usr/local/cuda*/ /usr/lib /opt /usr/local/lib -name "$l" 2> /dev/null | head -1
         done | xargs -r -n1 dirname | awk '!seen[$0]++' | paste -sd:)
    export LD_LIBRARY_PATH=$B/lib${nv:+:$nv}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    say "== NVIDIA's libraries from: ${nv:-none found}"
fi
export PATH=$B/bin:/usr/local/cuda/bin:$PATH
# The fashion slice's lists name the images where the bundle was made.
for s in train test; do sed -i "s|^.*/$s/|$B/fashion/$s/|" "$B/fashion/$s.list"; done

run_token=mn-bundle-$$-$RANDOM
# stop_all NAME VALUE: stops, then kills, every process whose environment
# holds NAME=VALUE, until none is left; prints how many there were.
stop_all() {
    local pids n=0
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        pids=$(grep -lzx "$1=$2" /proc/[0-9]*/environ 2> /dev/null | cut -d/ -f3)
        [ -n "$pids" ] || break
        n=$((n + $(wc -w <<< "$pids")))
        kill -STOP $pids 2> /dev/null
        kill -KILL $pids 2> /dev/null
        sleep 0.2
    done
    echo "$n"
}
alive() { local s; s=$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2> /dev/null); [ -n "$s" ] && [ "$s" != Z ]; }
# phase NAME SECONDS LOG CMD...: CMD within SECONDS (or what is left of
# RUN_S), its output appended to LOG; then every process it left is ended.
# Returns CMD's status, 124 when cut, 125 when RUN_S left no time for it.
phase() {
    local name=$1 s=$2 log=$3 pid rc left tok=$1-$RANDOM n; shift 3
    left=$((end - SECONDS))
    if [ "$left" -lt 10 ]; then say "== $name: not run: RUN_S ($RUN_S s) spent"; return 125; fi
    [ "$left" -gt "$s" ] && left=$s
    MN_BUNDLE_RUN=$run_token MN_BUNDLE_PHASE=$tok "$@" >> "$log" 2>&1 &
    pid=$!
    local dl=$((SECONDS + left))
    while alive $pid && [ $SECONDS -lt $dl ]; do sleep 1; done
    alive $pid && rc=124
    n=$(stop_all MN_BUNDLE_PHASE "$tok")
    wait $pid
    rc=${rc:-$?}
    if [ "$rc" = 124 ]; then say "== $name: cut at $left s; its $n processes ended"
    elif [ "$n" != 0 ]; then say "== $name: $n processes it left running ended"; fi
    return "$rc"
}

probe() {
    [ "$REH" = 1 ] && echo "no GPU: a rehearsal" || { nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; }
    for p in "$BIN"/darknet_mn*; do
        echo "-- $p"
        ldd "$p" | grep -E "not found|cudnn|nccl|cublas|cudart|mpich"
        timeout 20 mpiexec.hydra -n 1 "$p" info; echo "info on 1 rank: exit $?"
        timeout 20 mpiexec.hydra -n 2 "$p" info; echo "info on 2 ranks: exit $?"
    done
    # A figure, not a check: one rank's training step on the demo's detector.
    timeout 20 mpiexec.hydra -n 1 "$BIN/darknet_mn" bench step cfg/fashion-det.cfg -iters 20; echo "bench step: exit $?"
}
phase probe "$PROBE_S" "$W/probe.log" probe < /dev/null
cat "$W/probe.log" >> "$O/run.log"
cat "$W/probe.log"

# One phase a base: its rows' count from the check itself (GPU_CHECK_PLAN=1).
declare -A rows
for base in $BASES; do
    p=$BIN/darknet_mn$([ $base = pjreddie ] || echo "-$base")
    mkdir -p "$O/$base"
    rm -f "$O/$base/check.log" "$O/$base/runs.tgz"
    env=(BUILD=build DARKNET=$base PROG=$p MPI=mpiexec.hydra WCMP=$B/bin/mn_wcmp GPU_DATA=$B/fashion GPU_DET_DATA=$B/shapes
         GPU_CHECK_OUT=$O/$base GPU_CHECK_WORK=$W/$base GPU_CHECK_DRY=$REH SAN_TIMEOUT=${SAN_TIMEOUT:-25})
    rows[$base]=$(env "${env[@]}" GPU_CHECK_PLAN=1 bash scripts/gpu_check.sh)
    [[ " $FORKS " == *" $base "* ]] && rows[$base]=$((rows[$base] + 1))   # its speed row
    if [ ! -x "$p" ]; then say "== $base: not in this bundle ($p)"; continue; fi
    say "== $base: ${rows[$base]} rows"
    phase "$base" "$PHASE_S" "$O/$base/check.log" env "${env[@]}" bash scripts/gpu_check.sh < /dev/null
    say "== $base: exit $?"
    cat "$O/$base/check.log" >> "$O/run.log"
    cat "$O/$base/check.log"
done
# The speed rows: each fork's own darknet against darknet-mn on its base
# (hank-ai's with AlexeyAB's yolov4-tiny.cfg: the fork's is the same net).
for base in $FORKS; do
    stock=$BIN/darknet-$base-stock
    if [ ! -x "$stock" ] || [ ! -f "$B/speed/yolov4-tiny.cfg" ]; then say "== speed $base: not in this bundle"; continue; fi
    phase "speed $base" "$SPEED_S" "$O/$base/check.log" env GPU_SPEED_DRY=$REH SPEED_ROUNDS=${SPEED_ROUNDS:-1} STOCK=$stock \
        STOCK_FLAGS=$([ "$REH$base" = 1hankai ] && echo -yes) PROG=$BIN/darknet_mn-$base MPI=mpiexec.hydra CFG=$B/speed/yolov4-tiny.cfg \
        DET_DATA=$B/speed OUT=$O SPEED_WORK=$W/speed-$base bash scripts/gpu_speed.sh < /dev/null
    say "== speed $base: exit $?"
done
left=$(stop_all MN_BUNDLE_RUN "$run_token")
[ "$left" = 0 ] || say "== $left processes of the run were still running: ended"

# The tally: each base's rows against its answers (ok, FAIL, skip lines).
what=
for base in pjreddie alexeyab hankai; do
    log=$O/$base/check.log n=${rows[$base]:-0}
    k=$(grep -c '^ok ' "$log" 2> /dev/null) f=$(grep -c '^FAIL ' "$log" 2> /dev/null) s=$(grep -c '^skip ' "$log" 2> /dev/null)
    k=${k:-0} f=${f:-0} s=${s:-0}
    c=$((n - k - f - s))
    [ $c -lt 0 ] && c=0
    say "== $base: $k of $n rows ok, $f FAIL, $s skipped, $c not run"
    [ "$f" = 0 ] || what+="${what:+; }$base: $f FAIL"
    [ "$c" = 0 ] || what+="${what:+; }$base: $c not run"
done
if [ -z "$what" ]; then say "== gpu-check: PASS"; exit 0; fi
say "== gpu-check: FAIL ($what)"
exit 1
