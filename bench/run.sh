#!/usr/bin/env bash
# make bench: measurements, side by side in one run, written with the
# commands that made them to bench/results/.
#  1. the plugin's allreduce of yolov3-tiny's full gradient against a bare
#     MPI_Allreduce of the same bytes, at 2 and 4 ranks;
#  2. a size sweep (4 B .. 256 MiB) at 2 and 4 ranks;
#  3. one-rank ./darknet_mn against stock Darknet (same source, unpatched,
#     same flags) training the same cfg and data on the same core;
#  4. the failure handling's cost in training;
#  5. the replica check's cost against the gradient allreduce, at 1, 2 and 4 ranks;
#  6. training speed against stock Darknet and PyTorch DDP (bench/speed.sh).
# BENCH_PARTS picks some: "allreduce stock failure replica speed" (the default: all).
# Timing runs hold /work/bench.lock (bench/common.sh).
set -eu
parts=" ${BENCH_PARTS:-allreduce stock failure replica speed} "
want() { [[ $parts == *" $1 "* ]]; }
cd "$(dirname "$0")/.."
. bench/common.sh
R=bench/results
mkdir -p "$R"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpiexec --oversubscribe"
host="$(bench_host), $(mpirun --version | head -1)"
runs=${BENCH_RUNS:-3}
record() {   # record FILE CMD...: run CMD $runs times, separately, keep each stdout with a header
    local f=$1 k; shift
    echo "== $f"
    for k in $(seq 1 "$runs"); do
        echo "## run $k of $runs, $(date -u +%Y-%m-%dT%H:%MZ) on $host"; echo "# command: $*"
        locked bash -c '. bench/common.sh; load_line before; "$@" 2>/dev/null; load_line after' _ "$@"
    done | tee "$R/$f"
}
tiny=third_party/darknet-cpu/cfg/yolov3-tiny.cfg
if want allreduce; then
    for n in 2 4; do
        record "allreduce-yolov3-tiny-np$n.txt" $MPI -n $n ./darknet_mn bench allreduce $tiny -iters 30
    done
    for n in 2 4; do
        record "allreduce-sweep-np$n.txt" $MPI -n $n ./darknet_mn bench allreduce -iters 20
    done
fi
if want replica; then
    for n in 1 2 4; do
        record "replica-check-yolov3-tiny-np$n.txt" $MPI -n $n ./darknet_mn bench replica $tiny -iters 20
    done
fi

# 3. darknet-mn on one rank vs stock Darknet, one core each, same cfg and data.
iters=${BENCH_ITERS:-60}
rounds=${BENCH_ROUNDS:-5}
W=build/bench
rm -rf "$W" && mkdir -p "$W/backup" && : > "$W/pairs"
sed -e '/^\[distributed\]/,$d' -e "s/^max_batches=.*/max_batches=$iters/" cfg/fashion.cfg > "$W/fashion.cfg"
sed -e "s|^backup=.*|backup=$W/backup|" cfg/fashion.data > "$W/fashion.data"
stock=third_party/darknet-stock/darknet
want speed && ./bench/speed.sh
want stock || want failure || exit 0
run_timed() {   # prints wall seconds of CMD on core 0 (not the wait for the lock)
    locked /usr/bin/time -f %e -o "$W/time" taskset -c 0 "$@" > /dev/null 2>&1 || { echo "bench: $* failed" >&2; return 1; }
    tail -1 "$W/time"
}
want stock && {
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $host"
    load_line before
    echo "# $iters iterations of cfg/fashion.cfg (batch $(sed -n 's/^batch=//p' "$W/fashion.cfg")) on core 0, alternating, $rounds rounds each"
    echo "# commands: taskset -c 0 $stock classifier train $W/fashion.data $W/fashion.cfg"
    echo "#           taskset -c 0 ./darknet_mn classifier train $W/fashion.data $W/fashion.cfg"
    printf '%-6s %10s %10s %8s\n' round stock_s mn_s ratio
    for round in $(seq 1 $rounds); do
        s=$(run_timed $stock classifier train "$W/fashion.data" "$W/fashion.cfg")
        m=$(run_timed ./darknet_mn classifier train "$W/fashion.data" "$W/fashion.cfg")
        printf '%-6s %10.2f %10.2f %8.3f\n' $round "$s" "$m" "$(awk "BEGIN{print $m / $s}")"
        echo "$s $m" >> "$W/pairs"
    done
    awk '{ s += $1; m += $2 } END { printf "total  %10.2f %10.2f %8.3f\n", s, m, m / s }' "$W/pairs"
    load_line after
} | tee "$R/one-rank-vs-stock.txt"

# 4. Failure-handling costs on the demo network, 2 ranks: the collective
#    watchdog (collective_timeout=300, the default) against none (0), and a
#    checkpoint every 10 iterations; variants alternate, 3 rounds, the median
#    of each run's per-iteration times, then the median over rounds.
want failure && {
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $host"
    load_line before
    echo "# $iters iterations of cfg/fashion.cfg on 2 ranks (global batch 128), 3 alternating rounds"
    echo "# command: $MPI -n 2 ./darknet_mn classifier train $W/fashion.data $W/v.cfg   (v.cfg = cfg/fashion.cfg + the variant's keys)"
    variants=("collective_timeout=0" "collective_timeout=300" "collective_timeout=0 checkpoint_interval=10")
    for round in 1 2 3; do
        for i in 0 1 2; do
            v=${variants[$i]}
            sed -e "s/^max_batches=.*/max_batches=$iters/" cfg/fashion.cfg > "$W/v.cfg"
            printf '%s\n' $v >> "$W/v.cfg"
            rm -rf "$W/backup" && mkdir -p "$W/backup"
            if ! locked $MPI -n 2 ./darknet_mn classifier train "$W/fashion.data" "$W/v.cfg" 2> "$W/v$i.$round.err" > "$W/v$i.$round.out"; then
                echo "# round $round of '$v' failed: $(grep -m1 darknet-mn "$W/v$i.$round.err")"
                continue
            fi
            sed -n 's/.*, \([0-9.]*\) img\/s,.*/\1/p' "$W/v$i.$round.out" | awk '{ print 1000 * 128 / $1 }' | sort -n |
                awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }' >> "$W/v$i.ms"
        done
    done
    printf '%-44s %12s %8s\n' variant ms_per_iter vs_none
    base=$(sort -n "$W/v0.ms" | sed -n 2p)
    for i in 0 1 2; do
        m=$(sort -n "$W/v$i.ms" | sed -n 2p)
        printf '%-44s %12.1f %8.3f\n' "${variants[$i]}" "$m" "$(awk "BEGIN{print $m / $base}")"
    done
    echo "# rounds (ms/iter): $(for i in 0 1 2; do echo -n "[${variants[$i]}: $(tr '\n' ' ' < "$W/v$i.ms")] "; done)"
    echo "# checkpoint cost, from the run's own report:"
    grep -h '^checkpoint' "$W"/v2.*.out | head -3 | sed 's/^/#   /'
    load_line after
} 2>&1 | tee "$R/failure-handling-overhead.txt"
true
