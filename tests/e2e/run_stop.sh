#!/usr/bin/env bash
# Stop signals and exit statuses (docs/user-guide.md, "Exit statuses"):
# SIGUSR1, SIGTERM or SIGINT on any one rank stops every rank at the end of
# the iteration, rank 0 writes a checkpoint, every rank exits 75, and the
# same command resumes to the weights of a run never stopped (deterministic
# mode, bit for bit); a checkpoint at the last iteration resumes to
# _final.weights; each other row of the table has its status. Run by
# tests/run.sh (T, D, TEST_BIN, MPI set there); ONLY=a,b runs those
# sections. term-long and fewer (iterations of seconds, and 4-rank runs
# resumed on 2: about a minute) run in make test-cluster
# (ONLY=term-long,fewer), outside make test's 15 minutes.
. "$(dirname "$0")/../helpers/lib.sh"
F=$T/stop
rm -rf "$F" && mkdir -p "$F"
want() {
    if [ -z "${ONLY:-}" ]; then [ "$1" != term-long ] && [ "$1" != fewer ]; else [[ ",$ONLY," == *",$1,"* ]]; fi
}
[ -d "$D" ] || fashion_slice "$D" 256 64
W=$TEST_BIN/mn_wcmp

# cfg FILE MAXB [distributed lines...]: the tiny classifier at a constant
# rate, deterministic and unshuffled; about 2 ms an iteration on 2 ranks.
cfg() {
    local f=$1 m=$2; shift 2
    mn_cfg "$f" learning_rate=0.01 -burn_in -policy -steps -scales max_batches="$m" -- deterministic=1 shuffle=0 "$@"
}
# data NAME: $F/NAME.data with backup folder $F/NAME.
data() {
    printf 'classes=10\ntrain=%s/train.list\nvalid=%s/test.list\nlabels=%s/labels.txt\nbackup=%s/%s\n' "$D" "$D" "$D" "$F" "$1" > "$F/$1.data"
    mkdir -p "$F/$1"
}
# run NAME NP CFG: classifier training on NP ranks, kept as mn keeps it.
run() { mn "$F/$1" "$2" classifier train "$F/$1.data" "$3"; }

cfg "$F/long.cfg" 3000
data ref
run ref 2 "$F/long.cfg"
all_rc "$F/ref" 2 0 || bad "the uninterrupted reference run failed: $(rcs "$F/ref" 2) $(head -3 "$F"/ref.err.*)"

