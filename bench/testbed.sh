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
parts=" ${TESTBED_PARTS:-sweep dbuf overlap pieces} "   # some of: sweep dbuf overlap pieces
want() { [[ $parts == *" $1 "* ]]; }

# The network piece at 1 Gbit/s: the default against whole gradients
# (MN_NET_PIECE_BYTES=64 MiB, the default before) and 4 MiB pieces, 4 and
# 16 MiB, rounds interleaved (2 x 2 ranks; the rows of 4 MiB and up).
want pieces && {
    $tb up 1gbit > /dev/null || exit 1
    cmd="./darknet_mn bench allreduce -iters ${ITERS:-10} -max 16777216"
    { echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $host; testbed links: 1gbit; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
      echo "# command, each round: scripts/testbed.sh run 4 env MN_NET_PIECE_BYTES=P $cmd, P = default (unset), 67108864, 4194304"
      for round in 1 2; do
          for p in default 67108864 4194304; do
              echo "## round $round, network pieces: $p"
              e=$([ $p = default ] && echo MN_UNSET=1 || echo MN_NET_PIECE_BYTES=$p)
              timeout 300 $tb run 4 env "$e" $cmd 2> /dev/null | awk '$1 == "algo" || $2 >= 4194304'
          done
      done
      echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"; } | tee "$R/testbed-pieces.txt"
    $tb down > /dev/null
}
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
want dbuf && {
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
}

# overlap=1 against blocking and double_buffering=1, float32 and float16: 2
# hosts x 1 rank on links unlimited, 1 Gbit/s and 300 Mbit/s, and 2 x 2 at
# 1 Gbit/s. The model is cfg/fashion.cfg with a 256-unit connected layer
# before the last (a 3.2 MiB gradient, most of it the last layers', whose
# buckets can travel while the convolutions back-propagate); rate 0.02, 20
# iterations; 1 MiB buckets (the default). Per round, variants alternate, and
# one rank alone on the same cfg gives the step without communication, so
# that communication = blocking - alone, and overlap hides
# (blocking - overlap) / communication of it. Median over 3 rounds of each
# run's median ms per iteration (iterations 3 on).
want overlap || exit 0
W=build/bench-overlap
rm -rf "$W" && mkdir -p "$W/backup"
variants="blk32 ov32 db32 blk16 ov16 db16"
for v in $variants; do
    sed -e "s/^learning_rate=.*/learning_rate=0.02/" -e "s/^max_batches=.*/max_batches=20/" -e '/^\[distributed\]/,$d' \
        -e 's/^output=10$/output=256\nactivation=leaky\n\n[connected]\noutput=10/' cfg/fashion.cfg > "$W/$v.cfg"
    printf '[distributed]\ncommunicator=flat\nallreduce_grad_dtype=float%s\n' "${v: -2}" >> "$W/$v.cfg"
    case $v in ov*) echo overlap=1 >> "$W/$v.cfg" ;; db*) echo double_buffering=1 >> "$W/$v.cfg" ;; esac
