#!/usr/bin/env bash
# What double buffering costs in accuracy, and what wins it back: the
# classifier cfg/fashion.cfg, 1000 updates at a global batch of 128 with
# burn_in=100, as 1 rank x 128, 2 x 64, and 2 x 64 with the row's
# keys (ROWS; a row is NPxB[-key=value...], a [distributed] key, or net.key
# for one of [net]); SEEDS seeds each;
# top-1 of classifier valid on the 10000 test images. Prints per row the
# top-1 per seed, mean, spread (max - min) and the mean's difference from
# the first row's; writes bench/results/accuracy-dbuf.txt. Runs go one after
# another, so load changes only the time taken. A run whose top-1 is already
# in its folder is kept (the same run gives byte-identical weights); FRESH=1
# starts over.
set -eu
cd "$(dirname "$0")/.."
. bench/common.sh
ITERS=${ITERS:-1000}
SEEDS=${SEEDS:-1 2 3}
ROWS=${ROWS:-1x128 2x64 2x64-double_buffering=1-double_buffering_fresh=0 2x64-double_buffering=1}
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
W=build/bench-dbuf
OUT=${OUT:-bench/results/accuracy-dbuf.txt}
[ "${FRESH:-0}" = 1 ] && rm -rf "$W"
mkdir -p "$W"
MN=${MN:-./darknet_mn}
[ "$MN" = ./darknet_mn ] && make -s darknet_mn
make -s fashion-data

train() {   # train ROW SEED: one run in its own folder, ending in its top-1 line
    local row=$1 seed=$2 np=${1%%x*} rest=${1#*x} d kv
    local b=${rest%%-*}
    d=$W/$row-$seed
    grep -q "top-1" "$d/valid.out" 2> /dev/null && return
    mkdir -p "$d"
    sed -e "s/^batch=.*/batch=$b/" -e "s/^max_batches=.*/max_batches=$ITERS/" -e 's/^\[net\]$/[net]\nburn_in=100/' \
        cfg/fashion.cfg > "$d/cls.cfg"
    printf 'seed=%s\neval_interval=0\n' "$seed" >> "$d/cls.cfg"
    for kv in $(echo "${rest#"$b"}" | tr -- '-' ' '); do
        case $kv in
            net.*) sed -i "s/^\[net\]\$/[net]\n${kv#net.}/" "$d/cls.cfg" ;;   # a [net] key, first: it wins
            *) echo "$kv" >> "$d/cls.cfg" ;;
        esac
    done
    sed "s|^backup=.*|backup=$d|" cfg/fashion.data > "$d/cls.data"
    mpiexec --oversubscribe -n "$np" "$MN" classifier train "$d/cls.data" "$d/cls.cfg" > "$d/train.out" 2> "$d/train.err"
    mpiexec --oversubscribe -n 2 "$MN" classifier valid "$d/cls.data" "$d/cls.cfg" "$d/cls_final.weights" > "$d/valid.out" 2> "$d/valid.err"
}
top1of() { sed -n 's/.*top-1 \([0-9.]*\).*/\1/p' "$W/$1-$2/valid.out" | tail -1; }

start=$(date +%s)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for row in $ROWS; do
    for s in $SEEDS; do train "$row" "$s"; done
    echo "$row: $(seed_vals top1of "$row")($(( $(date +%s) - start )) s)" >&2
done
{
    seed_header bench/dbuf.sh "$load_before" "$start"
    echo "# each run: mpiexec -n NP $MN classifier train DATA $W/ROW-SEED/cls.cfg"
    echo "#   (cfg/fashion.cfg with batch=B, max_batches=$ITERS, burn_in=100, seed=SEED, the row's keys in [distributed]),"
    echo "#   then classifier valid of its final weights on the 10000 test images"
    seed_table top1of top-1 $ROWS
} | tee "$OUT"
