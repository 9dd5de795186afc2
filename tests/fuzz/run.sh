#!/usr/bin/env bash
# Runs libFuzzer targets (make fuzz-short / fuzz-long): each for FUZZ_SECONDS
# on one MPI rank, from its committed seeds (tests/fuzz/corpus/<target>, only
# read) and the inputs it found before (build/fuzz/corpus/<target>). A crash,
# a sanitizer report, a leak or a failed check fails the run; the input lands
# in build/fuzz/artifacts/ with the command that replays it.
# usage: tests/fuzz/run.sh TARGET...
set -u
cd "$(dirname "$0")/../.."
FUZZ=${FUZZ:-build/fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI's own SIGSEGV/SIGABRT handlers would hide crashes from libFuzzer.
export OMPI_MCA_opal_signal=
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1
# Leaks are checked per input (libFuzzer); not at exit, where Open MPI's
# unloaded components leave stacks that no suppression can match.
export LSAN_OPTIONS=suppressions=$(pwd)/tests/sanitize/lsan.supp:print_suppressions=0:leak_check_at_exit=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mkdir -p "$FUZZ/artifacts"
fail=0
for t in "$@"; do
    mkdir -p "$FUZZ/corpus/$t"
    log=$FUZZ/$t.log
    cmd=(mpiexec -n 1 "$FUZZ/$t" -close_fd_mask=2 -timeout=10 -print_final_stats=1
         -artifact_prefix="$FUZZ/artifacts/$t-" "$FUZZ/corpus/$t" "tests/fuzz/corpus/$t")
    timeout $((FUZZ_SECONDS + 120)) "${cmd[@]}" -max_total_time="$FUZZ_SECONDS" > "$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*/[0-9a-zA-Z]*' "$log" | tail -1)
    if [ "$rc" = 0 ] && [ -n "$runs" ]; then
        echo "ok   $t: $runs runs in ${FUZZ_SECONDS}s ($rate/s), $cov"
    else
        fail=1
        echo "FAIL $t (exit $rc, see $log)"
        grep -E -m1 -A15 'ERROR: |check failed|runtime error|deadly signal' "$log"
        art=$(grep -o "Test unit written to [^ ]*" "$log" | tail -1 | cut -d' ' -f5)
        [ -n "$art" ] && echo "     replay: ${cmd[*]:0:4} $art"
    fi
done
[ "$fail" = 0 ]
