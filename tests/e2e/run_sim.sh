#!/usr/bin/env bash
# The simulated cluster (bench/sim/, make bench-sim) keeps building and
# running: bench/sim/mn_sim, the plugin's communicators built with SimGrid's
# smpicc, on 16 simulated ranks (2 nodes of 8) of two of bench/sim's
# platforms. Every communicator's mean of known inputs is exact (float32 and
# float16, one gradient or arrays apart, 1 MiB pieces and odd small ones),
# every time is positive and finite, the simulated times repeat to the
# digit, and communicator=auto chooses flat there. A few seconds. Installs
# libsimgrid-dev where it may (root), else skips. Run by tests/run.sh (T,
# MPI set there), or alone.
. "$(dirname "$0")/../helpers/lib.sh"
S=$T/sim
mkdir -p "$S"
SIM_BIN=$BUILD/sim/mn_sim
# As bench/sim/run.sh runs it (it says why): no shared window, messages alone.
SIM_CFG="--cfg=smpi/coll-selector:ompi --cfg=smpi/simulate-computation:no --cfg=smpi/bw-factor:0:1 --cfg=smpi/lat-factor:0:1"

if ! command -v smpicc > /dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libsimgrid-dev; } > "$S/install.log" 2>&1
fi
if ! command -v smpicc > /dev/null 2>&1; then
    skipped=1
    echo "skip the simulation: no smpicc (apt-get install libsimgrid-dev; scripts/deps.sh installs it for make test on Debian)"
    finish "sim"
fi

t0=$SECONDS
if make -s BUILD="$BUILD" "$SIM_BIN" > "$S/build.log" 2>&1; then ok "smpicc builds $SIM_BIN with plugin/core, transport and coll ($((SECONDS - t0)) s)"
else bad "smpicc build of $SIM_BIN (see $S/build.log): $(grep -m2 'error' "$S/build.log")"; finish "sim"; fi

for k in 0 1; do for r in 1 2 3 4 5 6 7 8; do echo "n$k"; done; done > "$S/hosts16"
for r in 1 2 3 4 5 6 7 8; do echo n0; echo n1; done > "$S/hosts16-cyclic"   # ranks dealt round robin

