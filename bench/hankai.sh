#!/usr/bin/env bash
# make bench-hankai: training images/s on hank-ai's base, darknet-mn against
# the fork's own CPU training, on cfg/yolov4-tiny-fashion.cfg (128x128,
# random=0) and the Fashion-MNIST detection set, one global batch of 16:
#   fork-omp2  the fork's CLI (patched tree and flags of make DARKNET=hankai,
#              built with OpenMP: build/hankai-omp), OMP_NUM_THREADS=2,
#              batch 16, detector train ... -yes -dont_show (no -gpus)
#   mn-1       build/hankai-cpu/darknet_mn, 1 rank x 16
#   mn-2       the same, 2 ranks x 8
# darknet-mn's convolutions run on oneDNN (the default since the engine came
# to this base; MN_DNNL=0 in the environment keeps the fork's im2col + gemm
# on OpenBLAS, which results/hankai-speed.txt was measured with); the rest
# of both is the fork's own CPU layers. As bench/speed.sh: a system's images/s is the images of
# (LONG - SHORT) updates over the wall time of a LONG-update run minus that of
# a SHORT-update run, so startup and the final save cancel; the systems
# alternate within a round; ROUNDS rounds; the median over rounds.
# HK_SHORT, HK_LONG, HK_ROUNDS, HK_SYSTEMS, HK_FORK (another CLI) and BENCH_RESULTS override the defaults.
set -u
cd "$(dirname "$0")/.." || exit
. bench/common.sh
R=${BENCH_RESULTS:-bench/results}
W=$(pwd)/build/bench-hankai
SHORT=${HK_SHORT:-10} LONG=${HK_LONG:-60} ROUNDS=${HK_ROUNDS:-3}
SYSTEMS=${HK_SYSTEMS:-fork-omp2 mn-1 mn-2}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpiexec --oversubscribe"
FORK=${HK_FORK:-$(pwd)/build/hankai-omp/src-cli/darknet}
MN=$(pwd)/build/hankai-cpu/darknet_mn
# Built once only: where third_party's tree is older than its patches, make
# would rebuild the fork (minutes) under the binaries timed here.
[ -x "$MN" ] || make -s DARKNET=hankai "$MN" || exit
[ -x "$FORK" ] || make -s DARKNET=hankai build/hankai-omp/src-cli/darknet || exit
rm -rf "$W" && mkdir -p "$W/backup"

# The data in the forks' layout, one data file for both sides: tests/helpers/lib.sh's
# fork_det_data writes $T/y4.data (backups in $T/backup).
# shellcheck disable=SC2034  # read by tests/helpers/lib.sh
T=$W
. tests/helpers/lib.sh
fork_det_data || exit
# Per system and length the cfg: batch per process, N updates; darknet-mn's
# [distributed] keys (no evaluation; backups every 100 as the fork's).
for n in $SHORT $LONG; do
    for b in 16 8; do
        # shellcheck disable=SC2046
        sed -e "s/^batch=.*/batch=$b/" -e 's/^subdivisions=.*/subdivisions=1/' $(demo_schedule "$n") \
            cfg/yolov4-tiny-fashion.cfg > "$W/b$b-$n.cfg"
    done
    cp "$W/b16-$n.cfg" "$W/fork-$n.cfg"
    for b in 16 8; do printf '\n[distributed]\nseed=1\nbackup_interval=100\neval_interval=0\n' >> "$W/b$b-$n.cfg"; done
done

command_of() {   # command_of SYS N
    case $1 in
        fork-omp2) echo "env OMP_NUM_THREADS=2 $FORK detector train $W/y4.data $W/fork-$2.cfg -yes -dont_show" ;;
        mn-1) echo "$MPI -n 1 $MN detector train $W/y4.data $W/b16-$2.cfg" ;;
        mn-2) echo "$MPI -n 2 $MN detector train $W/y4.data $W/b8-$2.cfg" ;;
    esac
}
# Wall seconds of one run, under the lock, in $W (the fork writes its chart
# to the working folder); "fail" when it fails (output in $W/SYS-N.out/.err).
timed() {   # timed SYS N
    local log=$W/$1-$2
    rm -rf "$W/backup" && mkdir -p "$W/backup"
    # shellcheck disable=SC2046
    if (cd "$W" && locked /usr/bin/time -f %e -o "$log.time" $(command_of "$@") > "$log.out" 2> "$log.err"); then tail -1 "$log.time"
    else echo fail; fi
}
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "nan" }'; }