# bg_rcs OUT NP CMD...: bg_ranks (tests/helpers/lib.sh), each rank's exit status
# in OUT.rc.<rank> too.
bg_rcs() {
    local o=$1 np=$2; shift 2
    rm -f "$o".pid.* "$o".rc.* "$o".out "$o".err
    timeout 120 $MPI -n "$np" sh -c "r=\$OMPI_COMM_WORLD_RANK; $* & echo \$! > $o.pid.\$r; wait \$!; s=\$?; echo \$s > $o.rc.\$r; exit \$s" \
        > "$o.out" 2> "$o.err" &
    echo $! > "$o.mpiexec"
}
# stopped NAME SIG RANK: a 2-rank job of long.cfg, SIG to RANK once rank 0
# reported iteration 20; then the same command again. ok when every rank of
# the first exits 75 (and mpiexec), rank 0 names the signal and the
# checkpoint, no _final.weights is written, and the rerun resumes from it and
# ends bit-identical to the reference.
stopped() {
    local name=$1 sig=$2 r=$3 o=$F/$1
    data "$name"
    bg_rcs "$o" 2 "$PROG" classifier train "$F/$name.data" "$F/long.cfg"
    wait_iter "$o" 20 && rank_signal "$sig" "$o" "$r"
    wait "$(cat "$o.mpiexec")"; local mrc=$?
    local line; line=$(grep -a "darknet-mn: stopped at iteration" "$o.out")
    local it; it=$(sed -n 's/.*stopped at iteration \([0-9]*\) .*/\1/p' <<< "$line")
    if [ "$mrc" != 75 ] || ! ended_with "$o" 2 75 || [ -z "$it" ] || [ ! -f "$F/$name/long.ckpt-$it" ] ||
       [ -e "$F/$name/long_final.weights" ] || ! grep -q "by SIG$sig (on 1 of 2 ranks)" <<< "$line"; then
        bad "SIG$sig to rank $r: mpiexec $mrc, ranks $(rcs "$o" 2); '$line'; $(ls "$F/$name" | tr '\n' ' '); $(tail -2 "$o.err")"
        return
    fi
    cp "$F/$name.data" "$F/$name-again.data"
    mn "$F/$name-again" 2 classifier train "$F/$name-again.data" "$F/long.cfg"
    if all_rc "$F/$name-again" 2 0 && grep -q "resuming from checkpoint $F/$name/long.ckpt-$it" "$F/$name-again.out.0" &&
       "$W" "$F/$name/long_final.weights" "$F/ref/long_final.weights" 0 > "$F/$name.cmp"; then
        ok "SIG$sig to rank $r of 2: stopped at iteration $it, mpiexec and every rank that reported exit 75 (ranks: $(rcs "$o" 2)); the rerun resumes there and ends bit-identical to an uninterrupted run ($(cat "$F/$name.cmp"))"
    else bad "SIG$sig to rank $r: the rerun: $(rcs "$F/$name-again" 2); $(grep -a resum "$F/$name-again.out.0"); $(cat "$F/$name.cmp" 2> /dev/null); $(head -2 "$F/$name-again.err.0")"; fi
}
if want signals; then
    stopped usr1 USR1 1
    stopped term TERM 0
    stopped int INT 1
