#!/usr/bin/env bash
# Communicators: every algorithm (float32 and float16) on 1-4 ranks and on
# forced node layouts 2x2, 2+1, 5x1 and 3x2, also in small odd pieces, with the node's
# shared-memory window and without it (MN_SHM=0); the refusals
# (two_dimensional on uneven nodes, single_node on several nodes, pure_nccl
# without NCCL) reach every rank with a non-zero exit and a clear message, and
# never hang; N x b against 1 x N*b training equivalence through each new
# communicator; communicator=auto's choice and reason; the allreduce bench
# runs every variant.
# Run by tests/run.sh (env T, TEST_BIN, MPI, BUILD), or alone from the repository root.
. "$(dirname "$0")/../helpers/lib.sh"
T=$T/comm
rm -rf "$T" && mkdir -p "$T"

# unit_test NAME NP ENV... -- CMD... (tests/helpers/lib.sh): under mpiexec with a
# time limit; ENV is KEY=VALUE pairs passed to every rank.
for n in 1 2 3 4; do
    unit_test "comm-np$n" $n -- "$TEST_BIN/test_comm"
done
unit_test comm-2x2 4 MN_RANKS_PER_NODE=2 -- "$TEST_BIN/test_comm"
unit_test comm-2+1 3 MN_RANKS_PER_NODE=2 -- "$TEST_BIN/test_comm"
# 1001-float pieces: every piece odd, none divisible by the node size, many of them.
unit_test comm-2x2-odd-pieces 4 MN_RANKS_PER_NODE=2 MN_PIECE_BYTES=4004 -- "$TEST_BIN/test_comm"
unit_test comm-2+1-odd-pieces 3 MN_RANKS_PER_NODE=2 MN_PIECE_BYTES=4004 -- "$TEST_BIN/test_comm"
unit_test comm-288MiB-2x1 2 -- "$TEST_BIN/test_big"
unit_test comm-288MiB-2x2 4 MN_RANKS_PER_NODE=2 -- "$TEST_BIN/test_big"
# The same layouts through MPI messages only (no shared-memory window).
unit_test comm-2x2-mpi 4 MN_RANKS_PER_NODE=2 MN_SHM=0 -- "$TEST_BIN/test_comm"
unit_test comm-2+1-mpi-odd-pieces 3 MN_RANKS_PER_NODE=2 MN_SHM=0 MN_PIECE_BYTES=4004 -- "$TEST_BIN/test_comm"
unit_test comm-np2-mpi 2 MN_SHM=0 -- "$TEST_BIN/test_comm"
# Rank counts that are not a power of two across nodes: the network legs'
# own reduce-scatter and allgather (mn_rsag.c) fold them first; 5 nodes of 1
# (flat over 5), 3 nodes of 2 (hierarchical's and two_dimensional's leaders
# over 3, flat over 6).
unit_test comm-5x1 5 MN_RANKS_PER_NODE=1 -- "$TEST_BIN/test_comm"
unit_test comm-3x2 6 MN_RANKS_PER_NODE=2 -- "$TEST_BIN/test_comm"

# comm_refused NAME NP RPN ALGO PATTERN: test_comm ALGO must fail on every rank (own
# exit code each), within the time limit, with PATTERN in the message.
comm_refused() {
    local name=$1 np=$2 rpn=$3 algo=$4 pat=$5
    local t0=$SECONDS
    on_ranks "$T/$name" 60 "$np" MN_RANKS_PER_NODE="$rpn" -- "$TEST_BIN/test_comm" "$algo"
    local took=$((SECONDS - t0))
    if [ "$(cat "$T/$name.rc")" = 124 ]; then bad "$name: hung (killed after 60 s)"; return; fi
    if ! all_rc "$T/$name" "$np" nonzero; then bad "$name: not every rank exited non-zero ($(rcs "$T/$name" "$np"))"; return; fi
    if ! cat "$T/$name".err.* | grep -q -- "$pat"; then bad "$name: no message matching '$pat': $(cat "$T/$name".err.* | head -3)"; return; fi
    ok "$name (${took}s, every rank exits $(cat "$T/$name".rc.* | sort -u | paste -sd,)): $(cat "$T/$name".err.* | grep -m1 -- "$pat")"
}
comm_refused refuse-2d-uneven 3 2 two_dimensional "'two_dimensional' needs the same number of ranks on every node, but this job has 3 ranks on 2 nodes (2+1)"
comm_refused refuse-single-node 4 2 single_node "'single_node' works inside one node, but this job has 4 ranks on 2 nodes (2+2)"
comm_refused refuse-pure-nccl 2 2 pure_nccl "communicator 'pure_nccl' needs a build with NCCL=1 (this build has none)"

