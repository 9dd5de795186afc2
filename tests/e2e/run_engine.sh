#!/usr/bin/env bash
# The per-rank engine (issue 15): the decoded-image cache and the loader
# threads, on cfg/fashion.cfg (batch norm, flips) with 512 training images.
#  - the cache shared by 8 threads (test_cache): every image as stb decodes
#    it, exact counts;
#  - cache_mb: exact hit/miss/over-budget counts of deterministic runs (the
#    list and the batches are known, so is every image a rank loads); the
#    weights with the cache equal those without, bit for bit, in
#    deterministic and in random (augmenting) mode;
#  - the default cache_mb sized from the job's memory (Slurm's --mem or
#    --mem-per-cpu, a memory cgroup's limit);
#  - loader threads: the startup line gives the cores a rank may use divided
#    by the ranks sharing them.
# Run by tests/run.sh (T, D, TEST_BIN, MPI set there), or alone after make:
# tests/e2e/run_engine.sh makes its own 512-image subset.
. "$(dirname "$0")/../helpers/lib.sh"
suite_folder engine

# setup NAME BATCH MAXB [distributed lines...]: cfg/fashion.cfg with that
# batch and length, and a data cfg of the 512 training images.
setup() {
    local name=$1 b=$2 m=$3; shift 3
    sed -e '/^\[distributed\]/,$d' -e "s/^batch=.*/batch=$b/" -e "s/^max_batches=.*/max_batches=$m/" \
        cfg/fashion.cfg > "$G/$name.cfg"
    printf '[distributed]\n' >> "$G/$name.cfg"
    printf '%s\n' "$@" >> "$G/$name.cfg"
    printf 'classes=10\ntrain=%s/train.list\nvalid=%s/test.list\nlabels=%s/labels.txt\nbackup=%s/%s\n' \
        "$D" "$D" "$D" "$G" "$name" > "$G/$name.data"
}
# run NAME NP [mpiexec options...]: train; rank 0's output in NAME.out, all stderr in NAME.err.
run() {
    local name=$1 np=$2; shift 2
    timeout 120 $MPI "$@" -n "$np" ./darknet_mn classifier train "$G/$name.data" "$G/$name.cfg" > "$G/$name.out" 2> "$G/$name.err"
    echo $? > "$G/$name.rc"
}
cache_line() { grep '^darknet-mn: image cache' "$G/$1.out"; }
# expect_cache NAME HITS KEPT OVER: the summed counts rank 0 reports.
expect_cache() {
    local name=$1 want="$2 hits, $3 decoded and kept, $4 decoded past the budget"
    if [ "$(cat "$G/$name.rc")" = 0 ] && cache_line "$name" | grep -q ": $want;"; then ok "cache $name: $(cache_line "$name" | cut -d: -f3-)"
    else bad "cache $name: want '$want', got '$(cache_line "$name")' (exit $(cat "$G/$name.rc"); see $G/$name.err)"; fi
}
same_weights() {   # same_weights A B: bit for bit
    local a=$G/$1/$1_final.weights b=$G/$2/$2_final.weights
    if "$TEST_BIN/mn_wcmp" "$a" "$b" 0 > "$G/cmp-$1.log" 2>&1; then ok "weights of $1 = $2 bit for bit ($(cat "$G/cmp-$1.log"))"
    else bad "weights of $1 differ from $2: $(cat "$G/cmp-$1.log")"; fi
}

# The cache under 8 loader threads at once (tests/unit/test_cache.c).
if timeout 60 "$TEST_BIN/test_cache" "$D/train.list" > "$G/test_cache.log" 2>&1; then ok "$(head -1 "$G/test_cache.log")"
else bad "test_cache: $(grep -m3 'FAIL\|usage\|test_cache:' "$G/test_cache.log")"; fi

# Deterministic, 2 ranks x batch 4, 100 updates: 800 loads of list
# positions 0..799 mod 512. Rank r reads positions 8k+4r..8k+4r+3: 256
# distinct images each, all 512 decoded once, the 288 loads of the second
# epoch from memory.
setup det-on 4 100 deterministic=1 shuffle=0 cache_mb=64
run det-on 2
expect_cache det-on 288 512 0
setup det-off 4 100 deterministic=1 shuffle=0 cache_mb=0
run det-off 2
expect_cache det-off 0 0 800
same_weights det-on det-off
# One rank, batch 8, 100 updates, cache_mb=1: 1 MiB holds 445 images of
# 28x28x3 bytes (1048576 / 2352). Positions 0..444 are kept, 445..511 are
# decoded past the budget (67, each loaded once), positions 512..799 are
# images 0..287 again: 288 hits.
setup det-small 8 100 deterministic=1 shuffle=0 cache_mb=1
run det-small 1
expect_cache det-small 288 445 67
# The same 1 MiB a rank on 2 ranks (batch 4 each): each rank reads 256 of
# the images, so together they keep all 512.
setup det-small2 4 100 deterministic=1 shuffle=0 cache_mb=1
run det-small2 2
expect_cache det-small2 288 512 0

# Random sampling with augmentation (flips), 2 ranks bound to a core each
# (one loader thread each, so rand() is drawn in one order): the cached
# originals give the weights the decoder gives. 488 loads: 60 updates x 4 x
# 2 ranks and the batch the loader had ready when training ended.
setup rand-on 4 60 seed=3 cache_mb=64
setup rand-off 4 60 seed=3 cache_mb=0
run rand-on 2 --bind-to core
run rand-off 2 --bind-to core
hits=$(cache_line rand-on | sed -n 's/.*: \([0-9]*\) hits, \([0-9]*\) decoded and kept, 0 decoded past.*/\1+\2/p')
if [ -n "$hits" ] && [ $((hits)) = 488 ] && cache_line rand-off | grep -q ': 0 hits, 0 decoded and kept, 488 decoded past'; then
    ok "random mode: 488 loads either way ($(cache_line rand-on | cut -d: -f3 | cut -d';' -f1))"
