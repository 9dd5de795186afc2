#!/usr/bin/env bash
# The cluster's MPI need not be Open MPI: darknet-mn built with Debian's
# MPICH (make MPICC=mpicc.mpich, into $BUILD/mpich) and run under its
# mpiexec (Hydra): info says all is well on 2 ranks; 2 ranks x 4 images
# train as 1 x 8 through flat, single_node and two_dimensional (2 nodes
# forced) with sync_bn; a rank killed ends the job; a stop signal ends in a
# checkpoint and exit 75 on every rank, and the rerun ends bit for bit as a
# run never stopped. Run by make test-cluster (TEST_BIN set there).
. "$(dirname "$0")/../helpers/lib.sh"
F=$T/mpich
rm -rf "$F" && mkdir -p "$F"
[ -d "$D" ] || fashion_slice "$D" 256 64
if ! command -v mpicc.mpich > /dev/null || ! command -v mpiexec.mpich > /dev/null; then
    bad "MPICH is not installed (scripts/deps.sh installs mpich and libmpich-dev)"; finish mpich
fi
MB=$BUILD/mpich
P=$MB/cpu/darknet_mn
if make -s -j"$(nproc)" BUILD="$MB" MPICC=mpicc.mpich PROG="$P" "$P" > "$F/build.log" 2>&1 && ldd "$P" | grep -q libmpich; then
    ok "make MPICC=mpicc.mpich builds $P against MPICH ($(mpichversion 2> /dev/null | sed -n 's/^MPICH Version:[[:space:]]*//p'))"
else bad "the MPICH build (see $F/build.log)"; tail -3 "$F/build.log"; finish mpich; fi
PROG=$P MPI=mpiexec.mpich

