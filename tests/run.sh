#!/usr/bin/env bash
# darknet-mn tests: unit tests under mpiexec -n 1..4, then end-to-end runs of
# ./darknet_mn on a small Fashion-MNIST subset: equivalence of N ranks against
# one, rank-0-only output, stock-Darknet compatibility, and every user error
# (clear message, non-zero exit on every rank, no hang, no partial file).
# This script sets T (build/test), D (T/fashion) and MPI for its suites.
unset T D MPI
. "$(dirname "$0")/helpers/lib.sh"
# make test SANITIZE=1: the unit tests under ASan+UBSan instead (tests/suites.txt's sanitize).
if [ "${SANITIZE:-0}" = 1 ]; then exec bash tests/suites.sh sanitize; fi
rm -rf "$T" && mkdir -p "$T"

echo "== unit tests"
for n in 1 2 3 4; do
    unit_test "comm-np$n" $n -- "$TEST_BIN/test_comm"
    unit_test "scatter-np$n" $n -- "$TEST_BIN/test_scatter" "$T"
done
unit_test gpu-select 1 -- "$TEST_BIN/test_gpu_select"
unit_test gpu-logic 1 -- "$TEST_BIN/test_gpu_logic"
# The GPU orders (overlap, double buffering, the rescue copy) on host
# queues with random pauses: right, and wrong without any one of their waits.
unit_test queue-orders 1 -- "$TEST_BIN/test_queue"
# Delay compensation's arithmetic (double_buffering_compensation), by exact values.
unit_test delay-compensation 1 -- "$TEST_BIN/test_stale"
for n in 1 2 3; do unit_test "dbuf-exchange-np$n" $n -- "$TEST_BIN/test_dbuf"; done
# The guard over communicator setup (tests/unit/test_guard.c): a setup stuck on
# rank 1 while rank 0 waits in the setup's own collective ends the job
# within the 2 s timeout, every rank naming it (without it: a hang).
t0=$SECONDS
timeout 60 $MPI -n 2 "$TEST_BIN/test_guard" guard > "$T/guard.log" 2>&1
rc=$? took=$((SECONDS - t0))
if [ $rc != 0 ] && [ $rc != 124 ] && [ $took -lt 30 ] &&
   [ "$(grep -c '^darknet-mn: rank [01] (.*): communicator setup before the first gradient allreduce did not complete in time (collective_timeout=2 s)' "$T/guard.log")" -ge 1 ]; then
    ok "a communicator setup stalled on rank 1 ends the job in ${took}s (exit $rc): $(grep -m1 'did not complete' "$T/guard.log")"
else bad "guarded setup: exit $rc after ${took}s (see $T/guard.log)"; fi
unit_test stock-cfgs-accepted 2 -- "$TEST_BIN/test_cfg" third_party/darknet-cpu/cfg/*.cfg cfg/*.cfg
# Whole gradients across nodes (MN_NET_PIECE_BYTES: a network piece larger
# than the node's 1 MiB window, the paths bench/sim times); tests/e2e/run_comm.sh
# runs the same shapes with the default pieces.
unit_test comm-forced-2x2 4 MN_RANKS_PER_NODE=2 MN_NET_PIECE_BYTES=67108864 -- "$TEST_BIN/test_comm"
for n in 1 2 3; do unit_test "replica-np$n" $n -- "$TEST_BIN/test_replica" "$T"; done
limit_row "$TEST_BIN/test_replica" "$T/limit"
unit_test comm-forced-2+1 3 MN_RANKS_PER_NODE=2 MN_NET_PIECE_BYTES=67108864 -- "$TEST_BIN/test_comm"
for comm in naive flat; do
    for n in 1 2 3 4; do
        for s in 1 2; do
            mkdir -p "$T/eq-$comm-$n-$s"
            unit_test "equiv-$comm-np$n-sub$s" $n -- "$TEST_BIN/test_equiv" $comm $s "$T/eq-$comm-$n-$s"
        done
    done
done

echo "== end-to-end"
# The scale model (bench/scale_model.py) against closed forms, and its cfg
# counter against `bench step`'s gradient floats and -layers' GFLOP; bench
# step refuses a batch larger than the cfg's.
unit_test scale-model 1 -- python3 tests/unit/test_scale_model.py
bench_step pjreddie ./darknet_mn cfg/fashion.cfg
bench_step pjreddie ./darknet_mn cfg/fashion-det.cfg
timeout 60 ./darknet_mn bench step cfg/fashion.cfg -batch 65 > "$T/step-batch.out" 2>&1
rc=$?
if [ $rc = $EX_USER ] && grep -q "^darknet-mn: rank 0 (.*): bench step: -batch 65 is more than cfg/fashion.cfg's batch/subdivisions (64)$" "$T/step-batch.out"
then ok "bench-step-batch-refused"; else bad "bench-step-batch-refused (rc $rc)"; cat "$T/step-batch.out"; fi

# ./darknet_mn info: every field, on 1-4 ranks and forced node layouts, the
# default communicator (auto) with its reason for the layout; a
# communicator the layout refuses makes it say so and exit non-zero.
info_check() {   # info_check NAME NP RANKS_PER_NODE LAYOUT NODES WHY [cfg]
    local name=$1 np=$2 k=$3 layout=$4 nodes=$5 why=$6 cfg=${7:-} f=$T/info-$1.out
    MN_RANKS_PER_NODE=$k timeout 60 $MPI -x MN_RANKS_PER_NODE -n "$np" ./darknet_mn info $cfg > "$f" 2> "$T/info-$name.err"
    local rc=$?
    if [ $rc = 0 ] && grep -q "^ranks: $layout\$" "$f" && [ "$(grep -c '^node [0-9]* (.*): ranks' "$f")" = "$nodes" ] &&
       [ "$(grep -c '^rank [0-9]*: host .*, node [0-9]*, local rank [0-9]* of [0-9]*, no GPU$' "$f")" = "$np" ] &&
       grep -q '^mpi: Open MPI v4.*; thread level MPI_THREAD_FUNNELED; CUDA-aware: no$' "$f" &&
       grep -q '^build: CPU (GPU=0 CUDNN=0 NCCL=0)$' "$f" && grep -q "^allreduce: 1 MiB through flat on $np rank.*: OK" "$f" &&
       grep -q '^ping: every rank answered rank 0' "$f" && [ "$(tail -1 "$f")" = "all well" ] &&
       grep -qxF "communicator: auto: flat ($why)" "$f"; then
        ok "info on $np ranks (${k:-real} node split): $layout, all well"
    else bad "info $name: exit $rc"; tail -n 20 "$f" "$T/info-$name.err"; fi
}
shm="one allreduce in the node's shared memory, as single_node"
sim="fastest or tied on every cluster simulated, 2 to 32 nodes of 2 to 16 ranks (docs/benchmarks.md, simulated clusters)"
info_check np1 1 "" "1 rank on 1 node (1)" 1 "1 node of 1 rank: $shm"
info_check np2 2 "" "2 ranks on 1 node (2)" 1 "1 node of 2 ranks: $shm"
info_check np3 3 1 "3 ranks on 3 nodes (1+1+1)" 3 \
    "3 nodes of 1 rank: not simulated (up to 256 ranks in equal nodes of 2 to 16 were); flat runs on any layout"
info_check np4-2x2 4 2 "4 ranks on 2 nodes (2+2)" 2 "2 nodes of 2 ranks: $sim"
printf '[net]\nbatch=1\n\n[distributed]\ncommunicator=two_dimensional\n' > "$T/info-2d.cfg"
MN_RANKS_PER_NODE=2 timeout 60 $MPI -x MN_RANKS_PER_NODE -n 3 ./darknet_mn info "$T/info-2d.cfg" > "$T/info-2d.out" 2> "$T/info-2d.err"
rc=$?
if [ $rc != 0 ] && grep -q '^communicator: two_dimensional: REFUSED' "$T/info-2d.out" && [ "$(tail -1 "$T/info-2d.out")" = "NOT all well" ] &&
   grep -q "needs the same number of ranks on every node, but this job has 3 ranks on 2 nodes (2+1)" "$T/info-2d.err"; then
    ok "info with a cfg naming two_dimensional on 2+1 ranks: refused with the reason, exit $rc"
else bad "info with an uneven two_dimensional: exit $rc"; tail -n 20 "$T/info-2d.out" "$T/info-2d.err"; fi
# docs/config.md's keys against info's listing of the one options table
# (tests/static/config_doc.py): every key, its default and its values; and a page
# planted with a wrong default, wrong bounds, a missing row, a wrong block
# line and a key the binary lacks fails, naming each.
if python3 tests/static/config_doc.py "$T/info-np1.out" > "$T/config-doc.out" 2>&1; then ok "$(tail -1 "$T/config-doc.out")"
else bad "config_doc: $(tail -1 "$T/config-doc.out")"; sed 's/^/     /' "$T/config-doc.out" | head -20; fi
sed -e 's/^| `seed` | 1 |/| `seed` | 2 |/' -e 's/^\(| `lock_lease` | [^|]*| \)1 to/\10 to/' -e '/^| `rescue` |/d' \
    -e 's/^chart=1 /chart=0 /' -e 's/^| `shuffle` |.*/&\n| `shuffled` | 1 | 0, 1 | 0\/1 |/' docs/config.md > "$T/config-plant.md"