fi
# term_all NAME CFG DELAY K WHAT: SIGTERM to both ranks of a 2-rank job of
# CFG once rank 0 reported iteration K, the launcher's kill delay DELAY s:
# ok when it stops there with the orderly checkpoint alone, every rank and
# mpiexec 75, and no rank writes a rescue.
term_all() {
    local name=$1 o=$F/$1 base; base=$(basename "$2" .cfg)
    data "$name"
    OMPI_MCA_odls_base_sigkill_timeout=$3 bg_rcs "$o" 2 "$PROG" classifier train "$F/$name.data" "$2"
    wait_iter "$o" "$4" && { rank_signal TERM "$o" 0; rank_signal TERM "$o" 1; }
    wait "$(cat "$o.mpiexec")"; local mrc=$?
    local it; it=$(sed -n 's/.*stopped at iteration \([0-9]*\) by SIGTERM.*/\1/p' "$o.out")
    if [ "$mrc" = 75 ] && ended_with "$o" 2 75 && [ -n "$it" ] && [ -f "$F/$name/$base.ckpt-$it" ] &&
       [ "$(ls "$F/$name" | grep -c 'ckpt')" = 1 ] && ! grep -q 'ending: the last completed update' "$o.err"; then
        ok "SIGTERM to both ranks$5: stopped at iteration $it, one checkpoint, no rescue written (mpiexec $mrc)"
    else bad "SIGTERM to both ranks$5: mpiexec $mrc, ranks $(rcs "$o" 2), stopped at '${it:-?}', files $(ls "$F/$name" | tr '\n' ' '); $(grep -a 'ending:' "$o.err" | head -2)"; fi
}
# SIGTERM to every rank at once (scancel, a time limit, a preemption): the
# orderly checkpoint alone, once; no rank writes a rescue (before: ranks 0
# and 1, the rescue's writers, each wrote one beside it). A kill delay of
# 20 s, as under Slurm.
want term-all && term_all termall "$F/long.cfg" 20 20 ""
# The same with iterations longer than 30% of the kill delay (about 3 s
# against 6 s; the signal just after one ends): where the iterations'
# mean length says the iteration in progress ends before the kill, the
# rescue waits for it up to 70% of the delay, so the orderly checkpoint is
# still the only file (before: the rescue waited 30% and wrote beside it).
# Where it cannot end in time (Open MPI's default 1 s delay here, the
# launcher's SIGKILL played 0.8 s after the SIGTERM), the rescue writes at
# once (before: after 30% of the delay).
# slow_cfg FILTERS MAXB: $F/slow.cfg, a classifier of long iterations and
# a small state (two pools before the connected layer: 1 MB of weights with
# 56 filters, where one pool made 17 MB, whose rescue, its thread sharing 2
# cores with both ranks' training, took 0.8 s to write and met the kill).
slow_cfg() {
    mn_cfg "$F/slow.cfg" batch=64 width=176 height=176 learning_rate=0.0001 -burn_in -policy -steps -scales \
        max_batches="$2" '[convolutional]' filters="$1" '[maxpool]' '[convolutional]' filters="$1" '[maxpool]' '[maxpool]' '[connected]' '[softmax]' \
        -- deterministic=1 shuffle=0
}
if want term-long; then
    # An iteration's length follows the machine (with 32 filters: 2 s on
    # older cores, 1.1 s on an AVX-512 Xeon, where the second row failed:
    # its iterations were no longer longer than the kill delay). Iterations
    # 2 to 4 measure it, and the filters are set for about 3 s (the
    # second convolution's time grows as their square, the memory as their
    # number; a larger batch took gigabytes and 20 s to start).
    slow_cfg 32 4
    data calib
    run calib 2 "$F/slow.cfg"
    ips=$(sed -n 's/^[234]: loss .*, \([0-9.]*\) img\/s.*/\1/p' "$F/calib.out.0" | awk '{ s += $1 } END { if (NR == 3) print s / 3 }')
    [ -n "$ips" ] || bad "the slow classifier's 4 iterations: no speed in the log ($(rcs "$F/calib" 2)); $(tail -2 "$F/calib.err.0")"
    slow_cfg "$(awk -v r="${ips:-50}" 'BEGIN { f = int(32 * sqrt(3 * r / 128) + 0.5); print (f < 32 ? 32 : (f > 256 ? 256 : f)) }')" 30
    echo "slow.cfg: $(grep -m1 '^filters=' "$F/slow.cfg"), measured with 32: ${ips:-?} img/s on 2 ranks"
    term_all termlong "$F/slow.cfg" 6 3 ", iterations of seconds, a 6 s kill delay"
    data termkill; o=$F/termkill
    OMPI_MCA_odls_base_sigkill_timeout=1 bg_rcs "$o" 2 "$PROG" classifier train "$F/termkill.data" "$F/slow.cfg"
    wait_iter "$o" 3 && { rank_signal TERM "$o" 0; rank_signal TERM "$o" 1; sleep 0.8; rank_signal KILL "$o" 0; rank_signal KILL "$o" 1; }
    wait "$(cat "$o.mpiexec")"; mrc=$?
    # The file at its name, and no .tmp beside it, is the rescue complete
    # (written aside, then renamed). Its line may not reach the log: on a
    # loaded disk the kill can land in the folder's fsync, after the rename
    # and before the line (seen once in make test while a simulation ran the machine out of memory).
    said="its line in the log"
    grep -q "ending: the last completed update, iteration 3, written to $F/termkill/slow.ckpt-3" "$o.err" ||
        said="killed before its line reached the log"
    if [ "$(ls "$F/termkill" | grep -c 'ckpt-3$')" = 1 ] && [ "$(ls "$F/termkill" | grep -c 'ckpt')" = 1 ]; then
        ok "SIGTERM to both ranks, iterations longer than a 1 s kill delay, SIGKILL 0.8 s later: the rescue written at once (checkpoint 3, $said)"
    else bad "SIGTERM then SIGKILL, long iterations: mpiexec $mrc, files $(ls "$F/termkill" | tr '\n' ' '); $(grep -a 'ending:' "$o.err" | head -2)"; fi
