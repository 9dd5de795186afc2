#!/usr/bin/env bash
# make bench, part "speed": training images/s on cfg/fashion.cfg (classifier)
# and cfg/fashion-det.cfg (detector), or with SPEED_NETS also
# cfg/fashion-nobn.cfg (a classifier without batch norm), of
#   stock-1t    stock Darknet (Debian source, unpatched, -Ofast), one thread
#   stock-omp2  the same built with OpenMP, OMP_NUM_THREADS=2
#   mn-1, mn-2  ./darknet_mn (or SPEED_MN, e.g. build/alexeyab-cpu/darknet_mn) on
#               1 and 2 ranks (batch per rank as in the cfg)
#   mn-1x2      two independent 1-rank runs at once, one on each core: what two
#               cores give with nothing shared but the machine, the ceiling of
#               mn-2 (on a VM two vCPUs need not be two whole cores)
#   ddp-1/2     PyTorch DDP (gloo), 1 and 2 processes (bench/ddp_fashion.py;
#               classifier only; skipped with the reason without torch)
#   base-1/2    with SPEED_BASELINE=<another build's darknet_mn>: that build on
#               1 and 2 ranks, e.g. the commit before a refactor (A/B), or
#               'env MN_DNNL=0 <build>' for that build on Darknet's own path
# A system's images/s is the images of (LONG - SHORT) updates over the time of
# a LONG-update run minus that of a SHORT-update run, both whole processes, so
# startup and the final save cancel; the systems alternate within a round;
# ROUNDS rounds; the median over rounds. The allreduce's share of a 2-rank step
# is bench allreduce's median for the cfg's gradient (its communicator, flat)
# over the step time at mn-2's median images/s.
# SPEED_NETS, SPEED_SYSTEMS, SPEED_SHORT, SPEED_LONG, SPEED_ROUNDS, SPEED_MN, SPEED_WORK (the scratch
# folder) and BENCH_RESULTS override the defaults.
set -u
cd "$(dirname "$0")/.."
. bench/common.sh
R=${BENCH_RESULTS:-bench/results}
W=${SPEED_WORK:-build/bench-speed}
# Runs of 40 and 400 updates (the classifier) or 10 and 60 (the detector, a
# step of which is about 40 times longer); 5 and 3 rounds: long enough that a
# run's startup noise moves images/s by about 1%.
short_of() { case $1 in fashion | fashion-nobn) echo "${SPEED_SHORT:-40}" ;; *) echo "${SPEED_SHORT:-10}" ;; esac; }
long_of() { case $1 in fashion | fashion-nobn) echo "${SPEED_LONG:-400}" ;; *) echo "${SPEED_LONG:-60}" ;; esac; }
rounds_of() { case $1 in fashion | fashion-nobn) echo "${SPEED_ROUNDS:-5}" ;; *) echo "${SPEED_ROUNDS:-3}" ;; esac; }
NETS=${SPEED_NETS:-fashion fashion-det}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPI="mpiexec --oversubscribe"
STOCK=third_party/darknet-stock/darknet
OMP=third_party/darknet-stock-omp/darknet
PY=/usr/bin/python3
MN=${SPEED_MN:-./darknet_mn}
host="$(bench_host)"
mkdir -p "$R" "$W"

# The cfgs and data files of one net: the cfg with max_batches=N for stock
# (no [distributed]: stock rejects it) and for darknet-mn (no evaluation;
# saves as often as stock's: the classifier every 1000 iterations, the
# detector every 100), backups under $W.
prepare() {   # prepare NET
    local net=$1 data=cfg/fashion.data n
    [ "$net" = fashion-det ] && data=data/fashion-det.data
    sed "s|^backup=.*|backup=$W/backup|" "$data" > "$W/$net.data"
    sed "s|^backup=.*|backup=$W/backup-b|" "$data" > "$W/$net-b.data"   # mn-1x2's second run
    for n in $SHORT $LONG; do
        sed -e '/^\[distributed\]/,$d' -e "s/^max_batches=.*/max_batches=$n/" "cfg/$net.cfg" > "$W/$net-stock-$n.cfg"
        sed -e "s/^max_batches=.*/max_batches=$n/" -e "s|^backup=.*|backup=$W/backup|" -e '/^eval_interval=/d' \
            -e '/^backup_interval=/d' "cfg/$net.cfg" > "$W/$net-mn-$n.cfg"
        printf 'eval_interval=0\nbackup_interval=%s\n' "$([ "$net" = fashion ] && echo 1000 || echo 100)" >> "$W/$net-mn-$n.cfg"
    done
}

