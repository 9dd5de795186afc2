#!/usr/bin/env bash
# Where one rank's training step goes (issue 24): ./darknet_mn on 1 rank
# under perf (cpu-clock samples at 999 Hz, every thread of the process, the
# loader's included), the samples sorted by function into kinds and phases,
# as ms of CPU per update (samples / 999 / updates; the start-up's share is
# in "start-up, other"). Nets: cfg/fashion.cfg (batch norm), cfg/fashion-nobn.cfg
# (no batch norm, wider), cfg/fashion-det.cfg (detector); each with
# Darknet's im2col + OpenBLAS (MN_DNNL=0) and with oneDNN (MN_DNNL=1).
# PROFILE_NETS, PROFILE_UPDATES_CLS / _DET and BENCH_RESULTS override.
set -u
cd "$(dirname "$0")/.."
. bench/common.sh
R=${BENCH_RESULTS:-bench/results}
W=build/bench-profile
NETS=${PROFILE_NETS:-fashion fashion-nobn fashion-det}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$R" "$W"
rm -f "$W/wall"

prepare() {   # prepare NET UPDATES: the cfg and data of a profiled run
    local net=$1 data=cfg/fashion.data
    [ "$net" = fashion-det ] && data=data/fashion-det.data
    sed "s|^backup=.*|backup=$W/backup|" "$data" > "$W/$net.data"
    sed -e "s/^max_batches=.*/max_batches=$2/" -e '/^eval_interval=/d' -e '/^backup_interval=/d' "cfg/$net.cfg" > "$W/$net.cfg"
    printf 'eval_interval=0\nbackup_interval=100000\n' >> "$W/$net.cfg"
}

{
echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $(bench_host)"
load_line before
echo "# made by: PROFILE_NETS=\"$NETS\" bench/profile.sh; mn: $(git describe --always --dirty 2>/dev/null)"
echo "# one rank, perf record -e cpu-clock -F 999 (every thread), ms of CPU per update by kind; 'wall' is the"
echo "# run's wall ms per update (start-up included); loader threads overlap compute, so kinds add up past it"
for net in $NETS; do
    task=classifier n=${PROFILE_UPDATES_CLS:-200}
    [ "$net" = fashion-det ] && task=detector n=${PROFILE_UPDATES_DET:-20}
    prepare "$net" "$n"
    for v in 0 1; do
        rm -rf "$W/backup" && mkdir -p "$W/backup"
        t0=$(date +%s.%N)
        MN_DNNL=$v mpiexec -x MN_DNNL -n 1 perf record -q -e cpu-clock -F 999 -o "$W/$net-$v.perf" -- \
            ./darknet_mn $task train "$W/$net.data" "$W/$net.cfg" > "$W/$net-$v.out" 2>&1 || { echo "# $net MN_DNNL=$v failed: see $W/$net-$v.out"; continue; }
        t1=$(date +%s.%N)
        perf report -i "$W/$net-$v.perf" -n --no-children --sort dso,symbol --stdio 2>/dev/null | perf_kind |
            awk -F'\t' -v n="$n" '{ printf "%s\t%.2f\n", $1, $2 / 999 * 1000 / n }' > "$W/$net-$v.kinds"
        echo "$net $v $(awk -v a="$t0" -v b="$t1" -v n="$n" 'BEGIN { printf "%.1f", (b - a) * 1000 / n }')" >> "$W/wall"
    done
    echo
    echo "## cfg/$net.cfg, $n updates, batch $(sed -n 's/^batch=//p' "cfg/$net.cfg"): ms of CPU per update"
    printf '%-48s %12s %12s\n' kind im2col+BLAS oneDNN
    cat "$W/$net-0.kinds" "$W/$net-1.kinds" | cut -f1 | sort -u | while read -r k; do
        a=$(awk -F'\t' -v k="$k" '$1 == k { print $2 }' "$W/$net-0.kinds")
        b=$(awk -F'\t' -v k="$k" '$1 == k { print $2 }' "$W/$net-1.kinds")
        printf '%-48s %12s %12s\n' "$k" "${a:--}" "${b:--}"
    done | sort -t$'\t' -k1,1
    for v in 0 1; do
        printf '%-48s %12s\n' "total (MN_DNNL=$v)" "$(awk -F'\t' '{ t += $2 } END { printf "%.2f", t }' "$W/$net-$v.kinds")"
    done
    printf '%-48s %12s %12s\n' "wall ms per update" "$(awk -v n="$net" '$1 == n && $2 == 0 { print $3 }' "$W/wall")" \
        "$(awk -v n="$net" '$1 == n && $2 == 1 { print $3 }' "$W/wall")"
done
load_line after
} | tee "$R/profile-step.txt"
