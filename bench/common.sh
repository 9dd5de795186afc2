# Sourced by bench/*.sh. Timing runs of different sessions never overlap:
# each runs under flock on BENCH_LOCK (/work/bench.lock where /work exists;
# BENCH_LOCK= for none). Every result file gets the load average before and
# after its runs (load_line).
BENCH_LOCK=${BENCH_LOCK-/work/bench.lock}
locked() {   # locked CMD...: CMD under the lock
    if [ -n "$BENCH_LOCK" ] && [ -d "$(dirname "$BENCH_LOCK")" ]; then flock "$BENCH_LOCK" "$@"; else "$@"; fi
}
load_line() {   # load_line WHEN: "# load average WHEN: ..." and whether other work ran meanwhile
    local l; l=$(cut -d' ' -f1-3 /proc/loadavg)
    echo "# load average $1: $l ($(uptime | sed 's/^ *//'))$(awk -v x="${l%% *}" \
        'BEGIN { if (x > 1.5) printf "; above 1.5: other work ran meanwhile, re-run on a quiet machine" }')"
}
