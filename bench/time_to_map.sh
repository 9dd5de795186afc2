#!/usr/bin/env bash
# Time to mAP: how long a Darknet user waits for a detector that works, with
# what they run today and with darknet-mn, on the 2-core machine. Per base,
# one cfg, one data set, one global batch of 16 and one schedule (the demo's:
# PJ_ITERS or AB_ITERS iterations, lr steps at 80%/90%), from the demo's
# backbone:
#   pj-stock  stock pjreddie Darknet (Debian's source, unpatched, OpenMP,
#             OMP_NUM_THREADS=2), one process, batch 16, cfg/fashion-det.cfg
#   pj-mn1    darknet-mn, 1 rank x 16, the same cfg
#   pj-mn2    darknet-mn, 2 ranks x 8
#   ab-stock  AlexeyAB's own ./darknet (its snapshot, unpatched, OPENMP=1,
#             OMP_NUM_THREADS=2) on cfg/yolov4-tiny-fashion.cfg, batch 16
#   ab-mn1, ab-mn2  darknet-mn on AlexeyAB's base, 1 x 16 and 2 x 8
# (stock pjreddie cannot parse yolov4-tiny, hence a cfg per base). Each
# trainer rewrites its backup weights every 100 iterations; bench/snapshots.py
# copies every version with the time since the trainer started, and after all
# runs each copy is scored with detector map on the 200 validation images.
# darknet-mn's in-training evaluation is off (stock has none). Prints per
# system images/s (images over the trainer's wall time), the minutes to the
# first copy at mAP@0.50 >= TARGET, and the final mAP; writes
# bench/results/time-to-map.txt. The runs go one after another under the
# bench lock: they need a quiet machine (the file says how quiet it was).
set -eu
cd "$(dirname "$0")/.."
. bench/common.sh
PJ_ITERS=${PJ_ITERS:-1300}
AB_ITERS=${AB_ITERS:-2400}
TARGET=${TARGET:-0.5}
SYSTEMS=${SYSTEMS:-pj-stock pj-mn1 pj-mn2 ab-stock ab-mn1 ab-mn2}
OUT=${OUT:-bench/results/time-to-map.txt}
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
W=build/bench-ttm
PJ_STOCK=third_party/darknet-stock-omp/darknet
AB_STOCK=third_party/darknet-alexeyab-stock-omp/darknet
AB_MN=build/alexeyab-cpu/darknet_mn
MPI="mpiexec --oversubscribe"
make -s darknet_mn "$PJ_STOCK" "$AB_STOCK" fashion-data fashion-det-data
make -s DARKNET=alexeyab "$AB_MN"
rm -rf "$W" && mkdir -p "$W"
for base in pjreddie alexeyab; do   # the demo's backbones (make demo's first two steps)
    DEMO_UNTIL=backbone DARKNET=$base ./scripts/demo.sh > "$W/backbone-$base.out"
done