python3 tests/static/config_doc.py "$T/info-np1.out" "$T/config-plant.md" > "$T/config-plant.out" 2>&1; rc=$?
want="seed's default is '2', the binary's '1'
lock_lease's values are '0 to 2147483647', the binary's '1 to 2147483647'
chart=0 in the block, the binary's default is '1'
rescue has no row in the table of every key
shuffled in the table is no key of the binary"
missing=$(echo "$want" | while read -r w; do grep -qF "$w" "$T/config-plant.out" || echo "$w"; done)
if [ $rc != 0 ] && [ -z "$missing" ] && [ "$(grep -c '^FAIL' "$T/config-plant.out")" = 5 ]; then ok "config_doc: the 5 planted disagreements of the page with the binary are named"
else bad "config_doc: planted disagreements (rc $rc): missing '$missing'; $(head -3 "$T/config-plant.out")"; fi
# A small real data set: 512 training and 200 test images of Fashion-MNIST.
fashion_slice "$D" 512 200 "$T/fashion.log" || bad "mn_fashion (see $T/fashion.log)"

# cfg NAME BATCH SUBDIV MAXB [extra [distributed] lines...]: the tiny
# classifier (conv+connected, without batch norm or dropout; tests/helpers/lib.sh).
cfg() {
    local f=$T/$1.cfg b=$2 s=$3 m=$4; shift 4
    mn_cfg "$f" batch=$((b * s)) subdivisions="$s" max_batches="$m" ${1+-- "$@"}
    echo "$f"
}
data() {   # data NAME [train-list]
    local f=$T/$1.data
    printf 'classes=10\ntrain=%s\nvalid=%s/test.list\nlabels=%s/labels.txt\nbackup=%s/%s\ntop=2\n' \
        "${2:-$D/train.list}" "$D" "$D" "$T" "$1" > "$f"
    echo "$f"
}

# train NAME NP CFG DATA [weights]: every rank's output and exit code in $T/NAME.{out,err,rc}.<rank> (mn).
train() { mn "$T/$1" "$2" classifier train "$4" "$3" ${5:-}; }

# Equivalence end to end: N ranks x batch b against 1 rank x batch N*b, deterministic data.
for s in 1 2; do
    for n in 2 4; do
        b=2
        c1=$(cfg "one-$n-$s" $((n * b)) $s 5 deterministic=1 shuffle=0)
        cn=$(cfg "many-$n-$s" $b $s 5 deterministic=1 shuffle=0)
        d1=$(data "one-$n-$s"); dn=$(data "many-$n-$s")
        train "one-$n-$s" 1 "$c1" "$d1"
        train "many-$n-$s" $n "$cn" "$dn"
        w1=$T/one-$n-$s/one-$n-${s}_final.weights wn=$T/many-$n-$s/many-$n-${s}_final.weights
        if all_rc "$T/one-$n-$s" 1 0 && all_rc "$T/many-$n-$s" $n 0 && "$TEST_BIN/mn_wcmp" "$wn" "$w1" 1e-5 > "$T/cmp-$n-$s.log"; then
            ok "e2e equivalence: $n ranks x batch $b vs 1 x $((n * b)), subdivisions $s ($(cat "$T/cmp-$n-$s.log"))"
        else
            bad "e2e equivalence $n x $b sub $s: $(cat "$T/cmp-$n-$s.log" 2>/dev/null) (see $T/many-$n-$s.err.*)"
        fi
        # The seen counter in both files is the global image count: 5 updates x N*b*s.
        if grep -q "seen $((5 * n * b * s)) vs $((5 * n * b * s))" "$T/cmp-$n-$s.log"; then ok "e2e seen = $((5 * n * b * s)) global images"
        else bad "e2e seen: $(cat "$T/cmp-$n-$s.log")"; fi
    done
done

# float16 allreduce tracks float32: same loss trend, weights within half-precision drift.
for dt in float32 float16; do
    c=$(cfg "dt-$dt" 4 1 40 deterministic=1 shuffle=0 allreduce_grad_dtype=$dt); d=$(data "dt-$dt")
    train "dt-$dt" 2 "$c" "$d"
done
l32=$(sed -n 's/^40: loss [0-9.]*, avg \([0-9.]*\).*/\1/p' "$T/dt-float32.out.0")
l16=$(sed -n 's/^40: loss [0-9.]*, avg \([0-9.]*\).*/\1/p' "$T/dt-float16.out.0")
if all_rc "$T/dt-float16" 2 0 && [ -n "$l32" ] && [ -n "$l16" ] && awk "BEGIN{d=$l16-$l32; if(d<0)d=-d; exit !(d <= 0.05*$l32)}" &&
   "$TEST_BIN/mn_wcmp" "$T/dt-float16/dt-float16_final.weights" "$T/dt-float32/dt-float32_final.weights" 0.05 > "$T/dt.log"; then
    ok "float16 allreduce: average loss after 40 updates $l16 vs float32 $l32; $(cat "$T/dt.log")"
else bad "float16 vs float32: avg loss '$l16' vs '$l32'; $(cat "$T/dt.log" 2>/dev/null)"; fi

# double_buffering=1 double_buffering_local=0 (ChainerMN's semantics, without the rate's hand-over):
# each update applies the previous step's mean and the first applies
# nothing. From the same start (one-2-1's weights, 5 updates of batch 4) and
# with a constant rate: 1 step with it leaves the weights as they were, 2
# steps with it equal 1 step without it, bit for bit; and N ranks x b equal
# 1 rank x N*b with it too (with the default hand-over).
# dbuf_cfg NAME [NET-EDIT...] -- DISTRIBUTED-LINE...: the tiny classifier
# (mn_cfg) at a constant rate, deterministic and unshuffled, as $T/NAME.cfg,
# whose path it prints.
dbuf_cfg() {
    local name=$1 net=(); shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do net+=("$1"); shift; done
    mn_cfg "$T/$name.cfg" policy=constant -steps -scales "${net[@]}" -- deterministic=1 shuffle=0 "${@:2}"
    echo "$T/$name.cfg"
}
w0=$T/one-2-1/one-2-1_final.weights
train db-one1 1 "$(dbuf_cfg db-one1 batch=4 max_batches=6 -burn_in -- double_buffering=1 double_buffering_local=0 double_buffering_handover=0)" "$(data db-one1)" "$w0"
train db-one2 1 "$(dbuf_cfg db-one2 batch=4 max_batches=7 -burn_in -- double_buffering=1 double_buffering_local=0 double_buffering_handover=0)" "$(data db-one2)" "$w0"
train db-off1 1 "$(dbuf_cfg db-off1 batch=4 max_batches=6 -burn_in -- double_buffering=0)" "$(data db-off1)" "$w0"
if all_rc "$T/db-one1" 1 0 && all_rc "$T/db-one2" 1 0 && all_rc "$T/db-off1" 1 0 &&
   "$TEST_BIN/mn_wcmp" "$T/db-one1/db-one1_final.weights" "$w0" 0 > "$T/db1.log" &&
   "$TEST_BIN/mn_wcmp" "$T/db-one2/db-one2_final.weights" "$T/db-off1/db-off1_final.weights" 0 > "$T/db2.log" &&
   ! "$TEST_BIN/mn_wcmp" "$T/db-off1/db-off1_final.weights" "$w0" 0 > "$T/db0.log"; then
    ok "double_buffering: 1 step keeps the weights ($(cat "$T/db1.log")); 2 steps = 1 step without it ($(cat "$T/db2.log")); without it 1 step moves them ($(cat "$T/db0.log"))"
