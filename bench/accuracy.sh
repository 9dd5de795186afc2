#!/usr/bin/env bash
# Distributed detection keeps its accuracy: the demo's detector
# (cfg/fashion-det.cfg cut to ITERS iterations as make demo does, from the
# demo's classifier backbone) at one global batch of 16 and one schedule, as
# 1 rank x 16, 2 x 8, 4 x 4, and 2 x 8 with float16, overlap, sync_bn and
# double buffering (also stale from the first step, and at half the rate
# with and without it); SEEDS seeds each. A row is NPxB[-KEYS], KEYS joined by
# +: float16, lr=R (the rate), mom=M (the momentum), key=value or key (key=1), as in
# 2x8-double_buffering+double_buffering_fresh=0+lr=0.01. Prints each run's
# final mAP@0.50 on the 200 validation images and per row the mean, spread
# (max - min) and the difference of the mean from 1 x 16's; writes
# bench/results/accuracy-det.txt.
# Runs go one after another (1 x 16 two at a time: it uses one core), so the
# machine's load only changes how long it takes, not the figures. A run whose
# map is already in its folder is kept (the figures do not depend on the
# build: the same run gives byte-identical weights), so an interrupted table
# goes on where it stopped; FRESH=1 starts over. PROG: the darknet_mn to
# train with (default ./darknet_mn; a copy lets the tree be rebuilt meanwhile).
set -eu
cd "$(dirname "$0")/.."
. bench/common.sh
ITERS=${ITERS:-1300}
SEEDS=${SEEDS:-1 2 3}
ROWS=${ROWS:-1x16 2x8 4x4 2x8-float16 2x8-overlap 2x8-sync_bn 2x8-double_buffering
    2x8-double_buffering+double_buffering_fresh=0 2x8-double_buffering+double_buffering_fresh=0+lr=0.01 2x8-lr=0.01}
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
W=build/bench-accuracy
PROG=${PROG:-./darknet_mn}
OUT=${OUT:-bench/results/accuracy-det.txt}
[ "${FRESH:-0}" = 1 ] && rm -rf "$W"
mkdir -p "$W" build/backup
make -s darknet_mn fashion-data fashion-det-data
if [ ! -s "$W/backbone.weights" ]; then
    sed "s/^max_batches=.*/max_batches=150/" cfg/fashion.cfg > "$W/cls.cfg"
    mpiexec --oversubscribe -n 2 "$PROG" classifier train cfg/fashion.data "$W/cls.cfg" > "$W/cls.out" 2> "$W/cls.err"
    "$PROG" partial "$W/cls.cfg" build/backup/cls_final.weights "$W/backbone.weights" 5 > /dev/null 2>&1
fi

train() {   # train ROW SEED: one run in its own folder; its log ends in the final map line
    local row=$1 seed=$2 np=${1%%x*} rest=${1#*x} key d
    local b=${rest%%-*}
    key=${rest#"$b"}; key=${key#-}
    d=$W/$row-$seed
    grep -q "mAP@0.50" "$d/map.out" 2> /dev/null && return
    mkdir -p "$d"
    # shellcheck disable=SC2046
    sed -e "s/^batch=.*/batch=$b/" $(demo_schedule "$ITERS") \
        -e "s/^eval_interval=.*/eval_interval=0/" -e "s/^seed=.*/seed=$seed/" cfg/fashion-det.cfg > "$d/det.cfg"
    local IFS=+ k
    for k in $key; do   # [distributed] keys; lr=R and mom=M set [net]'s learning_rate and momentum
        case $k in
            float16) printf '\nallreduce_grad_dtype=float16\n' >> "$d/det.cfg" ;;
            lr=*) sed -i "s/^learning_rate=.*/learning_rate=${k#lr=}/" "$d/det.cfg" ;;
            mom=*) sed -i "s/^momentum=.*/momentum=${k#mom=}/" "$d/det.cfg" ;;
            *=*) printf '\n%s\n' "$k" >> "$d/det.cfg" ;;
            ?*) printf '\n%s=1\n' "$k" >> "$d/det.cfg" ;;
        esac
    done
    IFS=$' \t\n'
    sed "s|^backup=.*|backup=$d|" data/fashion-det.data > "$d/det.data"
    mpiexec --oversubscribe -n "$np" "$PROG" detector train "$d/det.data" "$d/det.cfg" "$W/backbone.weights" > "$d/train.out" 2> "$d/train.err"
    mpiexec --oversubscribe -n 2 "$PROG" detector map "$d/det.data" "$d/det.cfg" "$d/det_final.weights" > "$d/map.out" 2> "$d/map.err"
}
mapof() { sed -n 's/.*mAP@0.50 \([0-9.]*\).*/\1/p' "$W/$1-$2/map.out"; }

start=$(date +%s)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for row in $ROWS; do
    if [ "$row" = 1x16 ]; then   # one core each: two seeds at once
        set -- $SEEDS
        while [ $# -gt 0 ]; do
            train "$row" "$1" & [ $# -gt 1 ] && train "$row" "$2"; wait
            shift; [ $# -gt 0 ] && shift
        done
    else
        for s in $SEEDS; do train "$row" "$s"; done
    fi
    echo "$row: $(seed_vals mapof "$row")($(( $(date +%s) - start )) s)" >&2
done
{
    seed_header bench/accuracy.sh "$load_before" "$start"
    maps=$(for row in $ROWS; do for s in $SEEDS; do echo "$W/$row-$s/map.out"; done; done)
    made=$(echo "$maps" | while read -r f; do [ "$(stat -c %Y "$f")" -ge "$start" ] && echo; done | wc -l)
    echo "# runs trained by this call: $made of $(echo "$maps" | wc -l); the others reused from earlier calls, made" \
         "$(echo "$maps" | xargs stat -c %y | cut -c1-16 | sort | sed -n '1p;$p' | paste -sd' ' | sed 's/ \([0-9-]* [0-9:]*\)$/ to \1/') UTC"
    echo "# each run: mpiexec -n NP ./darknet_mn detector train DATA $W/ROW-SEED/det.cfg $W/backbone.weights"
    echo "#   (cfg/fashion-det.cfg with batch=B, max_batches=$ITERS, steps at 80%/90%, seed=SEED, the row's key),"
    echo "#   then detector map of its final weights on the 200 validation images"
    seed_table mapof mAP@0.50 $ROWS
} | tee "$OUT"
