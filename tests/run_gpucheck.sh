#!/usr/bin/env bash
# The GPU check's logic without a GPU (issue 51): scripts/gpu_check.sh with
# GPU_CHECK_DRY=1 on each base's CPU build (sync_bn=1 in the equivalence
# rows, as on their GPU builds; hank-ai's rows train the tiny detector), so
# that every row, its bounds and its result lines have run before a lent
# GPU runs them. Each row must pass; compute-sanitizer is counted skipped.
# GPUCHECK_BASES: the bases to check (default all three; a base whose CPU
# build is not there is skipped: make test builds pjreddie's and, in
# tests/run_alexeyab.sh, AlexeyAB's; make test-hankai runs this for hank-ai's).
# Run by tests/run.sh (T, BUILD, MPI set there), or alone from the repository root.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T"
check() {   # check BASE PROG
    local log=$T/gpucheck-$1.log
    if BUILD=$BUILD DARKNET=$1 PROG=$2 GPU_CHECK_DRY=1 bash scripts/gpu_check.sh > "$log" 2>&1; then
        ok "gpu_check.sh dry run on $1's CPU build: $(grep -c '^ok ' "$log") rows ok, $(grep -c '^skip ' "$log") skipped (a GPU's)"
    else bad "gpu_check.sh dry run on $1's CPU build: $(grep -m3 '^FAIL\|gpu-check:' "$log" | cut -c1-300) (see $log)"; fi
}
for base in ${GPUCHECK_BASES:-pjreddie alexeyab hankai}; do
    case $base in
        pjreddie) p=$PROG ;;
        *) p=$BUILD/$base-cpu/darknet_mn ;;
    esac
    if [ -x "$p" ]; then check "$base" "$p"
    else skipped=$((${skipped:-0} + 1)); echo "skip gpu_check.sh dry run on $base's base: $p not built"; fi
done
finish gpucheck
