#!/usr/bin/env bash
# The GPU check's logic without a GPU (issue 51): scripts/gpu_check.sh with
# GPU_CHECK_DRY=1 on pjreddie's CPU build and on AlexeyAB's (sync_bn=1 in
# both's equivalence rows, as on their GPU builds), so that every row, its bounds and its result lines have run before a lent
# GPU runs them. Each row must pass; compute-sanitizer is counted skipped.
# Run by tests/run.sh (T, BUILD, MPI set there), or alone from the repository root.
. "$(dirname "$0")/lib.sh"
check() {   # check BASE PROG
    local log=$T/gpucheck-$1.log
    if BUILD=$BUILD DARKNET=$1 PROG=$2 GPU_CHECK_DRY=1 bash scripts/gpu_check.sh > "$log" 2>&1; then
        ok "gpu_check.sh dry run on $1's CPU build: $(grep -c '^ok ' "$log") rows ok, $(grep -c '^skip ' "$log") skipped (a GPU's)"
    else bad "gpu_check.sh dry run on $1's CPU build: $(grep -m3 '^FAIL\|gpu-check:' "$log" | cut -c1-300) (see $log)"; fi
}
check pjreddie "$PROG"
AB=$BUILD/alexeyab-cpu/darknet_mn
if [ -x "$AB" ]; then check alexeyab "$AB"
else skipped=$((${skipped:-0} + 1)); echo "skip gpu_check.sh dry run on AlexeyAB's base: $AB not built (tests/run_alexeyab.sh builds it)"; fi
finish gpucheck