fi
# A lost rank costs no iteration (rescue=1, the default): rank 1 of a
# 2-rank job without checkpoints killed (Open MPI's mpiexec then sends rank
# 0 SIGTERM, and SIGKILL a second later) or stopped (rank 0's watchdog ends
# the job after collective_timeout) once rank 0 reported iteration 20: rank
# 0 writes the last update it completed, the same command resumes from it,
# past the last iteration rank 0 reported (none done twice), and ends bit
# for bit as the reference. A stopped rank 1 writes its own too when
# Open MPI's mpiexec ends the job (SIGCONT, then SIGTERM): where it had
# completed one update more than rank 0 (its half of the allreduce done)
# its checkpoint is the newer one, and the rerun resumes from that (seen
# once, on a loaded machine: rank 0 133, rank 1 134, and the rerun from
# 135 ended bit for bit as the reference). rescue=0: nothing is written,
# the rerun starts from iteration 0.
lost() {   # lost NAME SIG [distributed lines...]
    local name=$1 sig=$2 o=$F/$1; shift 2
    cfg "$F/$name.cfg" 3000 collective_timeout=3 "$@"
    data "$name"
    # Launched directly, not through bg_rcs's shell: mpiexec's SIGTERM must reach darknet_mn.
    timeout 120 $MPI -n 2 "$PROG" classifier train "$F/$name.data" "$F/$name.cfg" > "$o.out" 2> "$o.err" &
    local mp=$!
    wait_iter "$o" 20 && signal_rank1 "$sig" "$F/$name.data"
    wait $mp; local mrc=$?
    [ "$sig" = STOP ] && signal_rank1 KILL "$F/$name.data"
    local last; last=$(grep -ao '^[0-9]*: loss' "$o.out" | tail -1 | cut -d: -f1)
    local k; k=$(ls "$F/$name" | sed -n "s/^$name\.ckpt-\([0-9]*\)$/\1/p" | sort -n | tail -1)
    cp "$F/$name.data" "$F/$name-again.data"
    mn "$F/$name-again" 2 classifier train "$F/$name-again.data" "$F/$name.cfg"
    local first; first=$(grep -ao '^[0-9]*: loss' "$F/$name-again.out.0" | head -1 | cut -d: -f1)
    echo "$name: mpiexec $mrc, last reported $last, checkpoint ${k:-none}, rerun from $first"
    if [ "$*" = rescue=0 ]; then
        if [ -z "$k" ] && [ "$first" = 1 ] && all_rc "$F/$name-again" 2 0; then ok "rescue=0, rank 1 killed at iteration $last: no checkpoint written, the rerun starts from iteration 1"
        else bad "rescue=0: checkpoint ${k:-none}, rerun from $first, $(rcs "$F/$name-again" 2)"; fi
        return
    fi
    if [ -n "$k" ] && [ -n "$last" ] && [ "$k" -ge "$last" ] && [ "$first" = $((k + 1)) ] && all_rc "$F/$name-again" 2 0 &&
       grep -q "darknet-mn: rank [01] ([^)]*): .*iteration $k.* written to $F/$name/$name.ckpt-$k" "$o.err" &&
       "$W" "$F/$name/${name}_final.weights" "$F/ref/long_final.weights" 0 > "$F/$name.cmp"; then
        ok "rank 1 $([ "$sig" = KILL ] && echo killed || echo stopped, collective_timeout=3) at iteration $last, no checkpoint_interval: $(grep -ao "rank [01] ([^)]*): .*iteration $k, written" "$o.err" | cut -d' ' -f1,2 | paste -sd/ -) wrote iteration $k's update (mpiexec $mrc); the rerun starts at $first, none done twice, and ends bit for bit as an uninterrupted run ($(cat "$F/$name.cmp"))"
    else bad "rescue, rank 1 SIG$sig: mpiexec $mrc, last reported ${last:-none}, checkpoint ${k:-none}, rerun from ${first:-none} ($(rcs "$F/$name-again" 2)); $(grep -a 'darknet-mn' "$o.err" | head -3); $(cat "$F/$name.cmp" 2> /dev/null)"; fi
}
if want rescue; then
    lost killed KILL
    lost stalled STOP
    lost norescue KILL rescue=0