# setup SYSTEM: its folder with cfg and data, and its command in $W/SYSTEM/cmd
setup() {
    local sys=$1 d=$W/$1 cfg iters batch backbone prog np watch
    mkdir -p "$d/backup"
    case $sys in
        pj-*) cfg=cfg/fashion-det.cfg iters=$PJ_ITERS backbone=build/demo/backbone.weights ;;
        ab-*) cfg=cfg/yolov4-tiny-fashion.cfg iters=$AB_ITERS backbone=build/demo-alexeyab/backbone.weights ;;
    esac
    case $sys in *-mn2) batch=8 np=2 ;; *-mn1) batch=16 np=1 ;; *) batch=16 np= ;; esac
    # shellcheck disable=SC2046
    sed -e '/^\[distributed\]/,$d' -e "s/^batch=.*/batch=$batch/" -e "s/^subdivisions=.*/subdivisions=1/" \
        $(demo_schedule "$iters") "$cfg" > "$d/det.cfg"
    # darknet-mn: the cfg's [distributed] keys less its evaluation; backup every 100 as stock
    [ -n "$np" ] && printf '\n[distributed]\nseed=1\nbackup_interval=100\neval_interval=0\n' >> "$d/det.cfg"
    sed "s|^backup=.*|backup=$d/backup|" data/fashion-det.data > "$d/det.data"
    case $sys in
        pj-stock) prog="env OMP_NUM_THREADS=2 $PJ_STOCK" watch=det.backup ;;
        ab-stock) prog="env OMP_NUM_THREADS=2 $AB_STOCK" watch=det_last.weights ;;
        pj-*) prog="$MPI -n $np ./darknet_mn" watch=det.backup ;;
        ab-*) prog="$MPI -n $np $AB_MN" watch=det.backup ;;
    esac
    echo "$prog detector train $d/det.data $d/det.cfg $backbone$([ "$sys" = ab-stock ] && echo " -dont_show")" > "$d/cmd"
    echo "$d/backup/$watch" > "$d/watch"
}
train() {   # train SYSTEM: the trainer under bench/snapshots.py, under the bench lock
    local d=$W/$1
    # shellcheck disable=SC2046
    locked python3 bench/snapshots.py "$(cat "$d/watch")" "$d/snap" $(cat "$d/cmd") > "$d/train.out" 2> "$d/train.err" \
        || { echo "$1 failed: $(cat "$d/cmd")" >&2; tail -n 5 "$d/train.err" >&2; exit 1; }
}
seen() { od -A n -t u8 -j 12 -N 8 "$1" | tr -d ' '; }   # images a weights file has seen (format 0.2)
score() {   # score SYSTEM: "seconds images mAP" per copy and for the final weights, in $W/SYSTEM/curve
    local sys=$1 d=$W/$1 prog=./darknet_mn f t m
    case $sys in ab-*) prog=$AB_MN ;; esac
    : > "$d/curve"
    for f in "$d"/snap/*.weights "$d/backup/det_final.weights"; do
        case $f in *_final.weights) t=$(cat "$d/snap/wall") ;; *) t=$(basename "$f" .weights) ;; esac
        m=$($MPI -n 2 "$prog" detector map "$d/det.data" "$d/det.cfg" "$f" 2> /dev/null | sed -n 's/.*mAP@0.50 \([0-9.]*\).*/\1/p')
        echo "$t $(seen "$f") ${m:-?}" >> "$d/curve"
    done
}

for s in $SYSTEMS; do setup "$s"; done
load_line before > "$W/load-before"   # not in $(...): load_line keeps its mark in this shell
start=$(date +%s)
for s in $SYSTEMS; do
    echo "== $s: $(cat "$W/$s/cmd")" >&2
    train "$s"
done
load_line after > "$W/load-after"
took=$(( $(date +%s) - start ))
for s in $SYSTEMS; do score "$s"; done
{
    echo "# bench/time_to_map.sh: $(date -u +%FT%RZ) on $(bench_host)"
    cat "$W/load-before"
    echo "# one global batch of 16; pj: cfg/fashion-det.cfg, $PJ_ITERS iterations; ab: cfg/yolov4-tiny-fashion.cfg, $AB_ITERS iterations;"
    echo "#   lr steps at 80%/90%, from the demo's backbone; training took $took s, one run after another"
    for s in $SYSTEMS; do echo "# $s: $(cat "$W/$s/cmd")"; done
    echo "# each copy of the backup weights (bench/snapshots.py): $MPI -n 2 PROG detector map DATA CFG COPY"
    printf '%-9s %12s %9s %12s %11s %10s %9s\n' system ranks_x_batch images/s "min_to_$TARGET" at_images final_mAP wall_min
    for s in $SYSTEMS; do
        d=$W/$s
        rb=$(awk '/^batch=/ { b = substr($0, 7) } END { print b }' "$d/det.cfg")
        case $s in *-mn2) rb="2 x $rb" ;; *) rb="1 x $rb" ;; esac
        awk -v s="$s" -v rb="$rb" -v target="$TARGET" -v wall="$(cat "$d/snap/wall")" '
            { t = $1; imgs = $2; m = $3 }
            hit == "" && m != "?" && m + 0 >= target + 0 { hit = sprintf("%.1f", t / 60); at = imgs }
            END { printf "%-9s %12s %9.1f %12s %11s %10s %9.1f\n", s, rb, imgs / wall, hit == "" ? "not reached" : hit, at == "" ? "-" : at, m, wall / 60 }' "$d/curve"
    done
    echo "# mAP@0.50 over time (minutes:mAP) of each system's copies, the last its final weights"
    for s in $SYSTEMS; do echo "# $s: $(awk '{ printf "%.1f:%s ", $1 / 60, $3 }' "$W/$s/curve")"; done
    cat "$W/load-after"
} | tee "$OUT"
