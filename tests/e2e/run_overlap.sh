#!/usr/bin/env bash
# overlap=1 gives bit for bit the weights of the blocking path, for every CPU
# communicator, float32 and float16, subdivisions and sync_bn; its buckets
# start while backward still runs; timeline= writes a valid Chrome trace
# with a row per rank and thread, and a picture. Run by tests/run.sh (T, D,
# TEST_BIN, MPI set there).
. "$(dirname "$0")/../helpers/lib.sh"
O=$T/overlap
mkdir -p "$O"

# Two convolutions, two connected layers: several layers' arrays per bucket
# and buckets across layer boundaries, with 4 KiB pieces and 8 KiB buckets.
# (the tiny classifier of tests/helpers/lib.sh with these layers; deterministic, unshuffled)
cfg() {   # cfg NAME SUBDIV BN [distributed lines...]
    local n=$1 s=$2 bn=$3; shift 3
    rm -rf "${O:?}/$n"
    mn_cfg "$O/$n.cfg" batch=$((4 * s)) subdivisions="$s" max_batches=5 '[convolutional]' batch_normalize="$bn" \
        '[convolutional]' batch_normalize="$bn" filters=16 stride=2 '[connected]' output=48 activation=leaky '[connected]' '[softmax]' \
        -- deterministic=1 shuffle=0 "$@"
    printf 'classes=10\ntrain=%s/train.list\nvalid=%s/test.list\nlabels=%s/labels.txt\nbackup=%s/%s\n' "$D" "$D" "$D" "$O" "$n" > "$O/$n.data"
}
run() {   # run NAME NP [env...]: exit status into NAME.rc
    local n=$1 np=$2; shift 2
    env MN_PIECE_BYTES=4096 "$@" timeout 120 $MPI -x MN_PIECE_BYTES -n "$np" ./darknet_mn classifier train \
        "$O/$n.data" "$O/$n.cfg" > "$O/$n.out" 2> "$O/$n.err"
    echo $? > "$O/$n.rc"
}
# same NAME WHAT: NAME-ov (overlap=1) against NAME-blk, bit for bit.
same() {
    local n=$1 what=$2
    if [ "$(cat "$O/$n-blk.rc")" = 0 ] && [ "$(cat "$O/$n-ov.rc")" = 0 ] &&
       grep -q "^darknet-mn: overlap=1: [0-9]* buckets" "$O/$n-ov.out" &&
       "$TEST_BIN/mn_wcmp" "$O/$n-ov/$n-ov_final.weights" "$O/$n-blk/$n-blk_final.weights" 0 > "$O/$n.cmp"; then
        ok "overlap=1 = blocking, bit for bit: $what ($(grep -o '[0-9]* buckets' "$O/$n-ov.out"); $(cat "$O/$n.cmp"))"
    else bad "overlap=1 vs blocking, $what: $(cat "$O/$n.cmp" 2> /dev/null) (see $O/$n-ov.err)"; fi
}
pair() {   # pair NAME NP WHAT SUBDIV BN "distributed lines" [env...]
    local n=$1 np=$2 what=$3 s=$4 bn=$5 lines=$6; shift 6
    # shellcheck disable=SC2086
    cfg "$n-blk" "$s" "$bn" $lines
    # shellcheck disable=SC2086
    cfg "$n-ov" "$s" "$bn" $lines overlap=1 bucket_mb=0.008
    run "$n-blk" "$np" "$@"
    run "$n-ov" "$np" "$@"
    same "$n" "$what"
}

for dt in float32 float16; do
    pair "naive-$dt" 3 "naive, 3 ranks, $dt" 1 0 "communicator=naive allreduce_grad_dtype=$dt"
    pair "flat-$dt" 3 "flat (shared memory), 3 ranks, $dt" 1 0 "communicator=flat allreduce_grad_dtype=$dt"
    pair "mpi-$dt" 3 "flat over MPI_Allreduce (MN_SHM=0), 3 ranks, $dt" 1 0 "communicator=flat allreduce_grad_dtype=$dt" MN_SHM=0
    pair "single-$dt" 3 "single_node, 3 ranks, $dt" 1 0 "communicator=single_node allreduce_grad_dtype=$dt"
    for a in hierarchical two_dimensional; do
        pair "$a-$dt" 4 "$a, 2 nodes x 2 ranks, $dt" 1 0 "communicator=$a allreduce_grad_dtype=$dt" MN_RANKS_PER_NODE=2
    done
