#!/usr/bin/env bash
# What a rescue writes against the job's node count (issue 50): N ranks as
# N nodes of one rank (MN_RANKS_PER_NODE=1), the tiny classifier of
# tests/e2e/run_stop.sh, rank 1 killed once rank 0 reported iteration 20; the
# ranks left that wrote the last update ("ending: ..."), and the bytes they
# wrote (each writes the whole checkpoint to its own temporary file, then
# commits it or finds it committed). Then SIGTERM to every rank at once (a
# cancel): the orderly checkpoint alone, where the ranks stop together
# within 30% of the kill delay (KILL_DELAY, Open MPI's
# odls_base_sigkill_timeout: 1 s, its default; 30 s is Slurm's KillWait
# default). Writes bench/results/rescue-bytes.txt.
#   bench/rescue_bytes.sh [NODES...]   (default 2 4 8 16; make test's data first)
set -u
cd "$(dirname "$0")/.."
. bench/common.sh
. tests/helpers/lib.sh
OUT=bench/results/rescue-bytes.txt
W=$(pwd)/${BUILD:-build}/bench-rescue
rm -rf "$W" && mkdir -p "$W"
[ -f "$D/train.list" ] || fashion_slice "$D" 256 64
MPI="mpiexec --oversubscribe"
export OMPI_MCA_odls_base_sigkill_timeout=${KILL_DELAY:-1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mn_cfg "$W/r.cfg" learning_rate=0.01 -burn_in -policy -steps -scales max_batches=100000 -- deterministic=1 shuffle=0 \
    collective_timeout=5
run() {   # run NAME NP: in the background, its output in $W/NAME.{out,err}
    printf 'classes=10\ntrain=%s/train.list\nlabels=%s/labels.txt\nbackup=%s/%s\n' "$D" "$D" "$W" "$1" > "$W/$1.data"
    mkdir -p "$W/$1"
    MN_RANKS_PER_NODE=1 timeout 300 $MPI -x MN_RANKS_PER_NODE -n "$2" "$PROG" classifier train "$W/$1.data" "$W/r.cfg" \
        > "$W/$1.out" 2> "$W/$1.err" &
}
pids() { pgrep -f "^$PROG classifier train $W/$1.data"; }
{
    echo "# KILL_DELAY=${KILL_DELAY:-1} bench/rescue_bytes.sh ${*:-2 4 8 16}: $(bench_host), $(date -u +%F)"
    load_line before
    echo "| nodes (1 rank each) | event | checkpoints written | bytes written | checkpoint size |"
    echo "|---:|---|---:|---:|---:|"
    for n in ${*:-2 4 8 16}; do
        run "kill-$n" "$n"
        wait_iter "$W/kill-$n" 20 && signal_rank1 KILL "$W/kill-$n.data"
        wait
        size=$(stat -c %s "$(ls "$W/kill-$n"/r.ckpt-* | head -1)" 2> /dev/null || echo 0)
        k=$(grep -c 'ending: the last completed update' "$W/kill-$n.err")
        echo "| $n | rank 1 killed | $k | $((k * size)) | $size |"
        run "term-$n" "$n"
        if wait_iter "$W/term-$n" 20; then for p in $(pids "term-$n"); do kill -TERM "$p"; done; fi
        wait
        size=$(stat -c %s "$(ls "$W/term-$n"/r.ckpt-* | head -1)" 2> /dev/null || echo 0)
        k=$(($(grep -c 'ending: the last completed update' "$W/term-$n.err") + $(grep -c 'stopped at iteration' "$W/term-$n.out")))
        echo "| $n | SIGTERM to every rank | $k | $((k * size)) | $size |"
    done
    load_line after
} | tee "$OUT"
