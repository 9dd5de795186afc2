#!/usr/bin/env bash
# The per-rank engine's gains (issue 15), each an interleaved comparison in
# one run, written with its commands and the load average before and after:
#  engine-gemm.txt   the gemm calls of one training image of cfg/fashion.cfg
#                    and cfg/fashion-det.cfg, stock loops (BLAS=0) vs OpenBLAS;
#  engine-train.txt  training speed, BLAS=0 vs BLAS=1 and cache_mb=0 vs the
#                    cache, 1 and 2 ranks, on both cfgs.
# Needs: make, make BLAS=0, make build/cpu/bench_gemm, make BLAS=0
# build/cpu-noblas/bench_gemm, make fashion-data fashion-det-data (make
# bench-engine does all of it). ENGINE_PARTS="gemm train" picks; ENGINE_ROUNDS
# (3) the rounds. Timing runs hold the benchmarks' lock (bench/common.sh).
set -eu
cd "$(dirname "$0")/.."
parts=" ${ENGINE_PARTS:-gemm train} "
rounds=${ENGINE_ROUNDS:-3}
R=bench/results W=build/bench-engine
mkdir -p "$R" && rm -rf "$W" && mkdir -p "$W"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
. bench/common.sh
host="$(bench_host)"
header() {   # header FILE: what, where, the load before
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $host" > "$1"
    load_line before >> "$1"
}
footer() {   # footer FILE: the load after and other work's CPU meanwhile
    load_line after >> "$1"
    cat "$1"
}

if [[ $parts == *" gemm "* ]]; then
    f=$R/engine-gemm.txt
    header "$f"
    echo "# command: bench/engine.sh (ENGINE_PARTS=gemm): per cfg, $rounds rounds alternating" >> "$f"
    echo "#   taskset -c 0 build/cpu-noblas/bench_gemm CFG 21   (BLAS=0: Darknet's loops)" >> "$f"
    echo "#   taskset -c 0 build/cpu/bench_gemm CFG 21          (BLAS=1: OpenBLAS sgemm, 1 thread)" >> "$f"
    echo "# each: median of 21 calls per shape, summed over the calls of one training image" >> "$f"
    for cfg in cfg/fashion.cfg cfg/fashion-det.cfg; do
        echo "## $cfg: ms of gemm per training image" >> "$f"
        printf '%-6s %12s %12s %8s\n' round stock_ms blas_ms speedup >> "$f"
        for ((r = 1; r <= rounds; ++r)); do
            locked taskset -c 0 build/cpu-noblas/bench_gemm "$cfg" 21 > "$W/gemm-stock.txt" 2> /dev/null
            locked taskset -c 0 build/cpu/bench_gemm "$cfg" 21 > "$W/gemm-blas.txt" 2> /dev/null
            s=$(sed -n 's/^total per training image: \([0-9.]*\) ms/\1/p' "$W/gemm-stock.txt")
            b=$(sed -n 's/^total per training image: \([0-9.]*\) ms/\1/p' "$W/gemm-blas.txt")
            printf '%-6s %12s %12s %8s\n' "$r" "$s" "$b" "$(awk "BEGIN{printf \"%.2fx\", $s / $b}")" >> "$f"
        done
        echo "## $cfg, last round, per call (stock | blas)" >> "$f"
        paste "$W/gemm-stock.txt" <(awk '{print "|", $6}' "$W/gemm-blas.txt") | grep -v '^total' >> "$f"
    done
    footer "$f"
fi

# train NAME BIN NP TASK CFG DATA: rank 0's output of a training run, ranks bound to a core each.
train() {
    local name=$1 bin=$2 np=$3 task=$4 cfg=$5 data=$6
    rm -rf "$W/backup" && mkdir -p "$W/backup"
    locked timeout 600 mpiexec --bind-to core -n "$np" "$bin" "$task" train "$data" "$cfg" > "$W/$name.out" 2> "$W/$name.err" ||
        echo "bench: $name failed (see $W/$name.err)" >&2
}
# rate NAME SKIP: median img/s of the progress lines after the first SKIP.
rate() {
    sed -n 's/^\([0-9]*\): loss.* \([0-9.]*\) img\/s.*/\1 \2/p' "$W/$1.out" | awk -v s="$2" '$1 > s {print $2}' |
        sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]; else print "?"}'
}