systems() {   # systems NET: the systems that train NET (those of SPEED_SYSTEMS only, where set)
    local s
    for s in stock-1t stock-omp2 mn-1 mn-2 mn-1x2 ddp-1 ddp-2 base-1 base-2; do
        [ "$1" = fashion-det ] && [[ $s == ddp-* ]] && continue
        [ -z "${SPEED_BASELINE:-}" ] && [[ $s == base-* ]] && continue
        [ "$s" = mn-1x2 ] && [ "$(nproc)" -lt 2 ] && continue   # it pins a run to core 1
        [ -n "${SPEED_SYSTEMS:-}" ] && [[ " $SPEED_SYSTEMS " != *" $s "* ]] && continue
        echo "$s"
    done
}

command_of() {   # command_of SYS NET N
    local task=classifier
    [ "$2" = fashion-det ] && task=detector
    case $1 in
        stock-1t) echo "$STOCK $task train $W/$2.data $W/$2-stock-$3.cfg" ;;
        stock-omp2) echo "env OMP_NUM_THREADS=2 $OMP $task train $W/$2.data $W/$2-stock-$3.cfg" ;;
        mn-1 | mn-2) echo "$MPI -n ${1#mn-} $MN $task train $W/$2.data $W/$2-mn-$3.cfg" ;;
        base-1 | base-2) echo "$MPI -n ${1#base-} $SPEED_BASELINE $task train $W/$2.data $W/$2-mn-$3.cfg" ;;
        mn-1x2) echo "bench/both.sh taskset -c 0 $MPI -n 1 --bind-to none $MN $task train $W/$2.data $W/$2-mn-$3.cfg" \
                     "-- taskset -c 1 $MPI -n 1 --bind-to none $MN $task train $W/$2-b.data $W/$2-mn-$3.cfg" ;;
        ddp-1 | ddp-2) echo "$PY bench/ddp_fashion.py --cfg $W/$2-mn-$3.cfg --procs ${1#ddp-} --iters $3" ;;
    esac
}

ranks_of() { case $1 in mn-2 | mn-1x2 | ddp-2 | base-2) echo 2 ;; *) echo 1 ;; esac; }   # processes, each with a batch
cores_of() { case $1 in *2) echo 2 ;; *) echo 1 ;; esac; }   # processes or threads

# Wall seconds of one run, under the lock; "fail" when it fails (its
# output stays in $W/SYS-NET-N.out/.err).
timed() {   # timed SYS NET N
    local log=$W/$1-$2-$3
    rm -rf "$W/backup" "$W/backup-b" && mkdir -p "$W/backup" "$W/backup-b"
    # shellcheck disable=SC2046
    if locked /usr/bin/time -f %e -o "$log.time" $(command_of "$@") > "$log.out" 2> "$log.err"; then tail -1 "$log.time"
    else echo fail; fi
}

median() { sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "nan" }'; }