run() {
    local r sys ts tl
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $(bench_host)"
    load_line before
    echo "# cfg/yolov4-tiny-fashion.cfg (batch as below, subdivisions=1, lr steps at 80%/90%), global batch 16,"
    echo "# runs of $SHORT and $LONG updates, $ROUNDS rounds, systems alternating; made by: make bench-hankai (bench/hankai.sh)"
    echo "# fork: $("$FORK" version 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep -m1 -o 'v[0-9][0-9.]*-[^ ]*'), $(grep -c -- -fopenmp "$(dirname "$FORK")/../compile_commands.json") files built with -fopenmp; mn: $(git describe --always --dirty 2>/dev/null)"
    echo "# OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-unset}: darknet-mn then sets 1 a rank (train/input/mn_cpu.c), the fork keeps OpenBLAS's default (all cores)"
    echo "# darknet-mn's $("$MN" info 2>/dev/null | grep -m1 '^engine:') (MN_DNNL=${MN_DNNL:-unset})"
    for sys in $SYSTEMS; do echo "# $sys: $(command_of "$sys" N)"; done
    : > "$W/ips"
    for r in $(seq 1 "$ROUNDS"); do
        for sys in $SYSTEMS; do
            ts=$(timed "$sys" "$SHORT")
            tl=$(timed "$sys" "$LONG")
            awk -v s="$sys" -v r="$r" -v a="$ts" -v b="$tl" -v i="$(( 16 * (LONG - SHORT) ))" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
                'BEGIN { if (a == "fail" || b == "fail" || b <= a) printf "%s %s %s %s nan %s\n", s, r, a, b, l;
                         else printf "%s %s %s %s %.1f %s\n", s, r, a, b, i / (b - a), l }' >> "$W/ips"
        done
    done
    printf '%-10s %6s %8s %8s %9s %12s\n' system round short_s long_s images/s load1_after
    awk '{ printf "%-10s %6s %8s %8s %9s %12s\n", $1, $2, $3, $4, $5, $6 }' "$W/ips"
    echo
    printf '%-10s %6s %9s %-20s %10s\n' system cores images/s rounds vs_fork
    local fork m
    fork=$(awk '$1 == "fork-omp2" { print $5 }' "$W/ips" | median)
    for sys in $SYSTEMS; do
        m=$(awk -v s="$sys" '$1 == s { print $5 }' "$W/ips" | median)
        printf '%-10s %6s %9s %-20s %10s\n' "$sys" "$([ "$sys" = mn-1 ] && echo 1 || echo 2)" "$m" \
            "$(awk -v s="$sys" '$1 == s { printf "%s%s", n++ ? "," : "", $5 }' "$W/ips")" \
            "$(awk -v m="$m" -v f="$fork" 'BEGIN { if (f > 0) printf "%.2f", m / f; else print "-" }')"
    done
    echo "# images/s: 16 x ($LONG - $SHORT) images over (long_s - short_s), median over the rounds (listed); vs_fork: over fork-omp2's"
    awk '$1 == "mn-1" { one[$2] = $5 } $1 == "mn-2" { two[$2] = $5 }
         END { for (r in two) if (one[r] > 0) print two[r] / one[r] }' "$W/ips" | sort -n |
        awk '{ a[NR] = $1; s = s (NR > 1 ? ", " : "") sprintf("%.2f", $1) }
            END { if (NR) printf "# mn-2 over mn-1 of the same round: median %.2f (%s)\n", a[int((NR + 1) / 2)], s }'
    load_line after
}
mkdir -p "$R"
run | tee "$R/hankai-speed.txt"