else bad "double_buffering semantics: $(cat "$T"/db[012].log 2>/dev/null) (see $T/db-one2.err.0)"; fi
# double_buffering_fresh (default: the cfg's burn_in) averages the first
# iterations fresh. One step from one-2-1's weights is iteration 6: with
# burn_in=6 double buffering moves the weights bit for bit as none does;
# with double_buffering_fresh=0 and double_buffering_local=0 it keeps them
# (ChainerMN's first step); with
# double_buffering_fresh=7 two steps are two fresh steps.
train dbf-on 1 "$(dbuf_cfg dbf-on batch=4 max_batches=6 burn_in=6 -- double_buffering=1)" "$(data dbf-on)" "$w0"
train dbf-off 1 "$(dbuf_cfg dbf-off batch=4 max_batches=6 burn_in=6 -- double_buffering=0)" "$(data dbf-off)" "$w0"
train dbf-zero 1 "$(dbuf_cfg dbf-zero batch=4 max_batches=6 burn_in=6 -- double_buffering=1 double_buffering_fresh=0 double_buffering_local=0)" "$(data dbf-zero)" "$w0"
train dbf-on2 2 "$(dbuf_cfg dbf-on2 batch=2 max_batches=7 burn_in=6 -- double_buffering=1 double_buffering_fresh=7)" "$(data dbf-on2)" "$w0"
train dbf-off2 1 "$(dbuf_cfg dbf-off2 batch=4 max_batches=7 burn_in=6 -- double_buffering=0)" "$(data dbf-off2)" "$w0"
if all_rc "$T/dbf-on" 1 0 && all_rc "$T/dbf-off" 1 0 && all_rc "$T/dbf-zero" 1 0 && all_rc "$T/dbf-on2" 2 0 && all_rc "$T/dbf-off2" 1 0 &&
   grep -q "double_buffering=1: iterations 1-6 averaged fresh" "$T/dbf-on.out.0" &&
   grep -q "^darknet-mn: double_buffering_local=1: each update applies this rank's own gradient fresh" "$T/dbf-on.out.0" &&
   grep -q "^darknet-mn: double_buffering=1 against one process, measured: docs/benchmarks.md, double buffering and accuracy$" "$T/dbf-on.out.0" &&
   ! grep -q "^darknet-mn: double_buffering_compensation=" "$T/dbf-on.out.0" &&
   grep -q "with momentum 0.9 a stale step stays stable only on curvature 38x lower.*(what it cost, measured: docs/benchmarks.md, double buffering and accuracy)" "$T/db-one1.out.0" &&
   "$TEST_BIN/mn_wcmp" "$T/dbf-on/dbf-on_final.weights" "$T/dbf-off/dbf-off_final.weights" 0 > "$T/dbf1.log" &&
   "$TEST_BIN/mn_wcmp" "$T/dbf-zero/dbf-zero_final.weights" "$w0" 0 > "$T/dbf0.log" &&
   "$TEST_BIN/mn_wcmp" "$T/dbf-on2/dbf-on2_final.weights" "$T/dbf-off2/dbf-off2_final.weights" 1e-5 > "$T/dbf2.log"; then
    ok "double_buffering_fresh: rank 0 says what it costs; during burn_in a step = one without it ($(cat "$T/dbf1.log")); =0 keeps the first ($(cat "$T/dbf0.log")); 2 ranks x 2, 2 fresh steps = 1 x 4 without it ($(cat "$T/dbf2.log"))"
else bad "double_buffering_fresh: $(cat "$T"/dbf[012].log 2>/dev/null) (see $T/dbf-on.err.0, $T/dbf-on2.err.0)"; fi
# double_buffering_handover=K: the k-th stale mean is applied at
# s0^(1 - k/K) of the rate, s0 = (1-m)/(2(1+m)). With momentum 0 (s0 = 1/2)
# and no decay a scaled mean is a scaled rate: from one-2-1's weights
# (iteration 5), iterations 1-5 fresh, K=4, two steps: iteration 6 applies
# nothing, 7 applies iteration 6's mean at 0.5^(1/2) of the rate, so the run
# equals one without it (double_buffering_handover=0) at rate 0.05 x
# 0.70710678, and not one at 0.05.
train ho-on 1 "$(dbuf_cfg ho-on batch=4 max_batches=7 learning_rate=0.05 momentum=0 decay=0 -burn_in -- double_buffering=1 double_buffering_local=0 double_buffering_fresh=5 double_buffering_handover=4)" "$(data ho-on)" "$w0"
train ho-rate 1 "$(dbuf_cfg ho-rate batch=4 max_batches=7 learning_rate=0.035355339 momentum=0 decay=0 -burn_in -- double_buffering=1 double_buffering_local=0 double_buffering_fresh=5 double_buffering_handover=0)" "$(data ho-rate)" "$w0"
train ho-off 1 "$(dbuf_cfg ho-off batch=4 max_batches=7 learning_rate=0.05 momentum=0 decay=0 -burn_in -- double_buffering=1 double_buffering_local=0 double_buffering_fresh=5 double_buffering_handover=0)" "$(data ho-off)" "$w0"
if all_rc "$T/ho-on" 1 0 && all_rc "$T/ho-rate" 1 0 && all_rc "$T/ho-off" 1 0 &&
   grep -q "double_buffering_handover=4: the first 4 stale steps' rate climbs from 0.5 of the cfg's" "$T/ho-on.out.0" &&
   "$TEST_BIN/mn_wcmp" "$T/ho-on/ho-on_final.weights" "$T/ho-rate/ho-rate_final.weights" 1e-6 > "$T/ho1.log" &&
   ! "$TEST_BIN/mn_wcmp" "$T/ho-on/ho-on_final.weights" "$T/ho-off/ho-off_final.weights" 1e-4 > "$T/ho0.log"; then
    ok "double_buffering_handover=4: the second stale step at 0.707 of the rate = a run at that rate ($(cat "$T/ho1.log")); not the full rate ($(cat "$T/ho0.log"))"
else bad "double_buffering_handover: $(cat "$T"/ho[01].log 2>/dev/null) (see $T/ho-on.out.0, $T/ho-on.err.0)"; fi
# double_buffering_compensation=L (delay compensation; its arithmetic by
# exact values in tests/unit/test_stale.c). From one-2-1's weights, stale from
# the first step: the second step's mean was taken at the weights it is
# applied at (the first step applied nothing), so 2 steps equal 2 without
# it bit for bit, and a third differs. On 2 ranks a run stopped by SIGUSR1
# resumes bit-identical to an uninterrupted one: the checkpoint holds the
# weights each mean was taken at, the running mean square and prediction's
# weights before the last update (at 0.5: stale from the first step at this
# rate with lambda 1000, prediction at 1 diverged by iteration 42).
dc_cfg() { dbuf_cfg "$1" batch=4 max_batches="$2" -burn_in -- double_buffering=1 double_buffering_local=0 double_buffering_handover=0 double_buffering_compensation="$3" double_buffering_prediction="${4:-0.5}"; }
train dc-2 1 "$(dc_cfg dc-2 7 1000)" "$(data dc-2)" "$w0"
train dc-3 1 "$(dc_cfg dc-3 8 1000)" "$(data dc-3)" "$w0"
train dc-3off 1 "$(dc_cfg dc-3off 8 0)" "$(data dc-3off)" "$w0"
# 400 updates, the signal at the tenth: on a loaded machine a signal can take
# longer than the 40 updates of a shorter run.
train dc-ref 2 "$(dc_cfg dc-ref 400 1000)" "$(data dc-ref)" "$w0"
dcs=$(dc_cfg dc-stop 400 1000)
train dc-stop 2 "$dcs" "$(data dc-stop)" "$w0" &
for _ in $(seq 600); do grep -aq '^10: loss' "$T/dc-stop.out.0" 2> /dev/null && break; sleep 0.05; done
signal_rank1 USR1 "$T/dc-stop.data"
wait
dc_at=$(sed -n 's/.*stopped at iteration \([0-9]*\) .*/\1/p' "$T/dc-stop.out.0")
mkdir -p "$T/off" "$T/woff"   # the same cfg name without it (or prediction): its checkpoint is refused, naming the key
train dc-off 2 "$(dc_cfg off/dc-stop 400 0)" "$T/dc-stop.data" "$w0"
train dc-woff 2 "$(dc_cfg woff/dc-stop 400 1000 0)" "$T/dc-stop.data" "$w0"
train dc-stop 2 "$dcs" "$T/dc-stop.data" "$w0"
if all_rc "$T/dc-2" 1 0 && all_rc "$T/dc-3" 1 0 && all_rc "$T/dc-3off" 1 0 && all_rc "$T/dc-ref" 2 0 && [ -n "$dc_at" ] &&
   all_rc "$T/dc-stop" 2 0 && grep -q "resuming from checkpoint .*dc-stop.ckpt-$dc_at" "$T/dc-stop.out.0" && all_rc "$T/dc-off" 2 "$EX_REFUSED" &&
   grep -q "dc-stop.ckpt-$dc_at is of another experiment: \[distributed\] double_buffering_compensation=on in the checkpoint's run, 0 now" "$T/dc-off.err.0" &&
   all_rc "$T/dc-woff" 2 "$EX_REFUSED" &&
   grep -q "dc-stop.ckpt-$dc_at is of another experiment: \[distributed\] double_buffering_prediction=on in the checkpoint's run, 0 now" "$T/dc-woff.err.0" &&
   "$TEST_BIN/mn_wcmp" "$T/dc-2/dc-2_final.weights" "$T/db-one2/db-one2_final.weights" 0 > "$T/dc2.log" &&
   ! "$TEST_BIN/mn_wcmp" "$T/dc-3/dc-3_final.weights" "$T/dc-3off/dc-3off_final.weights" 0 > "$T/dc3.log" &&
   "$TEST_BIN/mn_wcmp" "$T/dc-stop/dc-stop_final.weights" "$T/dc-ref/dc-ref_final.weights" 0 > "$T/dcs.log"; then
    ok "double_buffering_compensation: 2 steps = 2 without it ($(cat "$T/dc2.log")); the third differs ($(cat "$T/dc3.log")); 2 ranks stopped at iteration $dc_at resume bit-identical to an uninterrupted run ($(cat "$T/dcs.log")), and not without it or prediction"
