#!/usr/bin/env bash
# The GPU check's logic without a GPU (issue 51): scripts/gpu_check.sh with
# GPU_CHECK_DRY=1 on each base's CPU build (sync_bn=1 in the equivalence
# rows, as on their GPU builds; hank-ai's rows train the tiny detector), so
# that every row, its bounds and its result lines have run before a lent
# GPU runs them. Each row must pass; compute-sanitizer is counted skipped.
# With each fork's, its speed row's logic too (scripts/gpu_speed.sh).
# GPUCHECK_BASES: the bases to check (default pjreddie's and AlexeyAB's,
# which make test builds, AlexeyAB's in tests/run_alexeyab.sh; make
# test-hankai runs this for hank-ai's). A base whose CPU build is not there
# is skipped.
# Run by tests/run.sh (T, BUILD, MPI set there), or alone from the repository root.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T"
check() {   # check BASE PROG
    local log=$T/gpucheck-$1.log
    if BUILD=$BUILD DARKNET=$1 PROG=$2 GPU_CHECK_DRY=1 bash scripts/gpu_check.sh > "$log" 2>&1; then
        ok "gpu_check.sh dry run on $1's CPU build: $(grep -c '^ok ' "$log") rows ok, $(grep -c '^skip ' "$log") skipped (a GPU's)"
    else bad "gpu_check.sh dry run on $1's CPU build: $(grep -m3 '^FAIL\|gpu-check:' "$log" | cut -c1-300) (see $log)"; fi
}
BASES=${GPUCHECK_BASES:-pjreddie alexeyab}
for base in $BASES; do
    case $base in
        pjreddie) p=$PROG ;;
        *) p=$BUILD/$base-cpu/darknet_mn ;;
    esac
    if [ -x "$p" ]; then check "$base" "$p"
    else skip "gpu_check.sh dry run on $base's base: $p not built"; fi
done
# A speed row's logic (scripts/gpu_speed.sh) on each fork's CPU builds: the
# fork's own darknet (patched, its hooks unset) as the stock peer.
for base in alexeyab hankai; do
    [[ " $BASES " == *" $base "* ]] || continue
    dk=third_party/darknet-$base-cpu mn=$BUILD/$base-cpu/darknet_mn stock=$dk/darknet
    flags=
    [ $base = hankai ] && stock=$(hankai_cli "$dk") flags=-yes   # its CPU build asks before training
    [ -x "$mn" ] && [ -x "$stock" ] || continue
    [ -f "$BUILD/fashion-det/.stamp" ] || make -s fashion-det-data > "$T/det-data.log" 2>&1
    log=$T/gpuspeed-dry-$base.log
    if GPU_SPEED_DRY=1 STOCK=$(pwd)/$stock STOCK_FLAGS=$flags PROG=$mn CFG=$dk/cfg/yolov4-tiny.cfg DET_DATA=$BUILD/fashion-det \
        OUT=$T/gpuspeed-dry-$base bash scripts/gpu_speed.sh > "$log" 2>&1; then ok "gpu_speed.sh dry run on $base's: $(grep -m1 '^ok ' "$log" | cut -c6-)"
    else bad "gpu_speed.sh dry run on $base's: $(grep -m2 '^FAIL\|gpu-speed:\|failed' "$log" | cut -c1-300) (see $log)"; fi
done
finish gpucheck
