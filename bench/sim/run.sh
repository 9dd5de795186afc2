#!/usr/bin/env bash
# The communicators on simulated clusters (make bench-sim): bench/sim/mn_sim
# under SimGrid's smpirun on the platforms of bench/sim/platforms/, one
# table row per point (platform, ranks, gradient, dtype): every variant's
# simulated time in ms, the slowest rank's, and the real seconds the
# simulation took. Writes bench/results/sim-<SIM_SET>.txt.
#   SIM_BIN=build/sim/mn_sim SIM_SET=quick|full|testbed|auto|large|huge|placement bench/sim/run.sh
# quick: the points of docs/benchmarks.md (about 20 minutes on the loaded 2-core VM);
# full: every platform, rank count and gradient the simulation fits in this
# machine's memory (hours); testbed: the 2-host testbed at 1 Gbit/s, beside
# its measured figures (a minute); auto: the shapes communicator=auto's rule
# rests on, with the plugin's default pieces (docs/internals.md; minutes);
# large: 256 ranks, and 512 of the plain allreduce against flat, auto's
# choice (about 10 minutes; 30 at a load of 3); huge: 1,024 ranks, those
# two variants; placement: ranks dealt round robin against
# node by node (minutes). SIM_COMMS=a,b,... runs those variants only
# (mn_sim -comms; the others' columns stay empty).
# Why these settings (bench/sim/sim.mk's SIM_CFG):
#  - MN_SHM=0: SimGrid 3.32's MPI_Win_shared_query hands every rank its own
#    segment, so a node's shared window is not shared and the shm legs sum
#    one rank's copy; the in-node legs go through MPI on the loopback link;
#  - smpi/simulate-computation:no: SMPI's own reductions inside
#    MPI_Allreduce cost nothing in simulated time, so the plugin's packing,
#    float16 casts and division cost nothing either: the comparison is of
#    messages alone, and the figures do not depend on this machine's load;
#  - smpi/bw-factor and lat-factor 1: the platform's link figures are the
#    ones bench/scale_model.py assumes, used as they are;
#  - smpi/coll-selector:ompi: Open MPI's choice of algorithm by size.
set -u
cd "$(dirname "$0")/../.." || exit 1
SIM_BIN=${SIM_BIN:-build/sim/mn_sim}
SIM_SET=${SIM_SET:-quick}
SIM_CFG=${SIM_CFG:---cfg=smpi/coll-selector:ompi --cfg=smpi/simulate-computation:no --cfg=smpi/bw-factor:0:1 --cfg=smpi/lat-factor:0:1}
OUT=${SIM_OUT:-bench/results/sim-$SIM_SET.txt}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x "$SIM_BIN" ] || { echo "run.sh: no $SIM_BIN (make bench-sim builds it)" >&2; exit 1; }

# The gradients (float32 bytes, as bench/scale_model.py --count gives them).
declare -A MB=([yolov4-tiny]=24 [yolov3-tiny]=34 [yolov3]=236 [16MiB]=16.777216 [64MiB]=67.108864)

# hosts PER_NODE RANKS [cyclic]: an unrolled hostfile, ranks filling nodes
# n0, n1, ... in turn, or with cyclic dealt round robin (rank r on node
# r mod nodes), as `mpirun --map-by node` or `srun -m cyclic` place them.
hosts() {
    local f=$tmp/hosts-$1-$2-${3:-block} r nodes=$(($2 / $1))
    for ((r = 0; r < $2; ++r)); do
        if [ -n "${3:-}" ]; then echo "n$((r % nodes))"; else echo "n$((r / $1))"; fi
    done > "$f"
    echo "$f"
}

