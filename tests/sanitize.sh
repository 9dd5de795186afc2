#!/usr/bin/env bash
# The C unit tests under AddressSanitizer and UndefinedBehaviorSanitizer, on
# 1-4 ranks: `make test-sanitize` (or `make test SANITIZE=1`) builds the plugin
# and the tests with -fsanitize=address,undefined into build/cpu-asan first.
# Any sanitizer report fails the run: ASan and UBSan halt on the first error,
# and a log that holds a report fails even when the exit status is 0.
# Leaks are checked in every run; Open MPI's own allocations (kept from
# MPI_Init to exit) are suppressed by library in tests/lsan.supp, which needs
# the slow, complete unwinder on malloc (fast_unwind_on_malloc=0).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
TEST_BIN=${TEST_BIN:-$BUILD/cpu-asan/tests}
T=$(pwd)/$BUILD/test-sanitize
rm -rf "$T" && mkdir -p "$T"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:fast_unwind_on_malloc=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1
export LSAN_OPTIONS=suppressions=$(pwd)/tests/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
MPI="mpiexec --oversubscribe"
REPORT='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|WARNING: AddressSanitizer'
pass=0
fail=0
skipped=0
ran=" "

# run NAME NP [ENV=V...] -- CMD...: NP 0 runs CMD without mpiexec.
run() {
    local name=$1 np=$2; shift 2
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    ran="$ran$(basename "$1") "
    if [ ! -x "$1" ]; then skipped=$((skipped + 1)); echo "SKIP $name: $1 is not built (not in TESTS)"; return; fi
    local launch=(timeout 300) t0=$SECONDS
    [ "$np" = 0 ] || launch+=($MPI -n "$np")
    if env "${envs[@]}" "${launch[@]}" "$@" > "$T/$name.log" 2>&1 && ! grep -Eq "$REPORT" "$T/$name.log"; then
        pass=$((pass + 1)); echo "ok   $name ($((SECONDS - t0))s)"
    else
        fail=$((fail + 1)); echo "FAIL $name (see $T/$name.log)"
        grep -E -m1 -A12 "$REPORT" "$T/$name.log" || tail -5 "$T/$name.log"
    fi
}

echo "== unit tests under ASan+UBSan ($TEST_BIN)"
for n in 1 2 3 4; do
    run "comm-np$n" $n -- "$TEST_BIN/test_comm"
    run "scatter-np$n" $n -- "$TEST_BIN/test_scatter" "$T"
    run "bnavg-np$n" $n -- "$TEST_BIN/test_bnavg" "$T"
done
run comm-forced-2x2 4 MN_RANKS_PER_NODE=2 -- "$TEST_BIN/test_comm"
run comm-forced-2+1 3 MN_RANKS_PER_NODE=2 -- "$TEST_BIN/test_comm"
for n in 1 2 3 4; do
    for s in 1 2; do
        for comm in naive flat; do
            mkdir -p "$T/eq-$comm-$n-$s"
            run "equiv-$comm-np$n-sub$s" $n -- "$TEST_BIN/test_equiv" $comm $s "$T/eq-$comm-$n-$s"
        done
        mkdir -p "$T/sb1-$n-$s"
        run "syncbn-np$n-sub$s" $n -- "$TEST_BIN/test_syncbn" 1 $s "$T/sb1-$n-$s"
    done
done
mkdir -p "$T/sb0"
run no-syncbn-np2 2 -- "$TEST_BIN/test_syncbn" 0 1 "$T/sb0"
run map 1 -- "$TEST_BIN/test_map"
run shapes 0 -- "$TEST_BIN/mn_shapes" "$T/shapes" train 8 1 jpg

# A unit test added to TESTS without an invocation here is named, not silently left out.
for t in "$TEST_BIN"/test_*; do
    [ -x "$t" ] || continue
    case "$ran" in *" $(basename "$t") "*) ;; *) skipped=$((skipped + 1)); echo "SKIP $(basename "$t"): no invocation in tests/sanitize.sh";; esac
done

echo "== sanitizers: $pass passed, $fail failed, $skipped skipped"
[ "$fail" = 0 ]
