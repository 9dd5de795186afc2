#!/usr/bin/env bash
# bench allreduce reports figures one can trust: every variant's median with
# its min and max, the memcpy reference beside them, and no page faults per
# call (Open MPI's temporaries of a large bare MPI_Allreduce once faulted
# 4324 times per call, 10x its time). Run by tests/run.sh (T, MPI set there).
. "$(dirname "$0")/../helpers/lib.sh"
B=$T/bench
mkdir -p "$B"

# rows_sane FILE: algo bytes median min max ...: min <= median <= max, a
# memcpy row per size, and the faults (last column) of every row.
rows_sane() {
    awk '$2 ~ /^[0-9]+$/ && NF == 10 { rows++; if ($4 > $3 || $3 > $5) bad = bad " " $1 "@" $2;
                                       if ($1 == "memcpy") copies++; if ($10 > 0) faults = faults " " $1 "@" $2 "=" $10 }
         END { printf "%d %d [%s] [%s]\n", rows, copies, bad, faults }' "$1"
}

tiny=third_party/darknet-cpu/cfg/yolov3-tiny.cfg
if timeout 300 $MPI -n 2 ./darknet_mn bench allreduce $tiny -iters 3 > "$B/tiny.out" 2> "$B/tiny.err"; then
    read -r rows copies order faults <<< "$(rows_sane "$B/tiny.out")"
    if [ "$rows" -ge 12 ] && [ "$copies" = 1 ] && [ "$order" = "[]" ] && [ "$faults" = "[]" ]; then
        ok "bench allreduce yolov3-tiny np2: $rows rows, min <= median <= max, memcpy reference, no page faults per call"
    else bad "bench allreduce yolov3-tiny np2: $rows rows, $copies memcpy rows, order $order, faults $faults"; fi
else bad "bench allreduce yolov3-tiny np2 failed: $(tail -2 "$B/tiny.err")"; fi

# The sweep: 4 B .. 1 MiB, 10 sizes, one memcpy row each.
if timeout 120 $MPI -n 2 ./darknet_mn bench allreduce -iters 3 -max 1048576 > "$B/sweep.out" 2> "$B/sweep.err"; then
    read -r rows copies order faults <<< "$(rows_sane "$B/sweep.out")"
    if [ "$copies" = 10 ] && [ "$order" = "[]" ]; then ok "bench allreduce sweep np2: $rows rows, 10 sizes with a memcpy row, min <= median <= max"
    else bad "bench allreduce sweep np2: $rows rows, $copies memcpy rows, order $order"; fi
else bad "bench allreduce sweep np2 failed: $(tail -2 "$B/sweep.err")"; fi
# bench/speed.sh end to end, 1- and 2-update runs, one round: a row with
# both runs' times for every system (a failed run shows "fail"), or DDP's
# reason for skipping it.
if [ -x third_party/darknet-stock/darknet ] && [ -x third_party/darknet-stock-omp/darknet ] && [ -e build/fashion/train.list ]; then
    BENCH_LOCK= SPEED_SHORT=1 SPEED_LONG=2 SPEED_ROUNDS=1 SPEED_NETS=fashion SPEED_WORK=$B/speed-work BENCH_RESULTS=$B timeout 300 ./bench/speed.sh > "$B/speed.log" 2>&1
    rows=$(awk '$1 ~ /^(stock-1t|stock-omp2|mn-1|mn-2|mn-1x2|ddp-1|ddp-2)$/ && $3 ~ /^[0-9.]+$/ && $4 ~ /^[0-9.]+$/' \
           "$B/speed-fashion.txt" 2> /dev/null | wc -l)
    want=7; [ "$(nproc)" -lt 2 ] && want=6   # mn-1x2 needs 2 cores
    if [ "$rows" = $want ] || { [ "$rows" = $((want - 2)) ] && grep -q '^# ddp-1, ddp-2: skipped: ' "$B/speed-fashion.txt"; }; then
        ok "bench/speed.sh: $rows systems timed$(sed -n 's/^# ddp-1, ddp-2: skipped/; DDP skipped/p' "$B/speed-fashion.txt")"
    else bad "bench/speed.sh: $rows rows (see $B/speed.log)"; fi
else echo "skip bench/speed.sh: needs third_party/darknet-stock{,-omp}/darknet and make fashion-data (make bench builds them)"; fi
# Without torch (python -S: no site packages) the DDP peer says why and
# exits 77, which speed.sh reports as skipped, not as a figure.
out=$(/usr/bin/python3 -S bench/ddp_fashion.py --procs 2 --iters 1 2>&1); rc=$?
if [ $rc = 77 ] && [[ $out == "ddp: skipped: No module named 'torch'"* ]]; then ok "ddp_fashion.py without torch: $out (exit 77)"
else bad "ddp_fashion.py without torch: exit $rc: $out"; fi
# A result file's "other work meanwhile" (bench/common.sh's load_line) is
# the machine's busy CPU less the benchmark's own: its parts, cpu_mark's
# counters, are checked here in CPU seconds, which other work on the
# machine does not change (only wall time would). Busy loops stopped by a
# 1 s CPU limit: 2 of our own children add at least 1.5 s to our own
# ticks; 2 orphaned ones (not ours to wait for) add at least 1.5 s to the
# machine's busy ticks beyond ours, and nothing to ours. (Not 1.8: with
# both cores busy with other tests the ticks read 1.75-1.76 for the 2 s.)
cpu_parts() {   # cpu_parts our|their: "OWN OTHER" CPU seconds the loops added
    (   . bench/common.sh
        local tck before after pids=() me=$BASHPID   # this subshell, not a $(...) inside it
        tck=$(getconf CLK_TCK)
        before=$(cpu_mark "$me")
        if [ "$1" = our ]; then
            for i in 1 2; do sh -c 'ulimit -t 1; while :; do :; done' & done
            wait 2> /dev/null   # each ends killed by its limit
        else
            for i in 1 2; do pids+=("$(sh -c 'ulimit -t 1; while :; do :; done > /dev/null 2>&1 & echo $!')"); done
            for i in $(seq 1200); do   # at most 2 minutes of wall time for their 1 s of CPU each
                kill -0 "${pids[0]}" 2> /dev/null || kill -0 "${pids[1]}" 2> /dev/null || break
                sleep 0.1
            done
        fi
        after=$(cpu_mark "$me")
        echo "$before $after" | awk -v t="$tck" '{ own = ($7 - $3) / t; printf "%.2f %.2f\n", own, ($5 - $1) / t - own }'
        load_line before > /dev/null; load_line after | grep -c '^# other work meanwhile: [0-9.]* of [0-9]* cores on average, [0-9.]* stolen by the host, over [0-9]* s'
    )
}
read -r our_own our_other our_line < <(cpu_parts our | tr '\n' ' ')
read -r their_own their_other their_line < <(cpu_parts their | tr '\n' ' ')
if awk -v a="$our_own" -v b="$their_own" -v c="$their_other" 'BEGIN { exit !(a >= 1.5 && b < 0.5 && c >= 1.5) }' &&
   [ "$our_line" = 1 ] && [ "$their_line" = 1 ]; then
    ok "load_line's parts: 2 busy loops of ours added $our_own CPU s to our own; 2 of someone else's $their_other to the rest, $their_own to ours"
else bad "load_line's parts: ours $our_own (want >= 1.5), someone else's $their_other to the rest (want >= 1.5) and $their_own to ours (want < 0.5); lines $our_line $their_line"; fi
finish