# point PLATFORM RANKS GRAD DTYPE [ENV=VALUE...]: one table row. SIM_PER=k
# among the ENV fills nodes with k ranks instead of all their cores;
# SIM_CYCLIC=1 deals the ranks to the nodes round robin.
point() {
    local plat=$1 np=$2 grad=$3 dtype=$4; shift 4
    local per=8 log=$tmp/log t0 t1 row v cyclic=
    [[ $plat == *64core* ]] && per=64
    [[ $plat == testbed* ]] && per=2
    for v in "$@"; do
        [[ $v == SIM_PER=* ]] && per=${v#SIM_PER=}
        [[ $v == SIM_CYCLIC=1 ]] && cyclic=1
    done
    t0=$(date +%s.%N)
    env MN_SHM=0 "$@" smpirun -platform "bench/sim/platforms/$plat.xml" -hostfile "$(hosts $per "$np" $cyclic)" -np "$np" \
        $SIM_CFG --log=root.thresh:error "$SIM_BIN" -mb "${MB[$grad]}" -fold $([ "$dtype" = float16 ] && echo -half) \
        ${SIM_COMMS:+-comms "$SIM_COMMS"} > "$log" 2>&1
    local rc=$?
    t1=$(date +%s.%N)
    row="| $plat | $np | $grad | $dtype | ${*:-default}${SIM_COMMS:+; only $SIM_COMMS} |"
    for v in allreduce naive flat hierarchical two_dimensional; do
        row+=" $(awk -v v="$v" '$1 == "variant=" v { sub("time_s=", "", $2); printf "%.2f", $2 * 1000 }' "$log") |"
    done
    row+=" $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }') |"
    [ $rc = 0 ] || row+=" exit $rc: $(grep -v '^variant\|^sim' "$log" | head -1)"
    echo "$row" | tee -a "$OUT"
}

{
    echo "# bench/sim/run.sh (SIM_SET=$SIM_SET): $SIM_BIN under smpirun"
    echo "# $(smpirun -version 2>&1 | head -1); $(uname -srm); $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
    echo "# settings: MN_SHM=0 $SIM_CFG; mn_sim -mb MB -fold [-half]"
    echo "# uptime before: $(uptime)"
    echo "# times: the slowest rank's simulated ms per average (median of 1 call after 1 uncounted);"
    echo "# allreduce: one plain MPI_Allreduce of the whole gradient (float16: of its halves); real s: the simulation's wall time"
    echo
    echo "| platform | ranks | gradient | dtype | env | allreduce | naive | flat | hierarchical | two_dimensional | real s |"
    echo "|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|"
} > "$OUT"

# The points quick and auto share: 2 nodes of 8 on each network and shape,
# both dtypes, and yolov3-tiny's gradient.
two_by_eight() {
    point eth25-8gpu-flat 16 yolov4-tiny float32
    point ib100-8gpu-flat 16 yolov4-tiny float32
    point eth25-8gpu-fattree 16 yolov4-tiny float32
    point eth25-8gpu-flat 16 yolov4-tiny float16
    point ib100-8gpu-flat 16 yolov4-tiny float16
    point eth25-8gpu-flat 16 yolov3-tiny float32
}

if [ "$SIM_SET" = testbed ]; then
    # The 2-host testbed at 1 Gbit/s, to set beside what bench/testbed.sh
    # measured there (bench/results/testbed-pieces.txt): 2 x 2 ranks, 16 and
    # 64 MiB, both dtypes, the default pieces and whole gradients.
    for grad in 16MiB 64MiB; do
        for dtype in float32 float16; do
            point testbed-1gbit 4 "$grad" "$dtype"
            point testbed-1gbit 4 "$grad" "$dtype" MN_NET_PIECE_BYTES=67108864
        done
    done
elif [ "$SIM_SET" = quick ]; then
    # 2 nodes of 8 on each network and shape, then 4 nodes: past that the
    # fixed code's runs took over half an hour each on the loaded 2-core VM
    two_by_eight
    point eth25-8gpu-flat 16 yolov3-tiny float16
    point eth25-8gpu-flat 32 yolov4-tiny float32
elif [ "$SIM_SET" = auto ]; then
    # communicator=auto's rule (plugin/coll/mn_comm.c): the default pieces of
    # today's code on 2 to 8 nodes of 4, 8 or 16 ranks, both networks, both
    # dtypes, each gradient; 128 ranks took 712 s before, so 64 is the last.
    point eth25-8gpu-flat 8 yolov4-tiny float32 SIM_PER=4
    point ib100-8gpu-flat 8 yolov4-tiny float32 SIM_PER=4
    two_by_eight
    point eth25-8gpu-flat 16 yolov3 float32
    point eth25-64core-flat 32 yolov4-tiny float32 SIM_PER=16
    point ib100-64core-flat 32 yolov4-tiny float32 SIM_PER=16
    point eth25-8gpu-flat 64 yolov4-tiny float32
    point ib100-8gpu-flat 64 yolov4-tiny float32
elif [ "$SIM_SET" = placement ]; then
    # Ranks dealt to the nodes round robin against node by node: the plain
    # allreduce's partners follow rank order, the network legs' own
    # (mn_rsag.c) the node order. 2 and 8 nodes of 8, 25 GbE and InfiniBand.
    for np in 16 64; do
        for plat in eth25-8gpu-flat ib100-8gpu-flat; do
            point $plat $np yolov4-tiny float32
            point $plat $np yolov4-tiny float32 SIM_CYCLIC=1
        done
    done
elif [ "$SIM_SET" = huge ]; then
    # 1,024 ranks (128 nodes of 8, 25 GbE): the plain allreduce against flat.
    SIM_COMMS=allreduce,flat point eth25-8gpu-flat 1024 yolov4-tiny float32
elif [ "$SIM_SET" = large ]; then
    # Past auto's 128 simulated ranks: nodes of 8 on 25 GbE, yolov4-tiny's
    # gradient; every variant on 256 ranks, the plain allreduce against
    # flat on 512 (those two alone took 471 s; 1,024 would take hours).
    point eth25-8gpu-flat 256 yolov4-tiny float32
    SIM_COMMS=allreduce,flat point eth25-8gpu-flat 512 yolov4-tiny float32
else
    for plat in bench/sim/platforms/*.xml; do
        plat=$(basename "$plat" .xml)
        for np in 16 64 128 256 512 1024; do
            [[ $plat == *64core* && $np -lt 128 ]] && continue
            for grad in yolov4-tiny yolov3-tiny yolov3; do
                [ "$grad" = yolov3 ] && [ "$np" -gt 128 ] && continue   # past this machine's memory and patience
                for dtype in float32 float16; do point "$plat" "$np" "$grad" "$dtype"; done
            done
        done
    done
fi
echo >> "$OUT"
echo "# uptime after: $(uptime)" >> "$OUT"
