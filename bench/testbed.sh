#!/usr/bin/env bash
# Allreduce across 2 hosts x 2 ranks (network namespaces, scripts/testbed.sh),
# with the link unlimited and capped at 1 Gbit/s per host: every communicator,
# float32 and float16, against a bare MPI_Allreduce. Results in bench/results/.
set -u
cd "$(dirname "$0")/.."
R=bench/results
mkdir -p "$R"
tb=scripts/testbed.sh
trap '$tb down > /dev/null' EXIT
host="$(uname -n), $(nproc) cores, $(mpirun --version | head -1)"
parts=" ${TESTBED_PARTS:-sweep dbuf} "   # some of: sweep dbuf
want() { [[ $parts == *" $1 "* ]]; }
want sweep && for rate in "" 1gbit; do
    name=testbed-2x2-${rate:-unlimited}.txt
    $tb up $rate > /dev/null || exit 1
    cmd="scripts/testbed.sh run 4 ./darknet_mn bench allreduce -iters ${ITERS:-8} -max 67108864"
    { echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $host; testbed links: ${rate:-unlimited}"
      echo "# command: scripts/testbed.sh up $rate && $cmd"
      timeout 580 $cmd 2> /dev/null; } | tee "$R/$name"
    $tb down > /dev/null
done

# double_buffering=1 against 0: 2 hosts x 1 rank, links unlimited and capped
# at 1 Gbit/s and 300 Mbit/s. The model is cfg/fashion.cfg with a 1024-unit
# connected layer before the last (a 12.9 MiB gradient, so that the
# allreduce costs about as much as the compute), rate 0.02, 30 iterations;
# the median milliseconds per iteration from rank 0's progress lines
# (iterations 3 on), alternating, 3 rounds.
want dbuf || exit 0
W=build/bench-dbuf
rm -rf "$W" && mkdir -p "$W/backup"
for v in 0 1; do
    sed -e "s/^learning_rate=.*/learning_rate=0.02/" -e "s/^max_batches=.*/max_batches=30/" -e '/^\[distributed\]/,$d' \
        -e 's/^output=10$/output=1024\nactivation=leaky\n\n[connected]\noutput=10/' cfg/fashion.cfg > "$W/db$v.cfg"
    printf '[distributed]\ncommunicator=flat\ndouble_buffering=%s\n' $v >> "$W/db$v.cfg"
done
sed -e "s|^backup=.*|backup=$W/backup|" cfg/fashion.data > "$W/f.data"
ms_per_iter() {   # median over iterations 3.. of 1000 * global batch / img/s
    sed -n 's/^\([0-9]*\): .*, \([0-9.]*\) img\/s,.*/\1 \2/p' "$1" | awk '$1 >= 3 { print 1000 * 128 / $2 }' | sort -n |
        awk '{ a[NR] = $1 } END { print NR ? a[int((NR + 1) / 2)] : "nan" }'
}
{
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $host"
    echo "# command: scripts/testbed.sh up RATE && scripts/testbed.sh run 2 ./darknet_mn classifier train $W/f.data $W/dbV.cfg"
    echo "#   (dbV.cfg = cfg/fashion.cfg + [connected] output=1024, learning_rate=0.02, max_batches=30, double_buffering=V)"
    printf '%-9s %-6s %12s %12s %8s\n' link round db0_ms_it db1_ms_it ratio
    for rate in unlimited 1gbit 300mbit; do
        $tb up ${rate#unlimited} > /dev/null || exit 1
        for round in 1 2 3; do
            for v in 0 1; do
                timeout 300 $tb run 2 ./darknet_mn classifier train "$W/f.data" "$W/db$v.cfg" > "$W/out$v" 2>&1
                t[$v]=$(ms_per_iter "$W/out$v")
            done
            printf '%-9s %-6s %12.1f %12.1f %8.3f\n' $rate $round "${t[0]}" "${t[1]}" "$(awk "BEGIN{print ${t[1]} / ${t[0]}}")"
        done
        $tb down > /dev/null
    done
} | tee "$R/testbed-double-buffering.txt"
