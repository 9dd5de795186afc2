#!/usr/bin/env bash
# What a restart costs: seconds from a lost node (or host) to the first
# iteration of the rerun, and the iterations done twice, for both ways a
# job carries on by itself: scripts/mn_rerun.sh under mpiexec on the two-host
# testbed, and scripts/darknet_mn.sbatch requeued by Slurm (scripts/slurm.sh).
# The cases are the tests' own (tests/cluster/cluster_rerun.sh, tests/cluster/cluster_slurm.sh), run
# ROUNDS times each, one after the other. Writes bench/results/restart.txt.
#   bench/restart.sh [ROUNDS]   (default 3; root; make test's data first)
set -u
cd "$(dirname "$0")/.."
. bench/common.sh
ROUNDS=${1:-3}
OUT=bench/results/restart.txt
W=${BUILD:-build}/bench-restart
rm -rf "$W" && mkdir -p "$W"
{
    echo "# bench/restart.sh $ROUNDS: $(bench_host), $(date -u +%F)"
    load_line before
    for r in $(seq "$ROUNDS"); do
        for f in tests/cluster/cluster_rerun.sh tests/cluster/cluster_slurm.sh; do
            t=$(basename "$f" .sh); t=${t#*_}
            bash "$f" > "$W/r$r-$t.log" 2>&1 || echo "# round $r, $t: a check failed (see $W/r$r-$t.log)"
            # "     NAME: S s from the kill to ...; N iterations done twice"
            sed -n "s/^     \([a-z0-9]*\): \([0-9.]*\) s from the \(kill\|signal\) to .*; \([0-9-]*\) iterations done twice$/$t \1 round $r: \2 s, \4 iterations twice/p" "$W/r$r-$t.log"
        done
    done
    load_line after
} | tee "$OUT"
