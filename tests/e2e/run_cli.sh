#!/usr/bin/env bash
# The command line and the settings every rank must share: Darknet's -gpus
# is answered with how darknet-mn uses GPUs, an unknown flag is refused with
# the valid ones (exit EX_USAGE on every rank, the message on rank 0 only), -clear
# and -nogpu are accepted; MN_PIECE_BYTES, MN_RANKS_PER_NODE and MN_SHM set
# on rank 0 alone (an MPMD launch, as mpiexec gives remote hosts without -x)
# hold on every rank; communicator=auto, the default, says what it chose and
# why; adam=1 is refused at start.
# Run by tests/run.sh (env T, D, TEST_BIN, MPI), or alone from the repository
# root (it then makes its own small data set).
. "$(dirname "$0")/../helpers/lib.sh"
C=$T/cli
rm -rf "$C" && mkdir -p "$C"
[ -n "$D_GIVEN" ] || fashion_slice "$C/fashion" 64 16 "$C/fashion.log"

# The demo's network, small and short: batch 4, 3 updates, deterministic data.
sed -e 's/^batch=.*/batch=4/' -e 's/^subdivisions=.*/subdivisions=1/' -e 's/^max_batches=.*/max_batches=3/' \
    -e 's/^\[distributed\]/&\ndeterministic=1\nshuffle=0/' cfg/fashion.cfg > "$C/c.cfg"
data() {   # data NAME: a data cfg whose backup folder is $C/NAME
    printf 'classes=10\ntrain=%s/train.list\nvalid=%s/test.list\nlabels=%s/labels.txt\nbackup=%s/%s\n' \
        "$D" "$D" "$D" "$C" "$1" > "$C/$1.data"
    echo "$C/$1.data"
}
# cli NAME NP ARGS...: ./darknet_mn ARGS on NP ranks with a time limit; rank
# r's output and exit code in $C/NAME.{out,err,rc}.r (on_ranks, tests/helpers/lib.sh).
cli() { local name=$1 np=$2; shift 2; on_ranks "$C/$name" 60 "$np" -- "$PROG" "$@"; }