else bad "double_buffering_compensation: stopped at '$dc_at'; $(cat "$T"/dc2.log "$T"/dc3.log "$T"/dcs.log 2> /dev/null) (see $T/dc-stop.err.0, $T/dc-off.err.0, $T/dc-3.err.0)"; fi
# double_buffering_prediction=k (weight prediction; its arithmetic by exact
# values in tests/unit/test_stale.c). From one-2-1's weights, stale from the
# first step, no compensation: the first update applies nothing, so the
# second step's prediction moves nothing and the second update applies the
# gradient taken at the start; 3 updates equal 3 without it, bit for bit
# (a prediction taken too early would change the second or third), and the
# 4th applies the gradient taken at the prediction: it differs. The
# checkpoint's part: dc-stop above resumes bit-identical with it on (the
# default).
wp_cfg() { dbuf_cfg "$1" batch=4 max_batches="$2" -burn_in -- double_buffering=1 double_buffering_local=0 double_buffering_handover=0 double_buffering_compensation=0 double_buffering_prediction="$3"; }
for r in 3:8 4:9; do
    train "wp-${r%:*}" 1 "$(wp_cfg "wp-${r%:*}" "${r#*:}" 1)" "$(data "wp-${r%:*}")" "$w0"
    train "wp-${r%:*}off" 1 "$(wp_cfg "wp-${r%:*}off" "${r#*:}" 0)" "$(data "wp-${r%:*}off")" "$w0"
done
if all_rc "$T/wp-3" 1 0 && all_rc "$T/wp-3off" 1 0 && all_rc "$T/wp-4" 1 0 && all_rc "$T/wp-4off" 1 0 &&
   grep -q "^darknet-mn: double_buffering_prediction=1: each gradient that goes stale is taken at the weights plus 1 times the last update" "$T/wp-3.out.0" &&
   ! grep -q "^darknet-mn: double_buffering_prediction=" "$T/wp-3off.out.0" &&
   "$TEST_BIN/mn_wcmp" "$T/wp-3/wp-3_final.weights" "$T/wp-3off/wp-3off_final.weights" 0 > "$T/wp3.log" &&
   ! "$TEST_BIN/mn_wcmp" "$T/wp-4/wp-4_final.weights" "$T/wp-4off/wp-4off_final.weights" 0 > "$T/wp4.log"; then
    ok "double_buffering_prediction: 3 updates = 3 without it ($(cat "$T/wp3.log")); the 4th differs ($(cat "$T/wp4.log"))"
else bad "double_buffering_prediction: $(cat "$T"/wp3.log "$T"/wp4.log 2> /dev/null) (see $T/wp-3.err.0, $T/wp-4.err.0)"; fi
for n in 2 4; do
    b=$((4 / n))
    train "db-$n" $n "$(dbuf_cfg "db-$n" batch=$b max_batches=10 -burn_in -- double_buffering=1 double_buffering_local=0)" "$(data "db-$n")" "$w0"
    [ -f "$T/db-1x4.done" ] || { train db-1x4 1 "$(dbuf_cfg db-1x4 batch=4 max_batches=10 -burn_in -- double_buffering=1 double_buffering_local=0)" "$(data db-1x4)" "$w0"; touch "$T/db-1x4.done"; }
    if all_rc "$T/db-$n" $n 0 && all_rc "$T/db-1x4" 1 0 &&
       "$TEST_BIN/mn_wcmp" "$T/db-$n/db-${n}_final.weights" "$T/db-1x4/db-1x4_final.weights" 1e-5 > "$T/db-$n.log"; then
        ok "double_buffering: $n ranks x batch $b = 1 x 4 over 5 updates ($(cat "$T/db-$n.log"))"
    else bad "double_buffering $n ranks: $(cat "$T/db-$n.log" 2>/dev/null) (see $T/db-$n.err.0)"; fi
done
# double_buffering_local=1 (the default): each update applies the rank's own
# gradient fresh plus the previous mean less the rank's previous gradient.
# Where both ranks see the same images (a list whose global batches hold
# one rank's batch twice), the mean is each rank's own gradient and the
# stale parts cancel exactly: 2 ranks x 2, stale from the first step, equal
# 1 rank x 2 with fresh steps only, bit for bit, over 5 updates from
# one-2-1's weights at iteration 0 (-clear: the same list positions; both
# set Darknet's momentum part aside and add it back after the mean, which
# rounds otherwise than a run without double buffering; a
# mean applied late, or an own gradient subtracted from the wrong step,
# breaks it). On the usual list the ranks' models drift apart and are
# averaged before each save: the run ends with the replica check passed
# (without the averaging it fails), and not as double_buffering_local=0 does.
head -n 40 "$D/train.list" > "$T/dl-pairs.list"
awk '{p[NR % 2] = $0} NR % 2 == 0 {print p[1]; print p[0]; print p[1]; print p[0]}' "$T/dl-pairs.list" > "$T/dl-twice.list"
mn "$T/dl-2" 2 classifier train "$(data dl-2 "$T/dl-twice.list")" "$(dbuf_cfg dl-2 batch=2 max_batches=5 -burn_in -- double_buffering=1 double_buffering_fresh=0)" "$w0" -clear
mn "$T/dl-1" 1 classifier train "$(data dl-1 "$T/dl-pairs.list")" "$(dbuf_cfg dl-1 batch=2 max_batches=5 -burn_in -- double_buffering=1 double_buffering_fresh=5)" "$w0" -clear
train dl-drift 2 "$(dbuf_cfg dl-drift batch=2 max_batches=10 -burn_in -- double_buffering=1 double_buffering_fresh=0 checkpoint_interval=5)" "$(data dl-drift)" "$w0"
if all_rc "$T/dl-2" 2 0 && all_rc "$T/dl-1" 1 0 && all_rc "$T/dl-drift" 2 0 &&
   grep -q "^darknet-mn: double_buffering_local=1: each update applies" "$T/dl-drift.out.0" &&
   "$TEST_BIN/mn_wcmp" "$T/dl-2/dl-2_final.weights" "$T/dl-1/dl-1_final.weights" 0 > "$T/dl1.log" &&
   ! "$TEST_BIN/mn_wcmp" "$T/dl-drift/dl-drift_final.weights" "$T/db-2/db-2_final.weights" 0 > "$T/dl0.log"; then
    ok "double_buffering_local: 2 ranks x 2 on the same images = 1 x 2 fresh ($(cat "$T/dl1.log")); on their own images the models are one at each save, not double_buffering_local=0's ($(cat "$T/dl0.log"))"
else bad "double_buffering_local: $(cat "$T"/dl[01].log 2> /dev/null) (see $T/dl-2.err.0, $T/dl-drift.err.0)"; fi

# Rank 0 reports; the others print nothing on success.
progress=$(grep -c '^[0-9]*: loss' "$T/many-4-2.out.0")
quiet=$(cat "$T"/many-4-2.out.[123] "$T"/many-4-2.err.[123] | wc -c)
if [ "$progress" = 5 ] && [ "$quiet" = 0 ] && grep -q "ETA" "$T/many-4-2.out.0"; then ok "rank 0 prints 5 progress lines, ranks 1-3 print nothing"
else bad "reporting: $progress progress lines on rank 0, $quiet bytes from other ranks"; fi
if ls "$T"/many-4-2/*.tmp > /dev/null 2>&1; then bad "temporary weights file left behind"; else ok "no temporary files left"; fi

# Random (non-deterministic) mode runs too, on 3 ranks (shards of 171/171/170).
c=$(cfg rand 4 1 4 communicator=naive seed=7); d=$(data rand)
train rand 3 "$c" "$d"
if all_rc "$T/rand" 3 0 && [ -s "$T/rand/rand_final.weights" ]; then ok "random-sampling training on 3 ranks, naive"
else bad "random training (see $T/rand.err.*)"; fi

# Weights from darknet-mn load in Debian's stock darknet, and stock weights load in darknet-mn:
# both score the same top-1 on the test list.
if command -v darknet > /dev/null; then
    plain=$(cfg plain 8 1 3)
    dv=$(data plain)
    ours=$(timeout 120 ./darknet_mn classifier valid "$dv" "$plain" "$T/many-4-1/many-4-1_final.weights" 2>/dev/null | sed -n 's/.*top-1 \([0-9.]*\).*/\1/p')
    stock=$(cd "$T" && timeout 120 darknet classifier valid "$dv" "$plain" "$T/many-4-1/many-4-1_final.weights" 2>/dev/null | tail -1 | sed -n 's/.*top 1: \([0-9.]*\).*/\1/p')
    if [ -n "$ours" ] && [ -n "$stock" ] && awk "BEGIN{exit !($ours == $stock)}"; then ok "stock darknet reads our weights: top-1 $stock = ours $ours"
    else bad "stock darknet on our weights: stock '$stock' ours '$ours'"; fi
    mkdir -p "$T/plain"
    (cd "$T" && timeout 120 darknet classifier train "$dv" "$plain" > stock-train.log 2>&1)
    sw=$T/plain/plain.weights
    if [ -s "$sw" ] && timeout 60 $MPI -n 2 ./darknet_mn classifier valid "$dv" "$plain" "$sw" > "$T/stockw.log" 2>&1 && grep -q "top-1" "$T/stockw.log"; then
        ok "darknet-mn reads stock weights: $(grep top-1 "$T/stockw.log")"
    else bad "darknet-mn on stock weights (see $T/stock-train.log, $T/stockw.log)"; fi
else
    bad "Debian's darknet package is not installed (make deps installs it)"
fi

# Multi-node evaluation counts equal a one-rank run for any rank count.
v1=$(timeout 60 $MPI -n 1 ./darknet_mn classifier valid "$(data v)" "$(cfg v 8 1 3)" "$T/many-4-1/many-4-1_final.weights" 2>/dev/null | grep top-1)
for n in 2 3 4; do
    vn=$(timeout 60 $MPI -n $n ./darknet_mn classifier valid "$T/v.data" "$T/v.cfg" "$T/many-4-1/many-4-1_final.weights" 2>/dev/null | grep top-1)
    if [ -n "$v1" ] && [ "${vn#* on $n ranks}" = "${v1#* on 1 ranks}" ]; then ok "valid on $n ranks = 1 rank (${v1#*: })"
    else bad "valid on $n ranks: '$vn' vs '$v1'"; fi
done

echo "== user errors (clear message, every rank exits non-zero, within the time limit, no partial file)"
# expect_error (tests/helpers/lib.sh): classifier train on NP ranks, backup folder $T/NAME.
good=$(cfg good 2 1 3)
expect_error "$T/bad-comm" 2 "bad-comm.cfg.*communicator 'ring' is unknown; valid communicators: naive, flat" -- \
    "$PROG" classifier train "$(data bad-comm)" "$(cfg bad-comm 2 1 3 communicator=ring)"
expect_error "$T/bad-dtype" 2 "bad-dtype.cfg.*allreduce_grad_dtype='int8'" -- \
    "$PROG" classifier train "$(data bad-dtype)" "$(cfg bad-dtype 2 1 3 allreduce_grad_dtype=int8)"
expect_error "$T/bad-number" 2 "bad-number.cfg.*seed='seven' must be" -- "$PROG" classifier train "$(data bad-number)" "$(cfg bad-number 2 1 3 seed=seven)"
expect_error "$T/bad-dc" 2 "bad-dc.cfg.*double_buffering_compensation='-1' must be a number from 0 (none) to 1000000" -- \
    "$PROG" classifier train "$(data bad-dc)" "$(cfg bad-dc 2 1 3 double_buffering=1 double_buffering_compensation=-1)"
expect_error "$T/bad-wp" 2 "bad-wp.cfg.*double_buffering_prediction='2' must be a number from 0 (none) to 1" -- \
    "$PROG" classifier train "$(data bad-wp)" "$(cfg bad-wp 2 1 3 double_buffering=1 double_buffering_prediction=2)"
expect_error "$T/bad-dl" 2 "bad-dl.cfg:[0-9]*: \[distributed\] double_buffering_compensation=100 corrects a stale mean, which double_buffering_local=1 (the default) does not apply.*set double_buffering_local=0" -- \
    "$PROG" classifier train "$(data bad-dl)" "$(cfg bad-dl 2 1 3 double_buffering=1 double_buffering_compensation=100)"
expect_error "$T/bad-key" 2 "unknown key 'comunicator'" -- "$PROG" classifier train "$(data bad-key)" "$(cfg bad-key 2 1 3 comunicator=flat)"
expect_error "$T/missing-list" 2 "cannot open list $T/nope.list" -- "$PROG" classifier train "$(data missing-list "$T/nope.list")" "$good"
: > "$T/empty.list"
expect_error "$T/empty-list" 2 "list $T/empty.list is empty" -- "$PROG" classifier train "$(data empty-list "$T/empty.list")" "$good"
head -2 "$D/train.list" > "$T/two.list"
expect_error "$T/too-few-images" 3 "has 2 paths, fewer than the 3 ranks" -- "$PROG" classifier train "$(data too-few-images "$T/two.list")" "$good"
{ head -3 "$D/train.list"; echo "$T/missing_$(sed -n 1p "$D/labels.txt").png"; } > "$T/badimg.list"
expect_error "$T/unreadable-image" 2 "cannot read image $T/missing_" -- \
    "$PROG" classifier train "$(data unreadable-image "$T/badimg.list")" "$(cfg unreadable 2 1 3 deterministic=1 shuffle=0)"
w=$T/many-4-1/many-4-1_final.weights
head -c 1000 "$w" > "$T/truncated.weights"
expect_error "$T/truncated-weights" 2 "truncated.weights ends inside layer [0-9]* ([0-9]* of its [0-9]* bytes present): it is truncated, or holds another network.s weights" -- \
    "$PROG" classifier train "$(data truncated-weights)" "$good" "$T/truncated.weights"
{ cat "$w"; head -c 64 "$w"; } > "$T/long.weights"
expect_error "$T/misfit-weights" 2 "does not fit the cfg" -- "$PROG" classifier train "$(data misfit-weights)" "$good" "$T/long.weights"
# Different cfgs on different ranks.
other=$T/other.cfg; mn_cfg "$other" batch=2 max_batches=3 filters=16; dd=$(data mixed)
timeout 60 $MPI -n 1 sh -c "$(rank_cmd "$T/mixed" "$PROG" classifier train "$dd" "$good")" : \
    -n 1 sh -c "$(rank_cmd "$T/mixed" "$PROG" classifier train "$dd" "$other")"
if all_rc "$T/mixed" 2 nonzero && grep -q "rank 1 .*other.cfg:17: \[convolutional\] 'filters=16' here, but 'filters=8' in rank 0's" "$T/mixed.err.1"; then ok "different cfgs on two ranks: $(head -1 "$T/mixed.err.1")"
else bad "different cfgs: $(cat "$T"/mixed.err.* | head -3)"; fi

# The suites tests/suites.txt tags test share this script's folders and
# data; each prints its own ok/FAIL lines and exits non-zero on any failure.
# hank-ai's suites, the model zoo's rows and the detectors' learning are
# make test-hankai's and make test-zoo's, keeping make test under its 15
# minutes in a fresh root (docs/testing.md).
run_suites test T="$T" D="$D" TEST_BIN="$TEST_BIN" BUILD="$BUILD" MPI="$MPI"

# The GPU builds, and these checks on them: make test-gpu (tests/gpu/gpu_builds.sh).
# Suites that .ci/run's lanes run side by side must not share a scratch
# folder (each empties its own at start): every suite's build/test-NAME,
# from suite_folder NAME or T=$T-NAME, is its alone.
folders=$(grep -rhoE '^\s*(suite_folder [a-z0-9-]+|T=\$T-[a-z0-9-]+|T=\$\(pwd\)/\$BUILD/test-[a-z0-9-]+)' tests --include='*.sh' |
          sed -E 's/.*(suite_folder |T=\$T-|\/test-)//' | sort)
if [ -n "$folders" ] && [ -z "$(echo "$folders" | uniq -d)" ]; then
    ok "scratch folders: $(echo "$folders" | wc -l) suites' build/test-NAME, none shared ($(echo "$folders" | paste -sd' '))"
else bad "scratch folders shared by suites: $(echo "$folders" | uniq -d | paste -sd' ') (tests/*/*.sh: suite_folder NAME or T=\$T-NAME)"; fi

echo "== The plugin's layers: calls go one way (tests/static/layers.py, docs/design.md)"
LAYERS=$(make -s --no-print-directory print-layers)
# pjreddie's CPU build (AlexeyAB's: tests/e2e/run_alexeyab.sh; the GPU builds: make test-gpu).
if python3 tests/static/layers.py "$LAYERS" "$BUILD/cpu/libdarknet_mn.a" > "$T/layers.out" 2>&1; then cat "$T/layers.out"; pass=$((pass + 1))
else sed 's/^/     /' "$T/layers.out" | cut -c1-600; bad "layers: $BUILD/cpu/libdarknet_mn.a"; fi
# The check itself: a lower file calling a higher one that calls it back.
L=$T/layers-self && rm -rf "$L" && mkdir -p "$L/src/low" "$L/src/high"
echo 'int mn_high(void); int mn_low(void) { return mn_high(); }' > "$L/src/low/mn_a.c"
echo 'int mn_low(void); int mn_high(void) { return 1 + mn_low(); }' > "$L/src/high/mn_b.c"
gcc -c "$L/src/low/mn_a.c" -o "$L/mn_a.o" && gcc -c "$L/src/high/mn_b.c" -o "$L/mn_b.o" && ar rcs "$L/lib.a" "$L/mn_a.o" "$L/mn_b.o"
python3 tests/static/layers.py --src "$L/src" low,high "$L/lib.a" > "$L/out" 2>&1; rc=$?
if [ $rc != 0 ] && grep -q "low/mn_a calls up into high/mn_b (mn_high)" "$L/out" &&
   grep -q "a cycle of calls among 2 files: high/mn_b, low/mn_a" "$L/out"; then ok "layers: a planted upward call and cycle are named"
else bad "layers: the planted cycle was not reported (rc $rc): $(head -3 "$L/out")"; fi

# Includes go one way too, each naming its layer, and the public header
# stands on its own: it reaches no base/ header nor Darknet's, and a
# program including it alone compiles with only plugin/ on the include path.
if python3 tests/static/layers.py --includes "$LAYERS" > "$T/includes.out" 2>&1; then cat "$T/includes.out"; pass=$((pass + 1))
else sed 's/^/     /' "$T/includes.out" | cut -c1-300; bad "includes: $(grep -c FAIL "$T/includes.out") includes of a higher layer's header, the public header reaching the base, or CUDA calls in train/"; fi
printf '#include "darknet_mn.h"\nint main(void) { return mn_exit_status(MN_OK); }\n' > "$T/public.c"
if mpicc -fsyntax-only -Wall -Wextra -std=gnu99 -Iplugin "$T/public.c" > "$T/public.out" 2>&1; then
    ok "darknet_mn.h compiles alone, with no Darknet header on the include path"
else bad "darknet_mn.h does not compile alone: $(head -c 300 "$T/public.out")"; fi
# The include check itself: a lower layer's header including a higher one's, and the public one.
mkdir -p "$L/src/low" "$L/src/high" && printf '#include "high/mn_b.h"\n' > "$L/src/low/mn_a.h" && : > "$L/src/high/mn_b.h"
printf '#include "darknet_mn.h"\n' > "$L/src/high/mn_c.c" && printf '#include "low/mn_a.h"\n#include "darknet.h"\n' > "$L/src/darknet_mn.h"
# And a part's private header (high/part/mn_d.h, not mn_part.h) included from outside its folder.
mkdir -p "$L/src/high/part" && : > "$L/src/high/part/mn_d.h" && : > "$L/src/high/part/mn_part.h"
printf '#include "high/part/mn_part.h"\n#include "high/part/mn_d.h"\n' > "$L/src/high/mn_e.c"
printf '#include "high/part/mn_d.h"\n' > "$L/src/high/part/mn_f.c"
# And a lower folder's *_impl.h included from above it (low/mn_low_impl.h), but not from its own folder.
: > "$L/src/low/mn_low_impl.h" && printf '#include "low/mn_low_impl.h"\n' > "$L/src/low/mn_g.c" && printf '#include "low/mn_low_impl.h"\n' > "$L/src/high/mn_h.c"
# And a header of its own folder included by its name alone.
printf '#include "mn_b.h"\n' > "$L/src/high/mn_i.c"
python3 tests/static/layers.py --src "$L/src" --includes low,high/part,high > "$L/inc.out" 2>&1; rc=$?
if [ $rc != 0 ] && grep -q "low/mn_a.h includes high/mn_b.h, a header of a higher layer" "$L/inc.out" &&
   grep -q "high/mn_c.c includes the public header darknet_mn.h" "$L/inc.out" && grep -q "darknet_mn.h reaches darknet.h" "$L/inc.out" &&
   grep -q "high/mn_e.c includes high/part/mn_d.h, private to its folder" "$L/inc.out" && [ "$(grep -c 'mn_part.h\|mn_f.c' "$L/inc.out")" = 1 ] &&
   grep -q "high/mn_h.c includes low/mn_low_impl.h, private to its folder" "$L/inc.out" && ! grep -q "mn_g.c" "$L/inc.out" &&
   grep -q "high/mn_i.c includes mn_b.h by its name alone: a plugin include names its layer (high/mn_b.h)" "$L/inc.out"; then
    ok "includes: a planted upward include, an include of the public header and its reach into Darknet, of private headers (a part's, a *_impl.h), and one not naming its layer, are named"
else bad "includes: the planted includes were not reported (rc $rc): $(head -3 "$L/inc.out")"; fi
# And the device rule: a CUDA, cuDNN or NCCL call in train/ or a part of it
# is named; one in transport, or in a comment or string of train/, is not.
V=$T/layers-device && rm -rf "$V" && mkdir -p "$V/src/transport" "$V/src/train/part" && : > "$V/src/darknet_mn.h"
printf 'int f(void *p) { return cudaFree(p); }\n' > "$V/src/transport/mn_t.c"
printf '/* cudaFree(p) */\nconst char *w = "cudaMalloc(";\nint g(void *p) { return mn_device_free(p); }\n' > "$V/src/train/mn_a.c"
printf 'void h(void *c, void *n) {\n    if (cudnnCreate(c)) return;\n    ncclCommAbort (n);\n}\n' > "$V/src/train/part/mn_b.c"
python3 tests/static/layers.py --src "$V/src" --includes transport,train,train/part > "$V/out" 2>&1; rc=$?
if [ $rc != 0 ] && grep -q "FAIL device: train/part/mn_b.c:2 calls cudnnCreate" "$V/out" &&
   grep -q "FAIL device: train/part/mn_b.c:3 calls ncclCommAbort" "$V/out" && [ "$(grep -c 'FAIL' "$V/out")" = 2 ]; then
    ok "layers: planted cuDNN and NCCL calls in a part of train/ are named with file:line; transport's, a comment's and a string's are not"
else bad "layers: the planted device calls in train/ were not reported (rc $rc): $(head -3 "$V/out")"; fi
# And the coll rule: a read of the communicator's coll state outside coll/
# is named; coll's own, and one in a comment, are not.
V=$T/layers-coll && rm -rf "$V" && mkdir -p "$V/src/coll" "$V/src/train/part" && : > "$V/src/darknet_mn.h"
printf 'int f(struct c *c) { return c->coll->half; }\n' > "$V/src/coll/mn_c.c"
printf '/* c->coll->half */\nint g(struct c *c) {\n    return c -> coll->ops != 0;\n}\n' > "$V/src/train/part/mn_p.c"
python3 tests/static/layers.py --src "$V/src" --includes coll,train,train/part > "$V/out" 2>&1; rc=$?
if [ $rc != 0 ] && grep -q "FAIL coll: train/part/mn_p.c:3 reads the communicator's coll state" "$V/out" &&
   [ "$(grep -c 'FAIL' "$V/out")" = 1 ]; then
    ok "layers: a planted read of the communicator's coll state in a part of train/ is named with file:line; coll's own and a comment's are not"
else bad "layers: the planted coll state read was not reported (rc $rc): $(head -3 "$V/out")"; fi

echo "== Nothing outside base/ reads Darknet's network or layers, nor calls Darknet (tests/static/boundary.py, docs/design.md)"
# The sources, and the objects of pjreddie's CPU build (AlexeyAB's CPU
# build: tests/e2e/run_alexeyab.sh; the GPU builds: make test-gpu).
if python3 tests/static/boundary.py "$LAYERS" main.c --link $(make -s --no-print-directory BUILD="$BUILD" print-link) > "$T/boundary.out" 2>&1; then cat "$T/boundary.out"; pass=$((pass + 1))
else sed 's/^/     /' "$T/boundary.out" | head -20 | cut -c1-300; bad "boundary: $(grep -c FAIL "$T/boundary.out") network or layer reads or Darknet calls outside base/"; fi
# The link check itself: an object above base/ calling Darknet's load_data and reading its gpu_index,
# one below it (the engine's place) calling make_image, and main.o calling top_k, are named with
# object and symbol; a base/ object calling load_data is not.
P=$T/boundary-link && rm -rf "$P" && mkdir -p "$P/src/low" "$P/src/base" "$P/src/high"
echo 'int load_data(int); int mn_ok(void) { return load_data(1); }' > "$P/src/base/mn_ok.c"
echo 'int make_image(int); int mn_low(void) { return make_image(1); }' > "$P/src/low/mn_low.c"
echo 'extern int gpu_index; int load_data(int); int mn_bad(void) { return load_data(gpu_index); }' > "$P/src/high/mn_bad.c"
echo 'int top_k(void); int main(void) { return top_k(); }' > "$P/main.c"
gcc -c "$P/src/base/mn_ok.c" -o "$P/mn_ok.o" && gcc -c "$P/src/high/mn_bad.c" -o "$P/mn_bad.o" && gcc -c "$P/main.c" -o "$P/main.o" &&
    gcc -c "$P/src/low/mn_low.c" -o "$P/mn_low.o" && ar rcs "$P/lib.a" "$P/mn_ok.o" "$P/mn_bad.o" "$P/mn_low.o"
dk=$(make -s --no-print-directory BUILD="$BUILD" print-link | cut -d' ' -f1)
python3 tests/static/boundary.py --src "$P/src" low,base,high --link "$dk" "$P/lib.a" "$P/main.o" > "$P/out" 2>&1; rc=$?
want="$P/lib.a(mn_bad.o) [high/mn_bad] calls Darknet's gpu_index (defined in $dk(cuda.o))
$P/lib.a(mn_bad.o) [high/mn_bad] calls Darknet's load_data (defined in $dk(data.o))
$P/lib.a(mn_low.o) [low/mn_low] calls Darknet's make_image (defined in $dk(image.o))
$P/main.o [outside base/] calls Darknet's top_k (defined in $dk(utils.o))"
missing=$(echo "$want" | while read -r w; do grep -qF "$w" "$P/out" || echo "$w"; done)
if [ $rc != 0 ] && [ -z "$missing" ] && [ "$(grep -c FAIL "$P/out")" = 4 ]; then ok "boundary: the 4 planted Darknet calls outside base/ (a layer below it too) are named with object and symbol"
else bad "boundary: planted Darknet calls (rc $rc): missing '$missing'; $(head -3 "$P/out")"; fi
# The check itself: each planted read is named with its file and line; comments, strings and base/ are not.
B=$T/boundary-self && rm -rf "$B" && mkdir -p "$B/src/base" "$B/src/high"
echo 'int g(network *net) { return net->n; }' > "$B/src/base/mn_ok.c"
cat > "$B/src/high/mn_bad.c" <<'BAD'
/* net->n in a comment is no read, nor "net->n" in a string */
static int f(network *net, struct run *r, network **out, network n)
{
    int b = net->batch;
    int k = r->net->n + (*out)->w;
    return b + k + r->net->layers[0].type + n.layers[1].type + mn_net_get(net).batch;
}
BAD
python3 tests/static/boundary.py --src "$B/src" base,high > "$B/out" 2>&1; rc=$?
want="mn_bad.c:4: reads the network (net->batch)
mn_bad.c:5: reads the network (net->n)
mn_bad.c:5: reads the network ((*out)->w)
mn_bad.c:6: reads the network (net->layers)
mn_bad.c:6: reads the network (n.layers)"
missing=$(echo "$want" | while read -r w; do grep -qF "$w" "$B/out" || echo "$w"; done)
if [ $rc != 0 ] && [ -z "$missing" ] && [ "$(grep -c FAIL "$B/out")" = 5 ]; then ok "boundary: the 5 planted network reads are named with file and line"
else bad "boundary: planted reads (rc $rc): missing '$missing'; $(head -3 "$B/out")"; fi
# Layers: a layer * or a copied layer dereferenced, the accessors' returns dereferenced, Darknet's
# layer types named; a layer * handed on, mn_layer_get's copy, comments, strings and base/ are not.
mkdir -p "$B/lsrc/base" "$B/lsrc/high"
echo 'int h(layer *l) { return l->type == YOLO; }' > "$B/lsrc/base/mn_ok.c"
cat > "$B/lsrc/high/mn_badl.c" <<'BAD'
/* l->type == YOLO in a comment is no read, nor "last.classes" in a string */
static int g(network *net, const layer *l)
{
    layer last = *mn_net_last(net);
    int k = l->classes + last.jitter + mn_net_layer(net, 0)->batch + mn_net_last(net)->classes;
    LAYER_TYPE t = l->type;
    return k + (t == YOLO) + mn_layer_params(mn_net_layer(net, 1), 0, 0) + mn_layer_last(net).classes;
}
static float h(const float *data, int n) { data d = mn_base_load(); box_label *b = 0; return data[n] + d.X.rows + (b != 0); }
static int i(const char *image) { image im = mn_base_load_image(image, 0, 0); return im.w; }
BAD
python3 tests/static/boundary.py --src "$B/lsrc" base,high > "$B/lout" 2>&1; rc=$?
want="mn_badl.c:5: reads a layer (l->classes)
mn_badl.c:5: reads a layer (last.jitter)
mn_badl.c:5: reads a layer (mn_net_layer(net,0)->batch)
mn_badl.c:5: reads a layer (mn_net_last(net)->classes)
mn_badl.c:6: names Darknet's layer type (LAYER_TYPE)
mn_badl.c:6: reads a layer (l->type)
mn_badl.c:7: names Darknet's layer type (YOLO)
mn_badl.c:9: names a Darknet value type (data d =)
mn_badl.c:9: names a Darknet value type (box_label)
mn_badl.c:10: names a Darknet value type (image im =)"
missing=$(echo "$want" | while read -r w; do grep -qF "$w" "$B/lout" || echo "$w"; done)
if [ $rc != 0 ] && [ -z "$missing" ] && [ "$(grep -c FAIL "$B/lout")" = 10 ]; then ok "boundary: the 10 planted layer reads, layer types and value types are named with file and line (a float *data or char *image is none)"
else bad "boundary: planted layer reads (rc $rc): missing '$missing'; $(head -3 "$B/lout")"; fi

echo "== The plugin's CUDA, cuDNN and NCCL calls (tests/static/gpu_calls.py)"
if python3 tests/static/gpu_calls.py plugin > "$T/gpu-calls.out" 2>&1; then ok "$(tail -1 "$T/gpu-calls.out")"
else bad "gpu_calls: $(tail -1 "$T/gpu-calls.out")"; sed 's/^/     /' "$T/gpu-calls.out" | head -20; fi
echo "== Every shell script parses (bash -n)"
# Most suites run outside make test (the cluster's, the GPU's, CI's): a
# script that does not parse would be found only there.
shells=$(git ls-files 2> /dev/null | grep -E '\.sh$|\.sbatch$|^\.ci/run$' || ls tests/*.sh tests/*/*.sh scripts/*.sh scripts/*.sbatch bench/*.sh .ci/run)
unparsed=$(for f in $shells; do bash -n "$f" 2>&1 | head -1; done)
if [ -z "$unparsed" ]; then ok "bash -n: all $(echo "$shells" | wc -w) shell scripts parse"
else bad "bash -n: $(echo "$unparsed" | head -3)"; fi
echo "== Every suite has a row in tests/suites.txt, and every row's script is there"
# A suite left out of the list would run under no target.
listed=$(awk '!/^#/ && NF { print $2 }' tests/suites.txt | sort -u)
suites=$(ls tests/e2e/*.sh tests/cluster/*.sh tests/gpu/*.sh tests/sanitize/*.sh | sort -u)
unlisted=$(comm -13 <(echo "$listed") <(echo "$suites")) absent=$(comm -23 <(echo "$listed") <(echo "$suites"))
if [ -z "$unlisted$absent" ]; then ok "suites.txt: all $(echo "$suites" | wc -l) suites listed, each row's script present"
else bad "suites.txt: not listed: '$(echo $unlisted)'; listed but absent: '$(echo $absent)'"; fi
echo "== What the user pages name exists (tests/static/docs_names.py)"
if python3 tests/static/docs_names.py > "$T/docs-names.out" 2>&1; then ok "$(tail -1 "$T/docs-names.out")"
else bad "docs_names: $(tail -1 "$T/docs-names.out")"; sed 's/^/     /' "$T/docs-names.out" | head -20; fi
printf 'Run `make demo`, then `make no-such-target`.\nSee scripts/no_such.sh and tests/e2e/run_ckpt.sh.\nThe GPU build has never run on a GPU.\n' > "$T/bad-page.md"
python3 tests/static/docs_names.py "$T/bad-page.md" > "$T/docs-names-self.out" 2>&1; rc=$?
if [ $rc != 0 ] && grep -q "bad-page.md:1: 'make no-such-target': no target 'no-such-target'" "$T/docs-names-self.out" &&
   grep -q "bad-page.md:2: scripts/no_such.sh is not in the repository" "$T/docs-names-self.out" &&
   grep -q "bad-page.md:3: says otherwise than the pages agree (a GPU has run darknet-mn" "$T/docs-names-self.out" &&
   [ "$(grep -c 'bad-page.md' "$T/docs-names-self.out")" = 3 ]; then ok "docs_names: a page's missing make target, missing script and a contradicted fact named with file:line"
else bad "docs_names self-test (rc $rc): $(head -4 "$T/docs-names-self.out")"; fi

echo "== Comments say what and why, once (tests/static/comments.py)"
if python3 tests/static/comments.py > "$T/comments.out" 2>&1; then ok "comments: $(tail -1 "$T/comments.out" | cut -c6-)"
else bad "comments: $(grep FAIL "$T/comments.out" | head -3)"; fi
# The check itself, on a planted tree: clean, then with a dated comment in a
# script, a stop number in C, and comments twice the allowed density.
C=$T/comments-self && rm -rf "$C" && mkdir -p "$C/plugin/core" "$C/tests" "$C/build/plugin"
printf '/* What f does. */\nint f(void);\nint g(void);\n' > "$C/plugin/core/mn_a.c"
printf '/* one two three four five six seven eight nine ten eleven */\nint h(void);\n' > "$C/build/plugin/mn_x.c"
python3 tests/static/comments.py --root "$C" > "$C/clean.out" 2>&1; rc0=$?
# The planted date and session number are made here, so that this file
# carries neither.
day=$(date -u +%Y-%m-%d) when="Session $((6 * 2))"
printf '# measured on %s at 3 s\n' "$day" > "$C/tests/run_x.sh"
printf '/* %s made this faster */\nint k(void);\n' "$when" > "$C/plugin/core/mn_b.c"
python3 tests/static/comments.py --root "$C" > "$C/out" 2>&1; rc=$?
if [ $rc0 = 0 ] && grep -q "density: plugin: 3 comment words on 2 lines" "$C/clean.out" && [ $rc != 0 ] &&
   grep -q "FAIL history: tests/run_x.sh: # measured on $day" "$C/out" &&
   grep -q "FAIL history: plugin/core/mn_b.c: /\* $when" "$C/out" &&
   grep -q "FAIL density: plugin: 8 comment words on 3 lines of code, 2.67 a line" "$C/out"; then
    ok "comments: a planted dated script comment, a session number and dense comments are named (build/ is not read)"
else bad "comments self-test (rc $rc0 then $rc): $(cat "$C/clean.out" "$C/out" | head -5)"; fi

# The check itself: each kind of planted bad line is named with its file and line.
G=$T/gpu-calls-self && rm -rf "$G" && mkdir -p "$G/p"
cat > "$G/p/mn_bad.c" <<'BAD'
static int f(float *d, float *h, int *flag, cudaStream_t s, ncclComm_t comm)
{
    int bad = 0;
    cudaMemcpyAsync(h, d, 4, cudaMemcpyDeviceToHost, s);
    if (cudaMemsetAsync(flag, 0, 4, NULL) != cudaSuccess) return 1;
    if (mn_gpu_add(d, h, 1, 0)) return 1;
    cudaMemcpy(h, d, 4, cudaMemcpyDeviceToHost) == cudaSuccess;
    (void)ncclCommAbort(comm);
    if (cudaMemcpyAsync(&bad, flag, sizeof bad, cudaMemcpyDeviceToHost, s) != cudaSuccess) return 1;
    return ncclAllReduce(d, d, 1, ncclFloat32, ncclSum, comm, (cudaStream_t)0) != ncclSuccess;
}
static int g(const mn_comm *c, float *d, int *flag, void *s)
{
    int bad = 0;
    mn_device_copy(d, d, 4, MN_ON_DEVICE, s);
    mn_device_must(c, mn_device_zero(flag, 4, NULL), "zero");
    return mn_device_copy(&bad, flag, sizeof bad, MN_TO_HOST, s);
}
BAD
python3 tests/static/gpu_calls.py "$G/p" > "$G/out" 2>&1; rc=$?
want="mn_bad.c:4: the status of cudaMemcpyAsync is not checked
mn_bad.c:5: cudaMemsetAsync on a literal NULL stream
mn_bad.c:6: mn_gpu_add on a literal NULL stream
mn_bad.c:7: cudaMemcpy runs on the legacy default stream
mn_bad.c:8: the status of ncclCommAbort is not checked
mn_bad.c:9: cudaMemcpyAsync device-to-host into '&bad' (pageable memory)
mn_bad.c:10: ncclAllReduce on a literal NULL stream
mn_bad.c:15: the status of mn_device_copy is not checked
mn_bad.c:16: mn_device_zero on a literal NULL stream
mn_bad.c:17: mn_device_copy device-to-host into '&bad' (pageable memory)"
missing=$(echo "$want" | while read -r w; do grep -qF "$w" "$G/out" || echo "$w"; done)
if [ $rc != 0 ] && [ -z "$missing" ] && [ "$(grep -c 'mn_bad.c:' "$G/out")" = 11 ]; then ok "gpu_calls: 10 planted bad lines named with file:line (11 problems), transport's mn_device_* calls among them"
else bad "gpu_calls self-test (rc $rc): missing '$missing'; $(head -8 "$G/out")"; fi

finish