# sim NAME PLATFORM [ENV=VALUE...] -- ARGS...: mn_sim ARGS -check on 16 ranks, output in $S/NAME.out
# (SIM_HOSTS=FILE among the ENV: that hostfile instead of hosts16).
sim() {
    local name=$1 plat=$2 envs=() hosts=$S/hosts16; shift 2
    while [ "$1" != -- ]; do
        if [[ $1 == SIM_HOSTS=* ]]; then hosts=${1#SIM_HOSTS=}; else envs+=("$1"); fi
        shift
    done
    shift
    timeout 120 env MN_SHM=0 "${envs[@]}" smpirun -platform "bench/sim/platforms/$plat.xml" -hostfile "$hosts" -np 16 \
        $SIM_CFG --log=root.thresh:error "$SIM_BIN" -check "$@" > "$S/$name.out" 2>&1
}
# exact NAME: the layout line, the yardstick and four communicators, each
# mean exact and each time a positive finite number.
exact() {
    local o=$S/$1.out n bad_lines
    n=$(grep -c '^variant=\(naive\|flat\|hierarchical\|two_dimensional\) time_s=[0-9.]* max_error=0$' "$o")
    bad_lines=$(awk '/^variant=/ { t = $2; sub("time_s=", "", t); if (!(t + 0 > 0) || t ~ /nan|inf/) print }' "$o")
    grep -q '^sim ranks=16 nodes=2 per_node=8 ' "$o" && grep -q '^variant=allreduce time_s=' "$o" && [ "$n" = 4 ] && [ -z "$bad_lines" ]
}

check() {   # check NAME PLATFORM [ENV...] -- ARGS...
    local name=$1 t0=$SECONDS
    if sim "$@" && exact "$name"; then
        ok "sim $name: 16 ranks, every mean exact ($((SECONDS - t0)) s): $(grep '^variant=' "$S/$name.out" | sed 's/variant=//; s/ time_s=/ /; s/ max_error=0//' | tr '\n' ' ')"
    else bad "sim $name: $(grep -v '^sim' "$S/$name.out" | grep -m3 'BAD\|refused\|rror\|Segm\|exit')"; fi
}

check f32-arena eth25-8gpu-flat -- -floats 100003 -arrays 5
check f16-apart ib100-8gpu-fattree -- -floats 100003 -arrays 7 -scattered -half
check f32-small-pieces eth25-8gpu-flat MN_PIECE_BYTES=4004 -- -floats 100003 -arrays 7 -scattered
check f16-small-pieces ib100-8gpu-flat MN_PIECE_BYTES=4004 -- -floats 30011 -arrays 3 -half
# A network piece larger than the node's window (the whole gradient, as the
# timing runs of docs/benchmarks.md were made): its in-node parts and shards.
check f32-whole eth25-8gpu-flat MN_NET_PIECE_BYTES=67108864 -- -floats 600011 -arrays 5

# SMPI's MPI_Win_shared_query hands every rank its own segment: the window
# check (mn_shm.c) finds the node's window unshared, says so once per
# window, and the in-node legs go through MPI (before it, hierarchical and
# two_dimensional summed one rank's copy 8 times: means off by up to 2.8).
if sim f32-window eth25-8gpu-flat MN_SHM=1 -- -floats 100003 -arrays 5 && exact f32-window &&
   grep -q "^darknet-mn: this MPI's shared-memory window is not shared between the ranks of a node" "$S/f32-window.out"; then
    ok "sim f32-window: an unshared window is found and left: every mean exact"
else bad "sim f32-window: $(grep -v '^sim' "$S/f32-window.out" | grep -m3 'BAD\|refused\|rror\|shared')"; fi

# communicator=auto on 2 simulated nodes of 8: flat, said with its reason,
# the same mean and, the simulation being deterministic, the same time.
if sim f32-auto ib100-8gpu-flat -- -floats 100003 -arrays 5 -comms flat,auto &&
   grep -qx "auto: flat (2 nodes of 8 ranks: fastest or tied on every cluster simulated, 2 to 32 nodes of 2 to 16 ranks (docs/benchmarks.md, simulated clusters))" "$S/f32-auto.out" &&
   grep -q '^variant=auto time_s=[0-9.]* max_error=0$' "$S/f32-auto.out" &&
   [ "$(sed -n 's/^variant=auto time_s=\([0-9.]*\) .*/\1/p' "$S/f32-auto.out")" = "$(sed -n 's/^variant=flat time_s=\([0-9.]*\) .*/\1/p' "$S/f32-auto.out")" ]; then
    ok "sim f32-auto: 16 ranks, auto is flat, its mean exact, its time flat's: $(grep '^auto:' "$S/f32-auto.out")"
else bad "sim f32-auto: $(grep -v '^sim' "$S/f32-auto.out" | head -4)"; fi

# Ranks dealt to the 2 nodes round robin: the network legs' own allreduce
# (mn_rsag.c) pairs ranks by node order, so flat takes what it takes with
# the ranks node by node, while the plain MPI_Allreduce, pairing by rank
# order, crosses the network at every step. Were the legs over the world in
# rank order, flat would be as slow as the plain call.
time_of() { sed -n "s/^variant=$2 time_s=\([0-9.]*\).*/\1/p" "$S/$1.out"; }
if sim f32-block eth25-8gpu-flat -- -floats 1000003 -arrays 3 -comms allreduce,flat &&
   sim f32-cyclic eth25-8gpu-flat SIM_HOSTS="$S/hosts16-cyclic" -- -floats 1000003 -arrays 3 -comms allreduce,flat &&
   grep -q '^variant=flat time_s=[0-9.]* max_error=0$' "$S/f32-cyclic.out" &&
   awk -v b="$(time_of f32-block flat)" -v c="$(time_of f32-cyclic flat)" -v a="$(time_of f32-cyclic allreduce)" \
       'BEGIN { exit !(b > 0 && c <= 1.01 * b && a >= 3 * c) }'; then
    ok "sim f32-cyclic: ranks round robin: flat $(time_of f32-cyclic flat) s (node by node $(time_of f32-block flat)), the plain allreduce $(time_of f32-cyclic allreduce), mean exact"
else bad "sim f32-cyclic: flat $(time_of f32-cyclic flat) s against $(time_of f32-block flat) node by node, the plain allreduce $(time_of f32-cyclic allreduce): $(grep -v '^sim' "$S/f32-cyclic.out" | grep -m3 'BAD\|refused\|rror')"; fi

# The simulation is deterministic: the tables of bench/results/sim-*.txt repeat.
if sim f32-again eth25-8gpu-flat -- -floats 100003 -arrays 5 &&
   [ "$(grep '^variant=' "$S/f32-again.out")" = "$(grep '^variant=' "$S/f32-arena.out")" ]; then
    ok "sim: the simulated times repeat to the digit"
else bad "sim: a second run gave other times: $(diff <(grep '^variant=' "$S/f32-arena.out") <(grep '^variant=' "$S/f32-again.out") | head -3)"; fi

finish "sim"
