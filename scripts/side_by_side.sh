#!/usr/bin/env bash
# scripts/side_by_side.sh CMD...: each CMD in a bash of its own, all at once,
# each one's output kept in build/side-by-side/<n>.log and printed whole once
# all have ended, with its status and seconds; non-zero when any failed.
# .ci/run puts the Slurm and mpiexec testbeds' suites, which spend most of
# their time waiting for daemons, time limits and timeouts, beside the
# sanitizer and fuzzing builds, which want the CPUs (run with nice there).
set -u
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: $0 CMD..." >&2; exit 2; }
L=build/side-by-side
rm -rf "$L" && mkdir -p "$L"
pids=()
for ((i = 1; i <= $#; ++i)); do
    cmd=${!i}
    ( t0=$SECONDS; bash -c "$cmd" > "$L/$i.log" 2>&1; rc=$?
      echo "$rc $((SECONDS - t0))" > "$L/$i.rc" ) &
    pids+=($!)
done
wait "${pids[@]}"
fail=0
for ((i = 1; i <= $#; ++i)); do
    read -r rc s < "$L/$i.rc" || { rc=1; s=?; }
    echo "side_by_side: $ ${!i}"
    cat "$L/$i.log"
    if [ "$rc" = 0 ]; then echo "side_by_side: ok in $s s: ${!i}"
    else echo "side_by_side: FAILED ($rc) after $s s: ${!i}"; fail=1; fi
done
exit $fail
