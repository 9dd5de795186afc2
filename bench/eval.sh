#!/usr/bin/env bash
# Scaling of the multi-node evaluator: wall time of `classifier valid` on the
# full Fashion-MNIST test set (10000 images) with cfg/fashion.cfg on 1, 2 and
# 4 ranks, each the best of ROUNDS runs, written with the commands to
# bench/results/classifier-valid-scaling.txt. The weights come from a short
# training run (the accuracy does not matter for the timing; every run must
# print the same counts). Run from make bench (bench/run.sh) or alone.
set -eu
cd "$(dirname "$0")/.."
. bench/common.sh
R=bench/results
W=build/bench-eval
ROUNDS=${BENCH_EVAL_ROUNDS:-3}
ITERS=${BENCH_EVAL_ITERS:-30}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpiexec --oversubscribe"
[ -x ./darknet_mn ] && [ -f build/fashion/.stamp ] || make -s darknet_mn build/fashion/.stamp
mkdir -p "$R" "$W"
sed -e "s/^max_batches=.*/max_batches=$ITERS/" cfg/fashion.cfg > "$W/fashion.cfg"
sed -e "s|^backup=.*|backup=$W|" cfg/fashion.data > "$W/fashion.data"
weights=$W/fashion_final.weights
[ -s "$weights" ] || timeout 600 $MPI -n 2 ./darknet_mn classifier train "$W/fashion.data" "$W/fashion.cfg" > "$W/train.log" 2>&1 \
    || { echo "bench/eval.sh: training the weights failed (see $W/train.log)" >&2; exit 1; }

host="$(bench_host), $(mpirun --version | head -1)"
best_time() {   # best_time NP: the best wall time of ROUNDS runs; every run's result line in $W/valid-np.txt
    local np=$1 best="" t0 t1 t
    for ((i = 0; i < ROUNDS; ++i)); do
        t0=$(date +%s.%N)
        locked timeout 600 $MPI -n "$np" ./darknet_mn classifier valid "$W/fashion.data" "$W/fashion.cfg" "$weights" 2>/dev/null \
            | grep top-1 | sed "s/ on $np ranks//" >> "$W/valid-np.txt"
        t1=$(date +%s.%N)
        t=$(awk "BEGIN{print $t1 - $t0}")
        if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
    done
    echo "$best"
}
: > "$W/valid-np.txt"
out=$R/classifier-valid-scaling.txt
{
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $host"
    load_line before
    echo "# classifier valid, $(wc -l < build/fashion/test.list) test images, cfg/fashion.cfg, weights after $ITERS iterations; best of $ROUNDS runs"
    echo "# command: $MPI -n N ./darknet_mn classifier valid $W/fashion.data $W/fashion.cfg $weights"
    printf '%-6s %10s %8s\n' ranks wall_s speedup
    t1=""
    for n in 1 2 4; do
        t=$(best_time $n)
        [ -n "$t1" ] || t1=$t
        printf '%-6s %10.2f %8.2f\n' $n "$t" "$(awk "BEGIN{print $t1 / $t}")"
    done
    load_line after
    if [ "$(sort -u "$W/valid-np.txt" | wc -l)" = 1 ]; then echo "# every run: $(head -1 "$W/valid-np.txt" | sed 's/^darknet-mn: //')"
    else echo "# WARNING: the runs disagree:"; sort -u "$W/valid-np.txt" | sed 's/^/#   /'; fi
} | tee "$out"