done
sed -e "s|^backup=.*|backup=$W/backup|" cfg/fashion.data > "$W/f.data"
median() { sort -n | awk '{ a[NR] = $1 } END { print NR ? a[int((NR + 1) / 2)] : "nan" }'; }
nothidden() {   # the split's "communication not hidden" (ms per step) of iterations 1-20
    sed -n 's/^darknet-mn: iterations 1-20, .* communication not hidden \([0-9.]*\) .*/\1/p' "$1"
}
ms_it() {   # ms_it OUT IMAGES_PER_UPDATE
    sed -n 's/^\([0-9]*\): .*, \([0-9.]*\) img\/s,.*/\1 \2/p' "$1" | awk -v n="$2" '$1 >= 3 { print 1000 * n / $2 }' | median
}
{
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $host; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# command: scripts/testbed.sh up RATE && scripts/testbed.sh run NP ./darknet_mn classifier train $W/f.data $W/V.cfg"
    echo "#   V.cfg = cfg/fashion.cfg + [connected] output=256 (3.2 MiB gradient), learning_rate=0.02, max_batches=20,"
    echo "#   communicator=flat; blk = blocking, ov = overlap=1, db = double_buffering=1; 32/16 = allreduce_grad_dtype"
    echo "#   alone = mpiexec -n 1 ./darknet_mn classifier train $W/f.data $W/blk32.cfg (no communication)"
    echo "# ms per iteration, median of 3 rounds (each: median of iterations 3-20); step-hidden = (blk - ov) / (blk - alone)"
    echo "# nh-V: the split's 'communication not hidden' (ms per step, iterations 1-20, median of rounds);"
    echo "#   hidden = 1 - nh-ov / nh-blk: the share of the blocking run's communication that overlap=1 hid"
    printf '%-9s %-4s %8s' link np alone
    for v in $variants; do printf ' %8s' "$v"; done
    printf ' %9s %9s %6s %6s %6s %6s %6s %6s\n' steph32 steph16 nh-b32 nh-o32 nh-b16 nh-o16 hid32 hid16
    for setup in unlimited:2 1gbit:2 300mbit:2 1gbit:4; do
        rate=${setup%:*} np=${setup#*:}
        $tb up ${rate#unlimited} > /dev/null || exit 1
        declare -A t=() nh=()
        for round in 1 2 3; do
            timeout 300 mpiexec --allow-run-as-root -n 1 ./darknet_mn classifier train "$W/f.data" "$W/blk32.cfg" > "$W/out-alone" 2>&1
            t[alone]+="$(ms_it "$W/out-alone" 64) "
            for v in $variants; do
                timeout 300 $tb run "$np" ./darknet_mn classifier train "$W/f.data" "$W/$v.cfg" > "$W/out-$v-$rate-$np" 2>&1
                t[$v]+="$(ms_it "$W/out-$v-$rate-$np" $((64 * np))) "
                nh[$v]+="$(nothidden "$W/out-$v-$rate-$np") "
            done
        done
        declare -A m=() n=()
        for k in alone $variants; do m[$k]=$(tr ' ' '\n' <<< "${t[$k]}" | grep . | median); done
        for k in $variants; do n[$k]=$(tr ' ' '\n' <<< "${nh[$k]}" | grep . | median); done
        printf '%-9s %-4s %8.1f' "$rate" "$np" "${m[alone]}"
        for v in $variants; do printf ' %8.1f' "${m[$v]}"; done
        # 4 ranks share 2 cores: one rank alone is not their compute time.
        awk -v a="${m[alone]}" -v b32="${m[blk32]}" -v o32="${m[ov32]}" -v b16="${m[blk16]}" -v o16="${m[ov16]}" -v np="$np" \
            'BEGIN { if (np > 2) printf " %9s %9s", "n/a", "n/a"; else printf " %9.2f %9.2f", (b32 - o32) / (b32 - a), (b16 - o16) / (b16 - a) }'
        awk -v b32="${n[blk32]}" -v o32="${n[ov32]}" -v b16="${n[blk16]}" -v o16="${n[ov16]}" \
            'BEGIN { printf " %6.1f %6.1f %6.1f %6.1f %6.2f %6.2f\n", b32, o32, b16, o16, 1 - o32 / b32, 1 - o16 / b16 }'
        $tb down > /dev/null
        unset t m nh n
    done
    # Open MPI's waits spin; with a thread sharing the rank's core, darknet_mn
    # asks MPI to yield when idle (main.c). Against spinning (TESTBED_YIELD=0):
    echo "# yield when idle: 2 x 1 ranks, 1gbit, split of iterations 1-20 (ms per step), 3 rounds alternating"
    printf '%-6s %-10s %8s %8s %10s %8s\n' round variant step compute not-hidden slowest
    $tb up 1gbit > /dev/null || exit 1
    for round in 1 2 3; do
        for v in blk32 ov32 ov32-spin blk32-spin; do
            c=${v%-spin} y=
            [ "$c" != "$v" ] && y=0
            TESTBED_YIELD=$y timeout 300 $tb run 2 ./darknet_mn classifier train "$W/f.data" "$W/$c.cfg" > "$W/out-y-$v" 2>&1
            sed -n 's/^darknet-mn: iterations 1-20, per step (mean of 2 ranks): \([0-9.]*\) ms = compute \([0-9.]*\) + data [0-9.]* + communication not hidden \([0-9.]*\) + waiting for the slowest rank \([0-9.]*\)$/\1 \2 \3 \4/p' \
                "$W/out-y-$v" | awk -v r=$round -v v=$v '{ printf "%-6s %-10s %8.1f %8.1f %10.1f %8.1f\n", r, v, $1, $2, $3, $4 }'
        done
    done
    $tb down > /dev/null
    echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$R/testbed-overlap.txt"
