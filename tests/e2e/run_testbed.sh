#!/usr/bin/env bash
# Separate hosts: two network namespaces x 2 ranks (scripts/testbed.sh), the
# node layout detected from the hostnames, not forced. Every communicator's
# sums, and hierarchical / two_dimensional training equal to one process.
# Run by tests/run.sh (T, D, TEST_BIN set there). Needs root (ip netns).
. "$(dirname "$0")/../helpers/lib.sh"
B=$T/testbed
mkdir -p "$B"
tb=scripts/testbed.sh
trap '$tb down' EXIT
if ! $tb up > "$B/up.log" 2>&1; then bad "testbed up: $(tail -2 "$B/up.log")"; finish; fi

if timeout 120 $tb run 4 "$TEST_BIN/test_comm" > "$B/comm.log" 2>&1 && grep -q "test_comm: 4 ranks: ok" "$B/comm.log"; then
    ok "every communicator's sums across 2 hosts x 2 ranks"
else bad "test_comm across hosts (see $B/comm.log)"; fi

cfg() {   # cfg NAME BATCH COMM
    sed -e '/^\[distributed\]/,$d' -e "s/^batch=.*/batch=$2/" "$T/many-2-1.cfg" > "$B/$1.cfg"
    printf '[distributed]\ndeterministic=1\nshuffle=0\ncommunicator=%s\n' "$3" >> "$B/$1.cfg"
    sed "s|^backup=.*|backup=$B/$1|" "$T/many-2-1.data" > "$B/$1.data"
    mkdir -p "$B/$1"
}
cfg one 8 flat
timeout 120 ./darknet_mn classifier train "$B/one.data" "$B/one.cfg" > "$B/one.out" 2>&1
for comm in hierarchical two_dimensional; do
    cfg "$comm" 2 "$comm"
    timeout 120 $tb run 4 ./darknet_mn classifier train "$B/$comm.data" "$B/$comm.cfg" > "$B/$comm.out" 2> "$B/$comm.err"
    if grep -q "on 4 ranks (2 nodes), communicator $comm" "$B/$comm.out" &&
       "$TEST_BIN/mn_wcmp" "$B/$comm/${comm}_final.weights" "$B/one/one_final.weights" 1e-5 > "$B/$comm.cmp"; then
        ok "$comm on 2 hosts x 2 ranks (detected) trains like 1 x 4x batch: $(cat "$B/$comm.cmp")"
    else bad "$comm across hosts: $(grep -m1 'on 4 ranks' "$B/$comm.out") $(cat "$B/$comm.cmp" 2> /dev/null) $(tail -2 "$B/$comm.err")"; fi
done
# overlap=1 across hosts, with the timeline: bit for bit the blocking run of
# the same cfg, and the trace names both hosts (each rank's clock offset is
# measured at the start, here next to 0: the namespaces share one clock).
cfg blk 2 hierarchical
cfg ov 2 hierarchical
printf 'overlap=1\nbucket_mb=0.01\ntimeline=%s\n' "$B/ov.json" >> "$B/ov.cfg"
for v in blk ov; do
    timeout 120 $tb run 4 -x MN_PIECE_BYTES=4096 ./darknet_mn classifier train "$B/$v.data" "$B/$v.cfg" > "$B/$v.out" 2> "$B/$v.err"
done
if "$TEST_BIN/mn_wcmp" "$B/ov/ov_final.weights" "$B/blk/blk_final.weights" 0 > "$B/ov.cmp" &&
   grep -q '"rank 0 (mnA)"' "$B/ov.json" && grep -q '"rank 3 (mnB)"' "$B/ov.json" && grep -q '"allreduce bucket"' "$B/ov.json"; then
    ok "overlap=1 on 2 hosts x 2 ranks = blocking, bit for bit ($(cat "$B/ov.cmp")); the timeline names both hosts"
else bad "overlap=1 across hosts: $(cat "$B/ov.cmp" 2> /dev/null) $(tail -2 "$B/ov.err")"; fi
finish