# One MPI's launcher on the other's build: each process would be alone in
# a job of 1; the launcher's first says so, every one exits 64.
mpiexec.mpich -n 2 ./darknet_mn info > "$F/cross1.out" 2>&1
rc1=$?
mpiexec --oversubscribe -n 2 "$P" info > "$F/cross2.out" 2>&1
rc2=$?
if [ $rc1 = $EX_USAGE ] && [ "$(grep -c "^darknet-mn: MPICH's mpiexec (Hydra) started 2 processes, but each is alone in an MPI job of 1 (this darknet_mn's MPI: Open MPI" "$F/cross1.out")" = 1 ] &&
   [ $rc2 = $EX_USAGE ] && [ "$(grep -c "^darknet-mn: Open MPI's mpiexec started 2 processes, but each is alone in an MPI job of 1 (this darknet_mn's MPI: MPICH" "$F/cross2.out")" = 1 ]; then
    ok "the other MPI's launcher: status 64 and one line each way ($(grep -o "(this darknet_mn's MPI: [^)]*)" "$F/cross2.out"))"
else bad "the other MPI's launcher: $rc1 $(head -2 "$F/cross1.out"); $rc2 $(head -2 "$F/cross2.out")"; fi

mn "$F/info" 2 info
if all_rc "$F/info" 2 0 && grep -q "^mpi: MPICH" "$F/info.out.0" && [ "$(tail -1 "$F/info.out.0")" = "all well" ]; then
    ok "mpiexec.mpich -n 2 ./darknet_mn info: $(grep -m1 '^mpi:' "$F/info.out.0" | cut -c1-60)..., all well"
else bad "info under MPICH: $(rcs "$F/info" 2) $(tail -2 "$F/info.out.0") $(head -2 "$F/info.err.0")"; fi

# cfg NAME BATCH MAXB [distributed lines...] / data NAME / run NAME NP [ENV=V...]
cfg() {
    local n=$1 b=$2 m=$3; shift 3
    mn_cfg "$F/$n.cfg" batch="$b" max_batches="$m" learning_rate=0.01 -burn_in -policy -steps -scales \
        '[convolutional]' batch_normalize=1 '[maxpool]' '[connected]' '[softmax]' -- deterministic=1 shuffle=0 "$@"
}
data() {
    printf 'classes=10\ntrain=%s/train.list\nlabels=%s/labels.txt\nbackup=%s/%s\n' "$D" "$D" "$F" "$1" > "$F/$1.data"
    mkdir -p "$F/$1"
}
run() { local n=$1 np=$2; shift 2; data "$n"; on_ranks "$F/$n" 120 "$np" "$@" -- "$PROG" classifier train "$F/$n.data" "$F/$n.cfg"; }
W=$TEST_BIN/mn_wcmp

cfg one 8 10 sync_bn=1
run one 1
for comm in flat single_node two_dimensional; do
    cfg "$comm" 4 10 sync_bn=1 communicator=$comm
    if [ $comm = two_dimensional ]; then run "$comm" 2 MN_RANKS_PER_NODE=1; else run "$comm" 2; fi
    if all_rc "$F/$comm" 2 0 && all_rc "$F/one" 1 0 && "$W" "$F/$comm/${comm}_final.weights" "$F/one/one_final.weights" 1e-5 > "$F/$comm.cmp"; then
        ok "MPICH, $comm$([ $comm = two_dimensional ] && echo ' (2 nodes forced)'), sync_bn: 2 x 4 = 1 x 8 ($(cat "$F/$comm.cmp"))"
    else bad "MPICH, $comm: $(rcs "$F/$comm" 2); $(cat "$F/$comm.cmp" 2> /dev/null); $(grep -h 'darknet-mn' "$F/$comm".err.* | head -2)"; fi
done

# A rank killed: Hydra ends the job (rank 1's shell outlives it; what counts
# is the job ending, rank 1 killed, rank 0 not done).
cfg kill 4 100000 collective_timeout=20
run kill 2 &
for _ in $(seq 300); do grep -aq '^20: loss' "$F/kill.out.0" 2> /dev/null && break; sleep 0.05; done
t0=$SECONDS
signal_rank1 KILL "$F/kill.data"
wait
took=$((SECONDS - t0)) r0=$(cat "$F/kill.rc.0" 2> /dev/null || echo killed)
if [ "$(cat "$F/kill.rc.1" 2> /dev/null)" = 137 ] && [ "$r0" != 0 ] && [ "$(cat "$F/kill.rc")" != 124 ] && [ $took -lt 30 ]; then
    ok "MPICH, rank 1 killed: the job ended in ${took}s (rank 0 $r0, mpiexec.mpich $(cat "$F/kill.rc"))"
else bad "MPICH, a killed rank: mpiexec.mpich $(cat "$F/kill.rc") after ${took}s, ranks $(rcs "$F/kill" 2)"; fi

# A stop signal to rank 1 at iteration 50: both ranks exit 75, and the rerun
# ends with the weights of a run never stopped.
cfg stopref 4 3000; run stopref 2
cfg stop 4 3000
run stop 2 &
for _ in $(seq 600); do grep -aq '^50: loss' "$F/stop.out.0" 2> /dev/null && break; sleep 0.05; done
signal_rank1 USR1 "$F/stop.data"
wait
ended_with "$F/stop" 2 "$EX_RERUN"; stopped=$?
first=$(rcs "$F/stop" 2) at=$(sed -n 's/.*stopped at iteration \([0-9]*\) .*/\1/p' "$F/stop.out.0")
on_ranks "$F/stop" 120 2 -- "$PROG" classifier train "$F/stop.data" "$F/stop.cfg"
if [ $stopped = 0 ] && [ -n "$at" ] && all_rc "$F/stop" 2 0 &&
   "$W" "$F/stop/stop_final.weights" "$F/stopref/stopref_final.weights" 0 > "$F/stop.cmp"; then
    ok "MPICH, SIGUSR1 to rank 1: stopped at iteration $at, both ranks exit $EX_RERUN; the rerun ends as a run never stopped ($(cat "$F/stop.cmp"))"
else bad "MPICH, a stop signal: first run $first, stopped at '$at'; rerun $(rcs "$F/stop" 2); $(cat "$F/stop.cmp" 2> /dev/null)"; fi
finish mpich