if [[ $parts == *" train "* ]]; then
    f=$R/engine-train.txt
    header "$f"
    # fashion.cfg on a 2048-image list: each rank's shard is sampled again
    # and again within the run, as in any run longer than an epoch (the full
    # list's first epoch decodes every image, cache or not).
    head -2048 build/fashion/train.list > "$W/fashion-2k.list"
    sed -e "s|^train=.*|train=$W/fashion-2k.list|" -e "s|^backup=.*|backup=$W/backup|" cfg/fashion.data > "$W/fashion.data"
    cls() {   # cls NAME MAXB [distributed lines]
        local n=$1 m=$2; shift 2
        sed -e '/^\[distributed\]/,$d' -e "s/^max_batches=.*/max_batches=$m/" cfg/fashion.cfg > "$W/$n.cfg"
        printf '[distributed]\nchart=0\nbackup_interval=100000\nsave_interval=100000\n%s\n' "$*" >> "$W/$n.cfg"
    }
    cls fashion 60 ""
    cls fashion-nocache 60 cache_mb=0
    # the detection demo's cfg and set (2000 images of 128x128), no evaluation
    printf 'classes=10\ntrain=build/fashion-det/train.list\nvalid=build/fashion-det/valid.list\nnames=build/fashion/labels.txt\nbackup=%s/backup\n' "$W" > "$W/det.data"
    det() {
        local n=$1; shift
        sed -e '/^\[distributed\]/,$d' -e 's/^max_batches=.*/max_batches=40/' cfg/fashion-det.cfg > "$W/$n.cfg"
        printf '[distributed]\nchart=0\nbackup_interval=100000\nsave_interval=100000\n%s\n' "$*" >> "$W/$n.cfg"
    }
    det det ""
    det det-nocache cache_mb=0
    {
        echo "# command: bench/engine.sh (ENGINE_PARTS=train), $rounds rounds; every run:"
        echo "#   mpiexec --bind-to core -n NP BIN classifier|detector train DATA CFG"
        echo "# BIN: ./darknet_mn (BLAS=1) or build/cpu-noblas/darknet_mn (BLAS=0); ranks bound to a core each."
        echo "# fashion: cfg/fashion.cfg (batch 64 a rank), 60 updates, list = the first 2048 of build/fashion/train.list"
        echo "# det: cfg/fashion-det.cfg (batch 8 a rank, 128x128), 40 updates, build/fashion-det (2000 images)"
        echo "# figure: median img/s (all ranks) of the progress lines after update 20 (fashion) / 10 (det)"
        echo "# nocache: the same cfg with cache_mb=0 in [distributed]"
        printf '%-6s %-4s %-3s %14s %14s %14s\n' round cfg np stock_gemm blas blas_nocache
    } >> "$f"
    for ((r = 1; r <= rounds; ++r)); do
        for np in 1 2; do
            train s-$np-$r build/cpu-noblas/darknet_mn $np classifier "$W/fashion.cfg" "$W/fashion.data"
            train b-$np-$r ./darknet_mn $np classifier "$W/fashion.cfg" "$W/fashion.data"
            train n-$np-$r ./darknet_mn $np classifier "$W/fashion-nocache.cfg" "$W/fashion.data"
            printf '%-6s %-4s %-3s %14s %14s %14s\n' "$r" fashion $np "$(rate s-$np-$r 20)" "$(rate b-$np-$r 20)" "$(rate n-$np-$r 20)" >> "$f"
            train ds-$np-$r build/cpu-noblas/darknet_mn $np detector "$W/det.cfg" "$W/det.data"
            train db-$np-$r ./darknet_mn $np detector "$W/det.cfg" "$W/det.data"
            train dn-$np-$r ./darknet_mn $np detector "$W/det-nocache.cfg" "$W/det.data"
            printf '%-6s %-4s %-3s %14s %14s %14s\n' "$r" det $np "$(rate ds-$np-$r 10)" "$(rate db-$np-$r 10)" "$(rate dn-$np-$r 10)" >> "$f"
        done
    done
    echo "# the cache's counts of the last 2-rank runs:" >> "$f"
    grep -h '^darknet-mn: image cache' "$W/b-2-$rounds.out" "$W/db-2-$rounds.out" >> "$f" || true
    grep -h '^darknet-mn: rank 0' "$W/b-2-$rounds.out" | head -1 >> "$f" || true
    footer "$f"
fi
