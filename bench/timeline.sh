#!/usr/bin/env bash
# The timeline's cost: cfg/fashion.cfg on 2 ranks (flat, one node), 60
# iterations, timeline= off and on alternating, 5 rounds; each run's median
# ms per iteration (iterations 3 on), then the median over rounds. Also with
# overlap=1, whose per-layer hook is on in both. Writes
# bench/results/timeline-cost.txt.
set -eu
cd "$(dirname "$0")/.."
. bench/common.sh
R=bench/results W=build/bench-timeline
mkdir -p "$R" && rm -rf "$W" && mkdir -p "$W/backup"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
host="$(uname -n), $(nproc) cores, $(mpirun --version | head -1)"
for v in off on ovoff ovon; do
    sed -e "s/^max_batches=.*/max_batches=60/" -e '/^\[distributed\]/,$d' cfg/fashion.cfg > "$W/$v.cfg"
    printf '[distributed]\ncommunicator=flat\n' >> "$W/$v.cfg"
    case $v in ov*) echo overlap=1 >> "$W/$v.cfg" ;; esac
    case $v in *on) echo "timeline=$W/$v.json" >> "$W/$v.cfg" ;; esac
done
sed -e "s|^backup=.*|backup=$W/backup|" cfg/fashion.data > "$W/f.data"
median() { sort -n | awk '{ a[NR] = $1 } END { print NR ? a[int((NR + 1) / 2)] : "nan" }'; }
ms_it() { sed -n 's/^\([0-9]*\): .*, \([0-9.]*\) img\/s,.*/\1 \2/p' "$1" | awk '$1 >= 3 { print 1000 * 128 / $2 }' | median; }
declare -A t=()
{
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $host"
    load_line before
    echo "# command: mpiexec -n 2 ./darknet_mn classifier train $W/f.data $W/V.cfg"
    echo "#   V.cfg = cfg/fashion.cfg, max_batches=60, communicator=flat; on: timeline=$W/V.json; ov: overlap=1"
    echo "# ms per iteration, each run's median of iterations 3-60"
    printf '%-6s %8s %8s %8s %8s\n' round off on ovoff ovon
    for round in 1 2 3 4 5; do
        printf '%-6s' $round
        for v in off on ovoff ovon; do
            locked mpiexec -n 2 ./darknet_mn classifier train "$W/f.data" "$W/$v.cfg" > "$W/out-$v" 2>&1
            x=$(ms_it "$W/out-$v")
            t[$v]+="$x "
            printf ' %8.1f' "$x"
        done
        echo
    done
    declare -A m=()
    for v in off on ovoff ovon; do m[$v]=$(tr ' ' '\n' <<< "${t[$v]}" | grep . | median); done
    printf '%-6s %8.1f %8.1f %8.1f %8.1f\n' median "${m[off]}" "${m[on]}" "${m[ovoff]}" "${m[ovon]}"
    awk -v a="${m[off]}" -v b="${m[on]}" -v c="${m[ovoff]}" -v d="${m[ovon]}" \
        'BEGIN { printf "# timeline on / off: %.3f blocking, %.3f with overlap=1\n", b / a, d / c }'
    echo "# trace size: $(stat -c %s "$W/on.json") bytes for 60 iterations of 2 ranks"
    load_line after
} | tee "$R/timeline-cost.txt"