fi
# A rescue's writes do not grow with the node count: 6 ranks as 6 nodes
# (MN_RANKS_PER_NODE=1), rank 1 killed at iteration 20: only the first and
# the last node's ranks (0 and 5) may write, not all 5 left. A leftover
# temporary file of an earlier run (a checkpoint cut short) is removed by
# the rerun, which says so.
if want rescue-nodes; then
    cfg "$F/nodes.cfg" 3000 collective_timeout=3
    data nodes; o=$F/nodes
    MN_RANKS_PER_NODE=1 timeout 120 $MPI -n 6 "$PROG" classifier train "$F/nodes.data" "$F/nodes.cfg" > "$o.out" 2> "$o.err" &
    mp=$!
    wait_iter "$o" 20 && signal_rank1 KILL "$F/nodes.data"
    wait $mp
    writers=$(grep -ao 'darknet-mn: rank [0-9]* ([^)]*): ending: the last completed update' "$o.err" | cut -d' ' -f3 | sort -n | paste -sd' ')
    head -c 4096 /dev/urandom > "$F/nodes/nodes.ckpt-7.tmp.somehost.4242"
    cp "$F/nodes.data" "$F/nodes-again.data"
    k=$(ls "$F/nodes" | sed -n 's/^nodes\.ckpt-\([0-9]*\)$/\1/p' | sort -n | tail -1)
    cfg "$F/nodes.cfg" $((${k:-0} + 5)) collective_timeout=3
    mn "$F/nodes-again" 2 classifier train "$F/nodes-again.data" "$F/nodes.cfg"
    if [ -n "$writers" ] && [ -z "$(tr ' ' '\n' <<< "$writers" | grep -vx '0\|5')" ] && all_rc "$F/nodes-again" 2 0 &&
       grep -q "^darknet-mn: resuming from checkpoint $F/nodes/nodes.ckpt-" "$F/nodes-again.out.0" &&
       grep -q "^darknet-mn: removed 1 temporary file (0.0 MiB) that an earlier run in $F/nodes left unfinished$" "$F/nodes-again.out.0" &&
       [ ! -e "$F/nodes/nodes.ckpt-7.tmp.somehost.4242" ]; then
        ok "6 ranks as 6 nodes, rank 1 killed: the rescue written by rank(s) $writers only (the first and last node's), of 5 left; the rerun resumes from it and removes the earlier run's leftover temporary file"
    else bad "bounded rescue: writers '$writers'; $(rcs "$F/nodes-again" 2); $(grep -h 'resuming\|removed' "$F/nodes-again.out.0"); $(ls "$F/nodes" | tr '\n' ' ')"; fi
fi