# Training equivalence through each new communicator: 2 ranks on one node, and
# 4 ranks as 2 nodes x 2 (single_node: 4 ranks on one node).
for comm in hierarchical two_dimensional single_node; do
    for n in 2 4; do
        rpn=2
        [ $comm = single_node ] && rpn=$n
        for s in 1 2; do
            mkdir -p "$T/eq-$comm-$n-$s"
            unit_test "equiv-$comm-np$n-rpn$rpn-sub$s" $n MN_RANKS_PER_NODE=$rpn -- "$TEST_BIN/test_equiv" $comm $s "$T/eq-$comm-$n-$s"
        done
    done
done
for comm in flat hierarchical two_dimensional; do
    mkdir -p "$T/eq-$comm-mpi"
    unit_test "equiv-$comm-np4-rpn2-sub2-mpi" 4 MN_RANKS_PER_NODE=2 MN_SHM=0 -- "$TEST_BIN/test_equiv" $comm 2 "$T/eq-$comm-mpi"
done

# communicator=auto (and the default): ./darknet_mn info says which and why,
# exactly, on one node and on forced layouts the simulations cover (2 x 2)
# and do not (2+1, 1+1+1: flat, said to be unsimulated); the cfg's explicit
# auto gives the default's line. test_comm above checks that auto's mean is
# bit for bit that of the communicator it names, on every layout.
printf '[net]\nbatch=1\n\n[distributed]\ncommunicator=auto\n' > "$T/auto.cfg"
sim_says="fastest or tied on every cluster simulated, 2 to 32 nodes of 2 to 16 ranks (docs/benchmarks.md, simulated clusters)"
unsim_says="not simulated (up to 256 ranks in equal nodes of 2 to 16 were); flat runs on any layout"
auto_info() {   # auto_info NAME NP RANKS_PER_NODE LINE: info with and without the cfg says LINE
    local name=$1 np=$2 rpn=$3 line=$4 cfg got=
    for cfg in "" "$T/auto.cfg"; do
        on_ranks "$T/$name" 60 "$np" ${rpn:+MN_RANKS_PER_NODE=$rpn} -- "$PROG" info $cfg
        all_rc "$T/$name" "$np" 0 && grep -qxF "$line" "$T/$name.out.0" && got=$got+
    done
    if [ "$got" = ++ ]; then ok "info, auto on $np ranks (${rpn:-real} node split): $line"
    else bad "info, auto on $np ranks (${rpn:-real} node split): want '$line', got '$(grep '^communicator' "$T/$name.out.0")' (exit codes $(rcs "$T/$name" "$np"))"; fi
}
auto_info auto-1x4 4 "" "communicator: auto: flat (1 node of 4 ranks: one allreduce in the node's shared memory, as single_node)"
auto_info auto-2x2 4 2 "communicator: auto: flat (2 nodes of 2 ranks: $sim_says)"
auto_info auto-2+1 3 2 "communicator: auto: flat (3 ranks on 2 nodes of unequal size: $unsim_says)"
auto_info auto-3x1 3 1 "communicator: auto: flat (3 nodes of 1 rank: $unsim_says)"

# The bench runs every variant (float32 and float16 of each algorithm that this layout allows).
prog=./darknet_mn
[ -x "$prog" ] || prog=$BUILD/cpu/darknet_mn
if timeout 60 $MPI -x MN_RANKS_PER_NODE=2 -n 4 $prog bench allreduce -iters 2 -max 65536 > "$T/bench.log" 2> "$T/bench.err" \
    && rows=$(grep -c "^two_dimensional/f16 " "$T/bench.log") && [ "$rows" -gt 0 ] && ! grep -q "inf\|nan" "$T/bench.log"; then
    ok "bench allreduce on 2x2: $(awk 'NR>2{print $1}' "$T/bench.log" | sort -u | tr '\n' ' ')"
else
    bad "bench allreduce (see $T/bench.log, $T/bench.err)"
fi

finish