done
pair sub2 3 "subdivisions=2 (only the last subdivision's backward overlaps), flat, 3 ranks" 2 0 "communicator=flat"
pair syncbn 3 "batch norm with sync_bn=1, subdivisions=2, 3 ranks" 2 1 "communicator=flat sync_bn=1"

# overlap=1 and double_buffering=1 are refused together, on every rank.
cfg both 1 0 overlap=1 double_buffering=1
run both 2
if [ "$(cat "$O/both.rc")" != 0 ] && grep -q "overlap=1 and double_buffering=1 exclude each other" "$O/both.err"; then
    ok "overlap=1 with double_buffering=1: refused ($(grep -m1 -o 'overlap=1 and double_buffering=1 exclude each other' "$O/both.err"))"
else bad "overlap=1 with double_buffering=1: exit $(cat "$O/both.rc") ($(tail -2 "$O/both.err"))"; fi
cfg badbucket 1 0 overlap=1 bucket_mb=0
run badbucket 2
if [ "$(cat "$O/badbucket.rc")" != 0 ] && grep -q "bucket_mb='0' must be a number of MiB above 0" "$O/badbucket.err"; then
    ok "bucket_mb=0: refused with the key named"
else bad "bucket_mb=0: exit $(cat "$O/badbucket.rc") ($(tail -2 "$O/badbucket.err"))"; fi

# The timeline of an overlapped run (MN_TIMELINE, rank 0's environment):
# valid JSON, two rows per rank, every rank's first bucket of each step
# handed over before that rank's backward ended (when the thread starts on it
# is the scheduler's), the split printed, a picture.
# Heavier convolutions first, so that backward outlasts a thread's wake-up.
cfg tl 1 0 communicator=flat overlap=1 bucket_mb=0.008
sed -i -e 's/^max_batches=5/max_batches=25/' -e 's/^filters=.*/filters=32/' -e 's/^stride=2/stride=1/' \
       -e 's/^output=48/output=10/' -e 's/^learning_rate=.*/learning_rate=0.01/' "$O/tl.cfg"
rm -f "$O"/tl.json*
run tl 2 MN_TIMELINE="$O/tl.json"
if [ "$(cat "$O/tl.rc")" = 0 ] && python3 - "$O/tl.json" > "$O/tl.check" 2>&1 <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))
rows = {(e["pid"], e["args"]["name"]) for e in ev if e.get("name") == "thread_name"}
assert rows == {(0, "main"), (0, "communication"), (1, "main"), (1, "communication")}, rows
x = [e for e in ev if e.get("ph") == "X"]
its = sorted({e["args"]["iteration"] for e in x})
assert its == list(range(1, 26)), its
early = 0
for pid in (0, 1):
    for it in its:
        b = [e["ts"] for e in x if e["pid"] == pid and e["args"]["iteration"] == it and e["name"] == "bucket queued"]
        bw = [e["ts"] + e["dur"] for e in x if e["pid"] == pid and e["args"]["iteration"] == it and e["name"] == "backward"]
        assert b and bw, (pid, it)
        early += min(b) < max(bw)
assert early == 50, "a bucket was handed over before backward ended in %d of 50 steps" % early
assert any(e["name"] == "allreduce bucket" for e in x)
print("%d events, iterations 1-25, the first bucket handed over before backward's end in %d of 50 rank-steps" % (len(x), early))
PY
then
    if grep -q "^darknet-mn: iterations 21-25, per step (mean of 2 ranks): .* = compute .* + data .* + communication not hidden .* + waiting for the slowest rank" "$O/tl.out" &&
       [ "$(grep -c '^darknet-mn: iterations' "$O/tl.out")" = 2 ] && python3 tests/helpers/mn_png.py "$O/tl.json.png" > /dev/null 2>&1; then
        ok "timeline: $(cat "$O/tl.check"); split printed every 20 iterations; picture drawn"
    else bad "timeline: split or picture missing ($(grep '^darknet-mn: iterations' "$O/tl.out"))"; fi
else bad "timeline: exit $(cat "$O/tl.rc"); $(tail -3 "$O/tl.check" 2> /dev/null)"; fi
ls "$O"/tl.json.tmp.* > /dev/null 2>&1 && bad "timeline: a temporary file left behind"

finish