else bad "random mode counts: '$(cache_line rand-on)' / '$(cache_line rand-off)'"; fi
same_weights rand-on rand-off

# The default cache: a quarter of what the job may use on the node over
# its ranks there, the least of the machine's memory, Slurm's --mem (or
# --mem-per-cpu x the node's cpus) and the cgroup's limit; rank 0 says which.
sized() { grep -o 'image cache [0-9]* MiB ([^)]*)' "$G/$1.out"; }
for m in mem cpu cg; do setup $m 4 2; done
SLURM_MEM_PER_NODE=512 run mem 2 -x SLURM_MEM_PER_NODE
if [ "$(sized mem)" = "image cache 64 MiB (a quarter of 512 MiB, Slurm's --mem, over 2 ranks)" ]; then ok "2 ranks, --mem=512M: $(sized mem)"
else bad "the cache under Slurm's --mem=512M: '$(sized mem)' (exit $(cat "$G/mem.rc"))"; fi
SLURM_MEM_PER_CPU=100 SLURM_CPUS_ON_NODE=4 run cpu 2 -x SLURM_MEM_PER_CPU -x SLURM_CPUS_ON_NODE
if [ "$(sized cpu)" = "image cache 50 MiB (a quarter of 400 MiB, Slurm's --mem-per-cpu x the node's cpus, over 2 ranks)" ]; then
    ok "2 ranks, --mem-per-cpu=100M on 4 cpus: $(sized cpu)"
else bad "the cache under Slurm's --mem-per-cpu: '$(sized cpu)' (exit $(cat "$G/cpu.rc"))"; fi
# A memory cgroup of its own, 768 MiB (v1's memory.limit_in_bytes or
# v2's memory.max), where this machine lets root make one.
CG=
if v1=$(sed -n 's/^[0-9]*:[^:]*memory[^:]*:\(.*\)/\1/p' /proc/self/cgroup) && [ -n "$v1" ] &&
   mkdir "/sys/fs/cgroup/memory${v1%/}/mn-engine-$$" 2> /dev/null; then
    CG=/sys/fs/cgroup/memory${v1%/}/mn-engine-$$; echo $((768 << 20)) > "$CG/memory.limit_in_bytes" || CG=
elif v2=$(sed -n 's/^0::\(.*\)/\1/p' /proc/self/cgroup) && grep -qw memory /sys/fs/cgroup/cgroup.controllers 2> /dev/null &&
     mkdir "/sys/fs/cgroup${v2%/}/mn-engine-$$" 2> /dev/null; then
    CG=/sys/fs/cgroup${v2%/}/mn-engine-$$; echo $((768 << 20)) > "$CG/memory.max" || CG=
fi
if [ -z "$CG" ]; then
    skip "the cgroup's limit: no memory cgroup can be made here"
else
    (echo $BASHPID > "$CG/cgroup.procs" && run cg 2)
    rmdir "$CG" 2> /dev/null
    if [ "$(sized cg)" = "image cache 96 MiB (a quarter of 768 MiB, the job's cgroup limit, over 2 ranks)" ]; then
        ok "2 ranks in a cgroup of 768 MiB: $(sized cg)"
    else bad "the cache in a 768 MiB cgroup: '$(sized cg)' (exit $(cat "$G/cg.rc"))"; fi
fi

# Loader threads: a rank's cores over the ranks sharing them.
line() { grep -o '[0-9]* loader threads\? ([0-9]* cores\?, [0-9]* ranks\? on them)' "$G/$1.out"; }
cores=$(nproc)
want="1 loader thread (1 core, 1 rank on them)"
if [ "$(line rand-on)" = "$want" ]; then ok "2 ranks bound to a core each: $want"; else bad "bound ranks: '$(line rand-on)', want '$want'"; fi
setup thr-np2 4 2 cache_mb=0
setup thr-env 4 2 cache_mb=0
run thr-np2 2 --bind-to none
per=$((cores / 2)); [ $per -lt 1 ] && per=1
if [ "$(line thr-np2 | cut -d' ' -f1)" = "$per" ] && line thr-np2 | grep -q "($cores cores\?, 2 ranks on them)"; then
    ok "2 unbound ranks on $cores cores: $(line thr-np2)"
else bad "unbound ranks: '$(line thr-np2)', want $per threads of $cores cores, 2 ranks"; fi
# One OpenBLAS thread a rank, unless OPENBLAS_NUM_THREADS says otherwise.
gemm() { grep -o 'gemm [^;]*' "$G/$1.out"; }
if [ "$(gemm thr-np2)" = "gemm OpenBLAS sgemm, 1 thread" ]; then
    OPENBLAS_NUM_THREADS=2 run thr-env 2 --bind-to none -x OPENBLAS_NUM_THREADS
    [ "$(gemm thr-env)" = "gemm OpenBLAS sgemm, 2 threads" ] && ok "OpenBLAS: $(gemm thr-np2) a rank; $(gemm thr-env) with OPENBLAS_NUM_THREADS=2" ||
        bad "OPENBLAS_NUM_THREADS=2: '$(gemm thr-env)'"
elif [ "$(gemm thr-np2)" = "gemm Darknet's own (BLAS=0)" ]; then ok "startup line: $(gemm thr-np2)"
else bad "startup line: '$(gemm thr-np2)'"; fi

finish