# edit_lock FILE FIELD=VALUE...: fields of the lock record FILE (0 host,
# 1 pid, 2 run) replaced, as after another job took the folder over.
edit_lock() {
    python3 -c 'import sys; p = sys.argv[1]; f = open(p).read().split(" ")
for a in sys.argv[2:]: k, v = a.split("="); f[int(k)] = v
open(p, "w").write(" ".join(f))' "$@"
}
# rescue_taken NAME PATTERN EDIT...: a rescue writes nothing into a folder
# another job took over (a job frozen past its lease, then lost): rank 1
# stopped at iteration 20 (rank 0 then waits in the allreduce, writing
# nothing), the lock record edited (edit_lock's EDITs; lock_lease=600: the
# renewal, every 100 s, does not find out first), then rank 1 killed: rank
# 0's line matches PATTERN, and the folder holds no checkpoint (before: the
# last update's). Sets rescue_rc (mpiexec's status) and rescue_ok.
rescue_taken() {
    local name=$1 pat=$2 o=$F/$1 mp; shift 2
    cfg "$F/$name.cfg" 3000 collective_timeout=3 lock_lease=600 backup_interval=100000 save_interval=100000
    data "$name"
    timeout 120 $MPI -n 2 "$PROG" classifier train "$F/$name.data" "$F/$name.cfg" > "$o.out" 2> "$o.err" &
    mp=$!
    if wait_iter "$o" 20; then
        signal_rank1 STOP "$F/$name.data"
        sleep 0.5
        edit_lock "$F/$name/.darknet_mn.lock" "$@"
        signal_rank1 KILL "$F/$name.data"
    fi
    wait $mp; rescue_rc=$?
    rescue_ok=0
    [ "$rescue_rc" != 0 ] && [ -z "$(ls "$F/$name" | grep 'ckpt')" ] && grep -q "$pat" "$o.err" && rescue_ok=1
}
# Another run's id in the record.
if want rescue-taken; then
    rescue_taken taken "^darknet-mn: rank 0 ([^)]*): ending: no rescue: backup folder $F/taken now belongs to another job (its lock file names [^ ]* [0-9]* 00000000deadbeef; this job's rank 0 held it as [^ ]* [0-9]* [0-9a-f]*)$" 2=00000000deadbeef
    if [ $rescue_ok = 1 ]; then
        ok "the folder's lock taken over, rank 1 killed: no rescue written (mpiexec $rescue_rc): $(grep -ao 'no rescue: .*' "$F/taken.err" | sed "s|$F/||")"
    else bad "rescue into a folder taken over: mpiexec $rescue_rc, files $(ls "$F/taken" | tr '\n' ' '); $(grep -a 'darknet-mn' "$F/taken.err" | head -3)"; fi
fi
# The same where the job that took the folder over resumed this run's
# checkpoint and so carries its run id (issue 68.5): the record's host and
# pid are another job's, and no rescue is written (before: the run ids
# matched, and rank 0 wrote into the other job's folder).
if want rescue-adopted; then
    rescue_taken adopt "^darknet-mn: rank 0 ([^)]*): ending: no rescue: backup folder $F/adopt now belongs to another job (its lock file names otherhost 4242 [0-9a-f]*; this job's rank 0 held it as " 0=otherhost 1=4242
    if [ $rescue_ok = 1 ]; then
        ok "the folder taken over by a job that adopted this run's id, rank 1 killed: no rescue written (mpiexec $rescue_rc)"
    else bad "rescue into a folder taken over with this run's id: mpiexec $rescue_rc, files $(ls "$F/adopt" | tr '\n' ' '); $(grep -a 'darknet-mn' "$F/adopt.err" | head -3)"; fi
fi

# Nor does the log: the lock file's run id changed as above while the job
# trains: rank 0 writes at most the line it was writing, then every rank
# stops with 73 (before: the job trained on for the 100 s to its next
# renewal, 3000 iterations, logging each into the other run's folder).
if want log-taken; then
    cfg "$F/logt.cfg" 3000 collective_timeout=3 lock_lease=600 backup_interval=100000 save_interval=100000
    data logt; o=$F/logt
    timeout 120 $MPI -n 2 "$PROG" classifier train "$F/logt.data" "$F/logt.cfg" > "$o.out" 2> "$o.err" &
    mp=$!
    n0=
    if wait_iter "$o" 20; then
        edit_lock "$F/logt/.darknet_mn.lock" 2=00000000deadbeef
        n0=$(wc -l < "$F/logt/logt_log.csv")
    fi
    wait $mp; mrc=$?
    n1=$(wc -l < "$F/logt/logt_log.csv")
    if [ -n "$n0" ] && [ "$mrc" = $EX_REFUSED ] && [ $((n1 - n0)) -le 1 ] && grep -q "lost the lock of backup folder $F/logt" "$o.err"; then
        ok "the folder's lock taken over at log line $n0: $((n1 - n0)) line(s) after it, every rank stopped (mpiexec $mrc)"
    else bad "log into a folder taken over: mpiexec $mrc, log lines $n0 then $n1; $(grep -a 'darknet-mn' "$o.err" | head -2)"; fi
