#!/usr/bin/env bash
# Backbone vs scratch: cfg/fashion-det.cfg trained for ITERS iterations on NP
# ranks from the classifier's first 5 layers (cfg/fashion.cfg trained for
# CLS_ITERS iterations, cut with partial) and from random weights, same seed,
# both on the machine at once; prints the mAP@0.5 of each on the 200
# validation images. Writes bench/results/backbone-vs-scratch.txt.
set -eu
cd "$(dirname "$0")/.."
NP=${NP:-2}
CLS_ITERS=${CLS_ITERS:-200}
ITERS=${ITERS:-240}
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpiexec --oversubscribe -n $NP"
W=build/bench-backbone
mkdir -p "$W" build/backup
make -s darknet_mn fashion-data fashion-det-data
sed "s/^max_batches=.*/max_batches=$CLS_ITERS/" cfg/fashion.cfg > "$W/cls.cfg"
$MPI ./darknet_mn classifier train cfg/fashion.data "$W/cls.cfg" > "$W/cls.out" 2> "$W/cls.err"
./darknet_mn partial "$W/cls.cfg" build/backup/cls_final.weights "$W/backbone.weights" 5 > /dev/null 2>&1
# Each run its own backup folder: a folder takes one job at a time (its lock).
for v in backbone scratch; do
    sed -e "s/^max_batches=.*/max_batches=$ITERS/" -e "s/^steps=.*/steps=$((ITERS * 3 / 4))/" -e "s/^scales=.*/scales=.1/" \
        -e "s/^eval_interval=.*/eval_interval=$((ITERS / 2))/" cfg/fashion-det.cfg > "$W/det-$v.cfg"
    mkdir -p "$W/backup-$v"
    sed "s|^backup=.*|backup=$W/backup-$v|" data/fashion-det.data > "$W/det-$v.data"
done
$MPI ./darknet_mn detector train "$W/det-backbone.data" "$W/det-backbone.cfg" "$W/backbone.weights" > "$W/backbone.out" 2> "$W/backbone.err" &
$MPI ./darknet_mn detector train "$W/det-scratch.data" "$W/det-scratch.cfg" > "$W/scratch.out" 2> "$W/scratch.err"
wait
{
    echo "# bench/backbone.sh: NP=$NP CLS_ITERS=$CLS_ITERS ITERS=$ITERS, $(date -u +%F), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# classifier: $(grep -E "^$CLS_ITERS: " "$W/cls.out" | cut -d, -f1-2)"
    for v in backbone scratch; do
        echo "## from $v: mpiexec -n $NP ./darknet_mn detector train $W/det-$v.data $W/det-$v.cfg $([ $v = backbone ] && echo "$W/backbone.weights")"
        grep -E "^$ITERS: |eval mAP" "$W/$v.out"
    done
} | tee bench/results/backbone-vs-scratch.txt