# expect_usage NAME PATTERN ARGS...: 2 ranks exit EX_USAGE, PATTERN on rank 0's stderr, nothing on rank 1's.
expect_usage() {
    local name=$1 pat=$2; shift 2
    cli "$name" 2 "$@"
    if ! all_rc "$C/$name" 2 $EX_USAGE; then bad "$name: exit codes $(rcs "$C/$name" 2)(want $EX_USAGE); $(head -2 "$C/$name.err.0")"
    elif ! grep -q -- "$pat" "$C/$name.err.0"; then bad "$name: rank 0 does not say '$pat': $(head -3 "$C/$name.err.0")"
    elif [ -s "$C/$name.err.1" ] || [ -s "$C/$name.out.1" ]; then bad "$name: rank 1 printed: $(head -2 "$C/$name.err.1")"
    elif ls "$C/$name"/* > /dev/null 2>&1; then bad "$name: wrote into its backup folder"
    else ok "$name: exit $EX_USAGE on both ranks: $(grep -m1 -- "$pat" "$C/$name.err.0")"; fi
}

echo "== command line"
expect_usage gpus "-gpus is not used: darknet-mn runs one MPI rank per GPU; launch mpiexec -n 2 ./darknet_mn classifier train $C/gpus.data $C/c.cfg" \
    classifier train "$(data gpus)" "$C/c.cfg" -gpus 0,1
expect_usage gpus-weights "one MPI rank per GPU; launch mpiexec -n 3 ./darknet_mn detector train $C/gpus-weights.data $C/c.cfg $C/w.weights" \
    detector train "$(data gpus-weights)" "$C/c.cfg" -gpus 0,1,2 "$C/w.weights"
expect_usage unknown-flag "unknown flag '-fullscreen' for 'classifier train'; valid flags: -clear -nogpu" \
    classifier train "$(data unknown-flag)" "$C/c.cfg" -fullscreen
expect_usage unknown-flag-valid "unknown flag '-clear' for 'classifier valid'; valid flags: -nogpu" \
    classifier valid "$(data unknown-flag-valid)" "$C/c.cfg" "$C/w.weights" -clear
expect_usage missing-value "flag -out needs a value" detector valid "$(data missing-value)" "$C/c.cfg" "$C/w.weights" -out
expect_usage extra-argument "too many arguments for 'classifier train'" \
    classifier train "$(data extra-argument)" "$C/c.cfg" "$C/w.weights" "$C/more.weights"
# -clear and -nogpu are accepted (-nogpu: the CPU, as in every CPU build).
cli flags 2 classifier train "$(data flags)" "$C/c.cfg" -nogpu -clear
if all_rc "$C/flags" 2 0 && [ -s "$C/flags/c_final.weights" ]; then ok "-nogpu -clear: trained on 2 ranks"
else bad "-nogpu -clear: exit codes $(rcs "$C/flags" 2); $(head -3 "$C/flags.err.0")"; fi

echo "== settings from rank 0's environment (MPMD launch: rank 1 lacks them)"
# mpmd NAME VAR=VALUE: rank 0 with VAR=VALUE, rank 1 without, training 3 steps.
mpmd() {
    local name=$1 kv=$2 d; d=$(data "$1")
    timeout 60 $MPI -n 1 -x "$kv" sh -c "$(rank_cmd "$C/$name" "$PROG" classifier train "$d" "$C/c.cfg")" : \
        -n 1 sh -c "unset ${kv%%=*}; $(rank_cmd "$C/$name" "$PROG" classifier train "$d" "$C/c.cfg")"
    echo $? > "$C/$name.rc"
}
cli plain 2 classifier train "$(data plain)" "$C/c.cfg"
all_rc "$C/plain" 2 0 || bad "plain 2-rank run: exit codes $(rcs "$C/plain" 2); $(head -3 "$C/plain.err.0")"
for kv in MN_PIECE_BYTES=4096 MN_RANKS_PER_NODE=1 MN_SHM=0 MN_NET_PIECE_BYTES=4096; do
    name=env-${kv%%=*}
    mpmd "$name" "$kv"
    if [ "$(cat "$C/$name.rc")" = 124 ]; then bad "$name: hung (killed by the time limit; exit codes $(rcs "$C/$name" 2))"
    elif ! all_rc "$C/$name" 2 0; then bad "$name: exit codes $(rcs "$C/$name" 2); $(cat "$C/$name".err.* | head -3)"
    elif ! grep -q "rank 0's environment holds on every rank: $kv" "$C/$name.out.0"; then bad "$name: rank 0 does not say it uses $kv: $(head -2 "$C/$name.out.0")"
    elif [ "$kv" = MN_RANKS_PER_NODE=1 ] && ! grep -q "on 2 ranks (2 nodes)" "$C/$name.out.0"; then bad "$name: not 2 nodes: $(grep -m1 " on 2 ranks" "$C/$name.out.0")"
    elif ! "$TEST_BIN/mn_wcmp" "$C/$name/c_final.weights" "$C/plain/c_final.weights" 1e-6 > "$C/$name.cmp"; then bad "$name: weights differ from the plain run: $(cat "$C/$name.cmp")"
    else ok "$name: $(grep -m1 "rank 0's environment" "$C/$name.out.0"); weights as without it ($(cat "$C/$name.cmp"))"; fi
done
# A bad value on rank 0 stops every rank with its name.
for kv in MN_PIECE_BYTES=lots MN_NET_PIECE_BYTES=2; do
    k=${kv%%=*} name=bad-${kv%%=*}
    on_ranks "$C/$name" 60 2 "$kv" -- "$PROG" classifier train "$(data "$name")" "$C/c.cfg"
    if all_rc "$C/$name" 2 $EX_USER && grep -q "$k='${kv#*=}' is not an integer of at least 4" "$C/$name.err.0"; then
        ok "bad $k: exit $EX_USER on both ranks: $(head -1 "$C/$name.err.0")"
    else bad "bad $k: exit codes $(rcs "$C/$name" 2); $(cat "$C/$name".err.* | head -3)"; fi
done

echo "== communicator=auto, the default"
# Without the key (c.cfg names flat, as cfg/fashion.cfg does) auto chooses:
# rank 0 says what and why in one line. On 2 x 2 forced nodes auto and flat
# train to the same bits; a name that is none is refused with the valid
# ones, auto among them.
said() { grep -x "darknet-mn: communicator=auto: .*" "$C/$1.out.0"; }
sed '/^communicator=/d' "$C/c.cfg" > "$C/default.cfg"
for comm in auto flat ring; do sed "s/^communicator=.*/communicator=$comm/" "$C/c.cfg" > "$C/$comm.cfg"; done
cli default 2 classifier train "$(data default)" "$C/default.cfg"
want="darknet-mn: communicator=auto: flat (1 node of 2 ranks: one allreduce in the node's shared memory, as single_node)"
if all_rc "$C/default" 2 0 && [ "$(said default)" = "$want" ]; then ok "default on 2 ranks: $want"
else bad "default on 2 ranks: exit codes $(rcs "$C/default" 2); want '$want', got '$(said default)'"; fi
for comm in auto flat; do
    on_ranks "$C/2x2-$comm" 60 4 MN_RANKS_PER_NODE=2 -- "$PROG" classifier train "$(data "2x2-$comm")" "$C/$comm.cfg"
done
want="darknet-mn: communicator=auto: flat (2 nodes of 2 ranks: fastest or tied on every cluster simulated, 2 to 32 nodes of 2 to 16 ranks (docs/benchmarks.md, simulated clusters))"
if ! all_rc "$C/2x2-auto" 4 0 || ! all_rc "$C/2x2-flat" 4 0; then bad "auto and flat on 2 x 2: exit codes $(rcs "$C/2x2-auto" 4), $(rcs "$C/2x2-flat" 4)"
elif [ "$(said 2x2-auto)" != "$want" ] || said 2x2-flat > /dev/null; then bad "auto on 2 x 2: want '$want', got '$(said 2x2-auto)' (flat: '$(said 2x2-flat)')"
elif ! cmp -s "$C/2x2-auto/auto_final.weights" "$C/2x2-flat/flat_final.weights"; then bad "auto on 2 x 2: weights differ from flat's"
else ok "auto on 2 x 2 trains to flat's bits: $want"; fi
cli ring 2 classifier train "$(data ring)" "$C/ring.cfg"
want="communicator 'ring' is unknown; valid communicators: naive, flat, hierarchical, two_dimensional, single_node, pure_nccl, auto"
if all_rc "$C/ring" 2 $EX_USER && grep -q "ring.cfg:[0-9]*: \[distributed\] $want\$" "$C/ring.err.0"; then ok "communicator=ring: exit $EX_USER on both ranks: $(head -1 "$C/ring.err.0")"
else bad "communicator=ring: exit codes $(rcs "$C/ring" 2); $(head -2 "$C/ring.err.0")"; fi

echo "== adam=1"
sed 's/^momentum=\(.*\)/momentum=\1\nadam=1/' "$C/c.cfg" > "$C/adam.cfg"
cli adam 2 classifier train "$(data adam)" "$C/adam.cfg"
if all_rc "$C/adam" 2 $EX_USER && grep -q "adam.cfg: adam=1 is not supported" "$C/adam.err.0" && ! ls "$C/adam"/* > /dev/null 2>&1; then
    ok "adam=1 refused: exit $EX_USER on both ranks: $(grep -m1 "adam=1" "$C/adam.err.0")"
else bad "adam=1: exit codes $(rcs "$C/adam" 2); $(cat "$C"/adam.err.* | head -3)"; fi

finish