speed() {   # speed NET: the table of one net
    local net=$1 batch sys r ts tl SHORT LONG ROUNDS
    SHORT=$(short_of "$net") LONG=$(long_of "$net") ROUNDS=$(rounds_of "$net")
    prepare "$net"
    batch=$(sed -n 's/^batch=//p' "cfg/$net.cfg")
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $host"
    load_line before
    echo "# cfg/$net.cfg, batch $batch per rank or process, runs of $SHORT and $LONG updates, $ROUNDS rounds, systems alternating"
    echo "# made by: ${SPEED_SYSTEMS:+SPEED_SYSTEMS=\"$SPEED_SYSTEMS\" }${SPEED_BASELINE:+SPEED_BASELINE=\"$SPEED_BASELINE\" }${SPEED_MN:+SPEED_MN=$SPEED_MN }SPEED_NETS=$net bench/speed.sh (make bench, part speed)"
    [ -n "${SPEED_BASELINE:-}" ] && echo "# base: ${SPEED_BASELINE_NAME:-$SPEED_BASELINE}; mn: $(git describe --always --dirty 2>/dev/null)"
    for sys in $(systems "$net"); do echo "# $sys: $(command_of "$sys" "$net" N)"; done
    : > "$W/$net.ips"
    if ! $PY -c 'import torch' 2> /dev/null && [ "$net" = fashion ]; then
        echo "# ddp-1, ddp-2: skipped: $($PY bench/ddp_fashion.py | sed 's/^ddp: skipped: //')"
    fi
    for r in $(seq 1 "$ROUNDS"); do
        for sys in $(systems "$net"); do
            case $sys in ddp-*) $PY -c 'import torch' 2> /dev/null || continue ;; esac
            ts=$(timed "$sys" "$net" "$SHORT")
            tl=$(timed "$sys" "$net" "$LONG")
            awk -v s="$sys" -v r="$r" -v a="$ts" -v b="$tl" -v i="$(( batch * $(ranks_of "$sys") * (LONG - SHORT) ))" \
                'BEGIN { if (a == "fail" || b == "fail" || b <= a) printf "%s %s %s %s nan\n", s, r, a, b;
                         else printf "%s %s %s %s %.1f\n", s, r, a, b, i / (b - a) }' >> "$W/$net.ips"
        done
    done
    printf '%-11s %6s %9s %9s %9s %-26s %8s %10s\n' system cores short_s long_s images/s rounds vs_1t scaling
    local base one
    base=$(awk '$1 == "stock-1t" { print $5 }' "$W/$net.ips" | median)
    for sys in $(systems "$net"); do
        grep -q "^$sys " "$W/$net.ips" || continue
        local m s l rounds scale=-
        m=$(awk -v s="$sys" '$1 == s { print $5 }' "$W/$net.ips" | median)
        s=$(awk -v s="$sys" '$1 == s { print $3 }' "$W/$net.ips" | median)
        l=$(awk -v s="$sys" '$1 == s { print $4 }' "$W/$net.ips" | median)
        rounds=$(awk -v s="$sys" '$1 == s { printf "%s%s", n++ ? "," : "", $5 }' "$W/$net.ips")
        case $sys in
            stock-omp2) one=$base ;;
            mn-2 | mn-1x2) one=$(awk '$1 == "mn-1" { print $5 }' "$W/$net.ips" | median) ;;
            ddp-2) one=$(awk '$1 == "ddp-1" { print $5 }' "$W/$net.ips" | median) ;;
            base-2) one=$(awk '$1 == "base-1" { print $5 }' "$W/$net.ips" | median) ;;
            *) one= ;;
        esac
        [ -n "$one" ] && scale=$(awk -v m="$m" -v o="$one" 'BEGIN { printf "%.0f%%", 100 * m / (2 * o) }')
        printf '%-11s %6s %9s %9s %9s %-26s %8s %10s\n' "$sys" "$(cores_of "$sys")" "$s" "$l" "$m" "$rounds" \
            "$(awk -v m="$m" -v b="$base" 'BEGIN { printf "%.2f", m / b }')" "$scale"
    done
    echo "# short_s, long_s: medians of the runs' wall seconds; images/s: median over the rounds (listed)"
    echo "# vs_1t: over stock-1t; scaling: a 2-core system's images/s over twice its 1-core one's (stock-omp2: stock-1t's; mn-1x2: mn-1's)"
    awk '$1 == "mn-2" { two[$2] = $5 } $1 == "mn-1x2" { ceil[$2] = $5 }
         END { for (r in two) if (ceil[r] > 0) print two[r] / ceil[r] }' "$W/$net.ips" | sort -n |
        awk '{ a[NR] = 100 * $1; s = s (NR > 1 ? ", " : "") sprintf("%.0f%%", 100 * $1) }
            END { if (NR) printf "# mn-2 over mn-1x2 of the same round (darknet-mn against the machine'"'"'s two-core ceiling): median %.0f%% (%s)\n", a[int((NR + 1) / 2)], s }'
    local n
    for n in 1 2; do   # A/B: this build over the baseline, round by round
        awk -v n=$n '$1 == "mn-" n { me[$2] = $5 } $1 == "base-" n { b[$2] = $5 }
             END { for (r in me) if (b[r] > 0) print me[r] / b[r] }' "$W/$net.ips" | sort -n |
            awk -v n=$n '{ a[NR] = 100 * $1; s = s (NR > 1 ? ", " : "") sprintf("%.1f%%", 100 * $1) }
                END { if (NR) printf "# mn-%d over base-%d of the same round: median %.1f%% (%s)\n", n, n, a[int((NR + 1) / 2)], s }'
    done
    # The allreduce's share of a 2-rank step.
    local ar step
    ar=$(locked $MPI -n 2 $MN bench allreduce "$W/$net-mn-$LONG.cfg" -iters 20 2> /dev/null |
         awk '$1 == "flat" { print $3 / 1000 }')
    step=$(awk '$1 == "mn-2" { print $5 }' "$W/$net.ips" | median | awk -v b="$batch" '{ print 1000 * 2 * b / $1 }')
    awk -v a="$ar" -v s="$step" 'BEGIN { if (a != "" && s + 0 > 0) printf "# allreduce (flat, bench allreduce median of 20) %.3f ms of a %.1f ms 2-rank step: %.2f%%\n", a, s, 100 * a / s }'
    echo "# command: $MPI -n 2 $MN bench allreduce $W/$net-mn-$LONG.cfg -iters 20"
    load_line after
}

for net in $NETS; do
    speed "$net" | tee "$R/speed-$net.txt"
done