fi

# Fewer ranks, the same training (global_batch=keep, the default): the
# checkpoint of a 4-rank job at iteration 20 resumed on 2, where
# subdivisions 2 keep its global batch of 16, ends with the 4-rank job's
# weights to float rounding (the sums run in another order; over 80 updates
# that stays near 1e-7, over 400 it grows to 1e-3 even from scratch, so the
# test stops at 100). On 3 ranks 16 images cannot be kept in passes of 4:
# the run goes on with 12 and says so; strict stops with 75 for a rerun on
# more ranks instead.
if want fewer; then
    cfg "$F/four.cfg" 100 checkpoint_interval=20 checkpoint_keep=10
    data ref4; run ref4 4 "$F/four.cfg"
    at=20
    data fewer; cp "$F/ref4/four.ckpt-$at" "$F/fewer/"
    mn "$F/fewer2" 2 classifier train "$F/fewer.data" "$F/four.cfg"
    if all_rc "$F/fewer2" 2 0 &&
       grep -q "the checkpoint's global batch 16 kept on 2 ranks: subdivisions 1 -> 2 (2 ranks x 4 images x 2 passes an update)" "$F/fewer2.out.0" &&
       grep -q "written by 4 ranks (global batch 16); now 2 ranks (global batch 16)" "$F/fewer2.out.0" &&
       "$W" "$F/fewer/four_final.weights" "$F/ref4/four_final.weights" 1e-5 > "$F/fewer.cmp"; then
        ok "a 4-rank checkpoint at iteration $at resumed on 2: global batch 16 kept (subdivisions 2), the 4-rank run's weights at 100 ($(cat "$F/fewer.cmp"))"
    else bad "4 ranks resumed on 2: $(rcs "$F/fewer2" 2); $(grep -h 'global batch' "$F/fewer2.out.0"); $(cat "$F/fewer.cmp" 2> /dev/null)"; fi
    # With batch norm, whose running statistics each pass moves: each of the
    # 2 ranks keeps those of the 2 ranks it stands for apart, so rank 0
    # writes what the 4-rank run's rank 0 held, and bn_average=1 writes the
    # mean of the 4 (before: one set moved by both passes, 3e-3 off).
    for bn in own avg; do
        cfg "$F/four-$bn.cfg" 100 checkpoint_interval=20 checkpoint_keep=10 $([ $bn = avg ] && echo bn_average=1)
        sed -i 's/^\[convolutional\]/[convolutional]\nbatch_normalize=1/' "$F/four-$bn.cfg"
        data "ref4-$bn"; run "ref4-$bn" 4 "$F/four-$bn.cfg"
        data "fewer-$bn"; cp "$F/ref4-$bn/four-$bn.ckpt-$at" "$F/fewer-$bn/"
        mn "$F/fewer2-$bn" 2 classifier train "$F/fewer-$bn.data" "$F/four-$bn.cfg"
        if all_rc "$F/fewer2-$bn" 2 0 &&
           grep -q "the checkpoint's global batch 16 kept on 2 ranks: subdivisions 1 -> 2 .*; batch norm's running statistics kept apart for each rank a rank stands for" "$F/fewer2-$bn.out.0" &&
           "$W" "$F/fewer-$bn/four-${bn}_final.weights" "$F/ref4-$bn/four-${bn}_final.weights" 1e-5 > "$F/fewer-$bn.cmp"; then
            ok "the same with batch norm$([ $bn = avg ] && echo ' and bn_average=1'): the 4-rank run's weights and running statistics at 100 ($(cat "$F/fewer-$bn.cmp"))"
        else bad "4 ranks resumed on 2 with batch norm ($bn): $(rcs "$F/fewer2-$bn" 2); $(grep -h 'global batch' "$F/fewer2-$bn.out.0" | cut -c1-200); $(cat "$F/fewer-$bn.cmp" 2> /dev/null)"; fi
    done
    # With double buffering's stale mean (double_buffering_local=0, its
    # compensation and prediction on, the defaults there): the momentum and
    # the mean in flight are sums over a rank's images, so they double on 2
    # ranks; compensation's mean square goes 4x, and the weights compensation
    # and prediction keep stay as they are. (With the own gradient fresh, the
    # 4 ranks' models drift apart between saves as 2 ranks' cannot: the same
    # training in the mean, not the same bits.)
    cfg "$F/four-db.cfg" 100 checkpoint_interval=20 checkpoint_keep=10 double_buffering=1 double_buffering_local=0
    data ref4-db; run ref4-db 4 "$F/four-db.cfg"
    data fewer-db; cp "$F/ref4-db/four-db.ckpt-$at" "$F/fewer-db/"
    mn "$F/fewer2-db" 2 classifier train "$F/fewer-db.data" "$F/four-db.cfg"
    if all_rc "$F/fewer2-db" 2 0 && grep -q "the checkpoint's global batch 16 kept on 2 ranks: subdivisions 1 -> 2" "$F/fewer2-db.out.0" &&
       "$W" "$F/fewer-db/four-db_final.weights" "$F/ref4-db/four-db_final.weights" 1e-5 > "$F/fewer-db.cmp"; then
        ok "the same with double buffering (compensation, prediction): the 4-rank run's weights at 100 ($(cat "$F/fewer-db.cmp"))"
    else bad "4 ranks resumed on 2 with double buffering: $(rcs "$F/fewer2-db" 2); $(cat "$F/fewer-db.cmp" 2> /dev/null)"; fi
    # The same checkpoint on 3 ranks: strict stops (75, the checkpoint left
    # as it was), keep goes on with 12 images an update, saying so.
    for mode in strict keep; do
        data "three-$mode"; cp "$F/ref4/four.ckpt-$at" "$F/three-$mode/three-$mode.ckpt-$at"
        cfg "$F/three-$mode.cfg" 100 checkpoint_interval=20 checkpoint_keep=10 global_batch=$mode
        mn "$F/three-$mode" 3 classifier train "$F/three-$mode.data" "$F/three-$mode.cfg"
    done
    if ended_with "$F/three-strict" 3 $EX_RERUN &&
       grep -q "global_batch=strict: the checkpoint's global batch 16 (4 ranks) cannot be kept on 3 ranks of 4-image passes (16 is not a multiple of 12); stopping" "$F/three-strict.err.0" &&
       [ "$(ls "$F/three-strict")" = "three-strict.ckpt-$at" ] &&
       all_rc "$F/three-keep" 3 0 && grep -q "warning: the checkpoint's global batch 16 cannot be kept on 3 ranks of 4-image passes (16 is not a multiple of 12): going on with 12 images an update" "$F/three-keep.out.0"; then
        ok "the 4-rank checkpoint on 3 ranks: strict stops with $EX_RERUN, the checkpoint untouched; keep goes on with 12 images an update and says so"
    else bad "3 ranks: strict $(rcs "$F/three-strict" 3) $(head -1 "$F/three-strict.err.0"); keep $(rcs "$F/three-keep" 3) $(grep -h 'warning' "$F/three-keep.out.0" | cut -c1-100)"; fi
fi
finish stop
