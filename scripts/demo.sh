#!/usr/bin/env bash
# make demo: the detector workflow on 2 MPI ranks on CPU, on Fashion-MNIST:
#  1. a short classifier training (cfg/fashion.cfg, CLS_ITERS iterations);
#  2. partial: its first 5 layers become the detector's backbone;
#  3. detector training from the backbone (cfg/fashion-det.cfg, DET_ITERS
#     iterations, mAP on the valid set every DET_ITERS/2), with its chart;
#  4. detector map of the final weights, detector test on one valid image.
# The iteration counts are the cfgs' with max_batches (and the step
# schedule) cut for a demo: copies go to build/demo.
set -eu
cd "$(dirname "$0")/.."
NP=${NP:-2}
CLS_ITERS=${CLS_ITERS:-150}
DET_ITERS=${DET_ITERS:-1300}
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpiexec --oversubscribe -n $NP"
W=build/demo
mkdir -p "$W" build/backup
sed "s/^max_batches=.*/max_batches=$CLS_ITERS/" cfg/fashion.cfg > "$W/fashion.cfg"
sed -e "s/^max_batches=.*/max_batches=$DET_ITERS/" -e "s/^steps=.*/steps=$((DET_ITERS * 8 / 10)),$((DET_ITERS * 9 / 10))/" \
    -e "s/^eval_interval=.*/eval_interval=$((DET_ITERS / 2))/" cfg/fashion-det.cfg > "$W/fashion-det.cfg"
rm -f build/backup/fashion_final.weights build/backup/fashion-det_*.weights
run() {   # run LOG CMD...: show the command, keep its output in build/demo/LOG
    local log=$1; shift
    echo "== $*"
    "$@" > "$W/$log.out" 2> "$W/$log.err" || { tail -20 "$W/$log.err" "$W/$log.out"; exit 1; }
}
run cls $MPI ./darknet_mn classifier train cfg/fashion.data "$W/fashion.cfg"
grep -E "^$CLS_ITERS: " "$W/cls.out"
run partial ./darknet_mn partial "$W/fashion.cfg" build/backup/fashion_final.weights "$W/backbone.weights" 5
cat "$W/partial.out"
run det $MPI ./darknet_mn detector train data/fashion-det.data "$W/fashion-det.cfg" "$W/backbone.weights"
grep -E "^$DET_ITERS: |eval mAP" "$W/det.out"
echo "   chart: build/backup/fashion-det_chart.png, log: build/backup/fashion-det_log.csv"
run map $MPI ./darknet_mn detector map data/fashion-det.data "$W/fashion-det.cfg" build/backup/fashion-det_final.weights
grep "mAP@" "$W/map.out"
img=$(sed -n 1p build/fashion-det/valid.list)
run test ./darknet_mn detector test data/fashion-det.data "$W/fashion-det.cfg" build/backup/fashion-det_final.weights "$img" -out build/predictions
grep -v "^darknet-mn: wrote" "$W/test.out" | head -8
echo "   wrote build/predictions.png"
