#!/usr/bin/env bash
# Storage faults as clusters have them (docs/user-guide.md, "When storage
# fails"): a full disk at the final save before any checkpoint, a chart
# and -log on a full disk, a name too long for the file system, checkpoints none of which
# loads, a finished training submitted again, the lock file removed under
# a running job, a step of the wall clock, a crash of every rank.
# Nothing trained is lost and nothing is started over silently. Each full
# disk is a small tmpfs in a mount namespace of the job's own (unshare -m),
# so nothing is mounted on the machine. Run by tests/run.sh (T, D,
# TEST_BIN, MPI set there); ONLY=name runs one section.
. "$(dirname "$0")/../helpers/lib.sh"
F=$T/storage
rm -rf "$F" && mkdir -p "$F"
[ -d "$D" ] || fashion_slice "$D" 256 64
unset SLURM_JOB_ID SLURM_CLUSTER_NAME MN_RERUN_ID
EX_STORAGE=74
W=$TEST_BIN/mn_wcmp

# cfg FILE MAXB [distributed lines...]: the tiny classifier, deterministic,
# no backups, saves or chart on the way: the final weights are the one save.
cfg() {
    local f=$1 m=$2; shift 2
    mn_cfg "$f" learning_rate=0.01 -burn_in -policy -steps -scales max_batches="$m" \
        -- deterministic=1 shuffle=0 backup_interval=1000000 save_interval=1000000 chart=0 "$@"
}
# data NAME [FOLDER]: $F/NAME.data with backup folder FOLDER ($F/NAME).
data() {
    printf 'classes=10\ntrain=%s/train.list\nvalid=%s/test.list\nlabels=%s/labels.txt\nbackup=%s\n' "$D" "$D" "$D" \
        "${2:-$F/$1}" > "$F/$1.data"
}
# run NAME NP CFG [args...]: as tests/e2e/run_ckpt.sh's, into NAME.out / NAME.err.
run() {
    local name=$1 np=$2 c=$3; shift 3
    rm -f "$F/$name".rc.* "$F/$name".out "$F/$name".err
    mn "$F/$name" "$np" classifier train "$F/$name.data" "$c" "$@"
    cat "$F/$name".out.* > "$F/$name.out"; cat "$F/$name".err.* > "$F/$name.err"
}
# full NAME FREE CFG [KIB]: NAME's job on 2 ranks in a mount namespace whose
# tmpfs, $F/NAME/fs, is the backup folder: the size of the final weights
# ($WK KiB, the reference run's) and 64 KiB more, of which a filler file
# leaves KIB (24) free, so that the lock, the log and the start's token fit
# and the final weights do not (at 16 a chart does not either). With FREE=1
# the filler is removed once rank 0 says it retries; the folder is copied
# to $F/NAME/kept before the namespace goes.
full() {
    local name=$1 free=$2 c=$3 o=$F/$1 size=$((WK + 64)) left=${4:-24}
    mkdir -p "$o/fs"; rm -f "$o".rc.* "$o".out.* "$o".err.*
    data "$name" "$o/fs"
    timeout 120 unshare -m sh -c "
        mount -t tmpfs -o size=${size}k none $o/fs &&
        head -c \$(( (${size} - ${left}) * 1024 )) /dev/zero > $o/fs/filler 2> /dev/null
        ( if [ $free = 1 ]; then
              for i in \$(seq 600); do grep -qs 'retrying for up to' $o.err.0 && break; sleep 0.1; done
              rm -f $o/fs/filler
          fi ) &
        $MPI -n 2 sh -c '$(rank_cmd "$o" "$PROG" classifier train "$F/$name.data" "$c")'
        wait
        mkdir -p $o/kept && cp -a $o/fs/. $o/kept/ && rm -f $o/kept/filler"
    cat "$o".out.* > "$o.out"; cat "$o".err.* > "$o.err"
}

if ! unshare -m true 2> /dev/null; then
    for r in "the final save" "a chart" "a disk that stays full"; do skip "$r on a full disk: unshare -m needs root here"; done
else
    # 1. The final save on a full disk, no checkpoint written (a run
    #    shorter than checkpoint_minutes): rank 0 retries; the space freed
    #    meanwhile, the job ends 0 with the final weights of a run on a
    #    roomy disk, bit for bit.
    if want full-freed; then
        cfg "$F/f.cfg" 6
        data ref; run ref 2 "$F/f.cfg"
        WK=$(( ($(stat -c %s "$F/ref/f_final.weights") + 1023) / 1024 ))
        full ff 1 "$F/f.cfg"
        if all_rc "$F/ff" 2 0 && grep -q "cannot write weights $F/ff/fs/f_final.weights: No space left on device; retrying for up to 120 s (save_retry)" "$F/ff.err" &&
           grep -q "wrote weights $F/ff/fs/f_final.weights after [0-9]* failed tr" "$F/ff.err" &&
           "$W" "$F/ff/kept/f_final.weights" "$F/ref/f_final.weights" 0 > "$F/ff.cmp"; then
            ok "the final save on a full disk, no checkpoint: retried until space was freed, exit 0, the final weights = a roomy run's ($(cat "$F/ff.cmp"))"
        else bad "the final save on a full disk, space freed: rc $(rcs "$F/ff" 2); $(head -3 "$F/ff.err"); $(ls "$F/ff/kept" 2> /dev/null | tr '\n' ' ')"; fi
    fi
    # 1b. The chart on that full disk (16 KiB left: a chart takes more):
    #     its first drawing fails, said once with the system's reason, and
    #     the training goes on to the final weights, the same bit for bit.
    if want chart-full; then
        cfg "$F/f.cfg" 6
        [ -f "$F/ref/f_final.weights" ] || { data ref; run ref 2 "$F/f.cfg"; }
        WK=$(( ($(stat -c %s "$F/ref/f_final.weights") + 1023) / 1024 ))
        sed 's/^chart=0$/chart=1/' "$F/f.cfg" > "$F/fc.cfg"
        full fc 1 "$F/fc.cfg" 16
        if all_rc "$F/fc" 2 0 &&
           [ "$(grep -c "^darknet-mn: rank 0 ([^)]*): cannot write $F/fc/fs/fc_chart.png.tmp[^ ]*: error while writing to output stream: No space left on device$" "$F/fc.err")" = 1 ] &&
           grep -q "training goes on without the chart $F/fc/fs/fc_chart.png$" "$F/fc.err" &&
           "$W" "$F/fc/kept/fc_final.weights" "$F/ref/f_final.weights" 0 > "$F/fc.cmp"; then
            ok "a chart on a full disk: said once with the reason ($(grep -m1 -o 'error while writing.*' "$F/fc.err")), training went on, exit 0, the final weights = a roomy run's"
        else bad "a chart on a full disk: rc $(rcs "$F/fc" 2); $(grep -m3 'chart\|cannot' "$F/fc.err")"; fi
    fi
    # 2. Never freed (save_retry=2): exit 74 on every rank within the bound,
    #    one line naming the file and the cause, no temporary file left.
    if want full-kept; then
        cfg "$F/k.cfg" 6 save_retry=2
        WK=${WK:-64}
        t0=$SECONDS; full fk 0 "$F/k.cfg"; took=$((SECONDS - t0))
        if all_rc "$F/fk" 2 $EX_STORAGE && [ "$took" -lt 60 ] &&
           grep -q "cannot write weights $F/fk/fs/k_final.weights: No space left on device (retried for the time save_retry allows); the training's state is lost past the last checkpoint" "$F/fk.err" &&
           [ -z "$(ls "$F/fk/kept" | grep -v '^k_log.csv$')" ]; then
            ok "a disk that stays full: exit $EX_STORAGE on every rank in ${took} s, the file and cause named, no temporary file left"
        else bad "a disk that stays full: rc $(rcs "$F/fk" 2) in ${took} s; $(head -3 "$F/fk.err"); $(ls -A "$F/fk/kept" 2> /dev/null | tr '\n' ' ')"; fi
    fi
fi

# 2b. -log into a full file system: rank 0 says so once on its terminal
#     (stderr) and the training goes on (exit 0, its weights written).
if want log-full && unshare -m true 2> /dev/null; then
    cfg "$F/g.cfg" 20
    data g; o=$F/g; mkdir -p "$o/fs"; rm -f "$o".rc.* "$o".out.* "$o".err.*
    timeout 120 unshare -m sh -c "
        mount -t tmpfs -o size=16k none $o/fs && head -c 20000 /dev/zero > $o/fs/filler 2> /dev/null
        $MPI -n 2 sh -c '$(rank_cmd "$o" "$PROG" classifier train "$F/g.data" "$F/g.cfg" -log "$o/fs/train.log")'"
    if all_rc "$o" 2 0 && [ -f "$o/g_final.weights" ] &&
       [ "$(grep -c "^darknet-mn: cannot write the log $o/fs/train.log: No space left on device; training goes on" "$o.err.0")" = 1 ]; then
        ok "-log on a full file system: said once on the terminal, the training went on (exit 0)"
    else bad "-log on a full file system: rc $(rcs "$o" 2); $(head -3 "$o.err.0")"; fi
fi

# 3. A cfg name the file system takes whose temporary names it does not
#    (255 bytes): refused at start, exit 65, nothing trained.
if want long-name; then
    long=$(printf 'n%.0s' $(seq 240))
    cfg "$F/$long.cfg" 4
    data ln; run ln 2 "$F/$long.cfg"
    if all_rc "$F/ln" 2 $EX_USER && ! grep -q ': loss' "$F/ln.out" &&
       grep -q "cfg name $long makes backup files named up to 254 bytes (${long}_final.weights, and [0-9]* more for its temporary name while it is written), past the 255 bytes a name may have in $F/ln: give the cfg a shorter name" "$F/ln.err"; then
        ok "a cfg name whose temporary names pass 255 bytes: refused before training, exit $EX_USER"
    else bad "a long cfg name: rc $(rcs "$F/ln" 2); $(grep -c ': loss' "$F/ln.out") loss lines; $(head -2 "$F/ln.err" | cut -c1-300)"; fi
fi

# 4. Checkpoints of this experiment none of which loads (each truncated):
#    refused with 64 naming each file, nothing removed or written; moved
#    aside as the message says, the run starts anew.
if want corrupt; then
    cfg "$F/c.cfg" 4 checkpoint_interval=2 checkpoint_keep=2
    data c; run c 2 "$F/c.cfg"
    for f in "$F"/c/c.ckpt-*; do truncate -s 100 "$f"; done
    cfg "$F/c.cfg" 6 checkpoint_interval=2 checkpoint_keep=2
    before=$(ls -l --time-style=full-iso "$F/c")
    run c 2 "$F/c.cfg"
    if all_rc "$F/c" 2 $EX_USAGE && [ "$before" = "$(ls -l --time-style=full-iso "$F/c")" ] &&
       grep -q "checkpoint $F/c/c.ckpt-2 is incomplete or corrupt: skipped" "$F/c.err" &&
       grep -q "checkpoint $F/c/c.ckpt-4 is incomplete or corrupt: skipped" "$F/c.err" &&
       grep -q "none of the 2 checkpoints of c in $F/c loads (each named above): not starting over from the weights; restore one, or move its files aside (mkdir $F/c/old && mv $F/c/c.ckpt-\* $F/c/c_\*.weights $F/c/old/)" "$F/c.err"; then
        ok "checkpoints none of which loads: refused, exit $EX_USAGE on every rank, each named, the folder untouched"
    else bad "corrupt checkpoints: rc $(rcs "$F/c" 2); $(head -4 "$F/c.err")"; fi
fi

# 4b. A newest checkpoint whose body is corrupt (one byte flipped) beside a
#     good one: skipped on resume for the good one; later saves neither
#     count it towards checkpoint_keep (it would cost a good generation) nor
#     remove it (a file that does not load is never removed).
if want corrupt-kept; then
    cfg "$F/p.cfg" 6 checkpoint_interval=3 checkpoint_keep=2 checkpoint_minutes=0
    data p; run p 2 "$F/p.cfg"
    f=$F/p/p.ckpt-6; at=$(( $(stat -c %s "$f") / 2 ))
    b=$(od -An -tu1 -j "$at" -N1 "$f" | tr -d ' ')
    printf "\\$(printf '%03o' $((255 - b)))" | dd of="$f" bs=1 seek="$at" conv=notrunc status=none
    cfg "$F/p.cfg" 10 checkpoint_interval=4 checkpoint_keep=2 checkpoint_minutes=0
    run p 2 "$F/p.cfg"
    gens=$(cd "$F/p" && ls p.ckpt-* | sort -t- -k2 -n | tr '\n' ' ')
    if all_rc "$F/p" 2 0 && grep -q "checkpoint $F/p/p.ckpt-6 is incomplete or corrupt: skipped" "$F/p.err" &&
       grep -q "^darknet-mn: resuming from checkpoint $F/p/p.ckpt-3: iteration 3 " "$F/p.out" &&
       [ "$gens" = "p.ckpt-6 p.ckpt-8 p.ckpt-10 " ]; then
        ok "a corrupt newest checkpoint: skipped for the one before; saves at 4, 8 and 10 kept 2 good ones and the corrupt one ($gens)"
    else bad "a corrupt newest checkpoint and checkpoint_keep=2: rc $(rcs "$F/p" 2), left $gens; $(grep -h 'resuming\|corrupt' "$F/p.out" "$F/p.err" | head -2)"; fi
fi

# 5. A finished training (no checkpoint written) submitted again with -clear, as
#    a fine-tuning job's flags hold it: refused with 64 before writing,
#    _final and _best untouched; with checkpoints, the same command goes on
#    from the newest one instead of starting over.
if want again; then
    cfg "$F/a.cfg" 4
    data a; run a 2 "$F/a.cfg"
    cp "$F/a/a_final.weights" "$F/a.w"; cp "$F/a/a_final.weights" "$F/a/a_best.weights"
    before=$(ls -l --time-style=full-iso "$F/a")
    run a 2 "$F/a.cfg" "$F/a.w" -clear
    if all_rc "$F/a" 2 $EX_USAGE && [ "$before" = "$(ls -l --time-style=full-iso "$F/a")" ] && ! grep -q ': loss' "$F/a.out" &&
       grep -q "backup folder $F/a holds an earlier training of a ($F/a/a_final.weights, $F/a/a_best.weights) and this run would start over at iteration 0, replacing them: to start anew, move them aside" "$F/a.err"; then
        ok "a finished training submitted again with -clear: refused, exit $EX_USAGE, its final and best weights untouched"
    else bad "a finished training again with -clear: rc $(rcs "$F/a" 2); $(head -2 "$F/a.err")"; fi
    cfg "$F/b.cfg" 2 checkpoint_interval=2
    data b; run b 2 "$F/b.cfg" "$F/a.w" -clear
    cfg "$F/b.cfg" 4 checkpoint_interval=2
    run b 2 "$F/b.cfg" "$F/a.w" -clear
    data bs; run bs 2 "$F/b.cfg" "$F/a.w" -clear
    if all_rc "$F/b" 2 0 && grep -q "^darknet-mn: resuming from checkpoint $F/b/b.ckpt-2: iteration 2 of max_batches 4" "$F/b.out" &&
       [ "$(grep -c ': loss' "$F/b.out")" = 2 ] && "$W" "$F/b/b_final.weights" "$F/bs/b_final.weights" 0 > "$F/b.cmp"; then
        ok "the same -clear command again with a checkpoint there: goes on from it at iteration 2, = a straight run ($(cat "$F/b.cmp"))"
    else bad "-clear again with a checkpoint: rc $(rcs "$F/b" 2); $(grep -h 'darknet-mn' "$F/b.out" | head -3); $(head -2 "$F/b.err")"; fi
fi

# 6. The lock file removed under a running job (a cleaner, a user): the job
#    re-takes it with its own record, says so once, and finishes (exit 0),
#    its lock file holding its record.
if want lock-gone; then
    cfg "$F/l.cfg" 3000 lock_lease=2
    data l; mkdir -p "$F/l"
    bg_ranks "$F/l1" 2 "$PROG" classifier train "$F/l.data" "$F/l.cfg"
    wait_iter "$F/l1" 3 && rm -f "$F/l/.darknet_mn.lock"
    wait "$(cat "$F/l1.mpiexec")" 2> /dev/null
    bg_done "$F/l1" 60
    if [ "$(cat "$F/l1.mrc" 2> /dev/null)" = 0 ] && [ -f "$F/l/l_final.weights" ] &&
       [ "$(grep -c "the lock file $F/l/.darknet_mn.lock was removed while this job held it: re-taken with this job's record" "$F/l1.err")" = 1 ] &&
       grep -q "released" "$F/l/.darknet_mn.lock"; then
        ok "the lock file removed under a running job: re-taken with its record, said once, the job finished (exit 0)"
    else bad "the lock file removed: mpiexec $(cat "$F/l1.mrc" 2> /dev/null); $(head -3 "$F/l1.err")"; fi
fi
# 8. The wall clock stepped ahead under a running job (NTP, a resumed VM),
#    collective_timeout=10: libfaketime moves every rank's wall clock, not
#    the monotonic one, 120 s ahead four times half a second apart. The job
#    finishes (exit 0): no collective is called late.
FAKETIME_LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
if want clock && [ ! -e "$FAKETIME_LIB" ]; then
    skip "the clock step: no $FAKETIME_LIB (Debian's faketime, scripts/deps.sh test)"
elif want clock; then
    cfg "$F/t.cfg" 1500 collective_timeout=10
    data t; mkdir -p "$F/t"; echo "+0" > "$F/t.time"
    bg_ranks "$F/t1" 2 env LD_PRELOAD="$FAKETIME_LIB" FAKETIME_TIMESTAMP_FILE="$F/t.time" FAKETIME_NO_CACHE=1 \
        FAKETIME_DONT_FAKE_MONOTONIC=1 "$PROG" classifier train "$F/t.data" "$F/t.cfg"
    wait_iter "$F/t1" 3
    for s in 120 240 360 480; do sleep 0.5; echo "+$s" > "$F/t.time"; done
    stepped=$(grep -ac ': loss' "$F/t1.out")
    bg_done "$F/t1" 120
    if [ "$(cat "$F/t1.mrc" 2> /dev/null)" = 0 ] && [ -f "$F/t/t_final.weights" ] && [ "$stepped" -lt 1500 ] &&
       ! grep -q 'did not complete in time\|did not arrive within' "$F/t1.err"; then
        ok "the wall clock stepped 4 x 120 s ahead during training (by iteration $stepped of 1500), collective_timeout=10: the job finished, exit 0"
    else bad "the wall clock stepped: mpiexec $(cat "$F/t1.mrc" 2> /dev/null), $stepped iterations at the last step; $(grep -a 'darknet-mn' "$F/t1.err" | head -2)"; fi
fi

# 9. A crash (every rank killed at once, as a lost node does: no rank is
#    left to write a rescue) loses at most checkpoint_minutes of training:
#    with 0.02 (1.2 s), both ranks are killed once two such checkpoints
#    were written; the same command goes on from the newest, never from
#    iteration 0.
if want crash; then
    cfg "$F/k.cfg" 100000 checkpoint_minutes=0.02
    data k; mkdir -p "$F/k"
    bg_ranks "$F/k1" 2 "$PROG" classifier train "$F/k.data" "$F/k.cfg"
    for ((i = 0; i < 1200; ++i)); do
        n=$(grep -ac '(checkpoint_minutes)$' "$F/k1.out" 2> /dev/null)
        [ "${n:-0}" -ge 2 ] && break
        sleep 0.1
    done
    rank_signal KILL "$F/k1" 0; rank_signal KILL "$F/k1" 1
    bg_done "$F/k1" 60
    last=$(grep -a '(checkpoint_minutes)$' "$F/k1.out" | tail -1 | cut -d' ' -f2 | tr -d :)
    sed -i "s/^max_batches=.*/max_batches=$((${last:-0} + 400))/" "$F/k.cfg"
    run k 2 "$F/k.cfg"
    from=$(grep -o "^darknet-mn: resuming from checkpoint $F/k/k.ckpt-[0-9]*: iteration [0-9]*" "$F/k.out" | awk '{print $NF}')
    if [ -n "$last" ] && [ "$last" -gt 0 ] && [ -n "$from" ] && [ "$from" -ge "$last" ] && all_rc "$F/k" 2 0 &&
       grep -q "^$((from + 1)): loss" "$F/k.out" && [ -f "$F/k/k_final.weights" ]; then
        ok "a crash, checkpoint_minutes=0.02: both ranks killed after the checkpoint at $last, the rerun went on from iteration $from"
    else bad "a crash with checkpoint_minutes: last written ${last:-none}, resumed from ${from:-none}, rc $(rcs "$F/k" 2); $(head -2 "$F/k.err")"; fi
fi

# 7. scripts/mn_rerun.sh does not rerun a storage failure (74: a rerun at
#    once meets the same full disk) nor a program not found (127).
if want rerun; then
    for st in 74 127; do
        rm -f "$F/rr$st.count"
        scripts/mn_rerun.sh --max-restarts 2 -- sh -c "echo run >> $F/rr$st.count; exit $st" > "$F/rr$st.out" 2>&1
        rc=$?
        if [ $rc = $st ] && [ "$(wc -l < "$F/rr$st.count")" = 1 ] && grep -q "exit status $st is .*: not rerun" "$F/rr$st.out"; then
            ok "mn_rerun.sh: exit status $st ends the job after one attempt: $(grep -o "exit status $st is .*" "$F/rr$st.out")"
        else bad "mn_rerun.sh and $st: rc $rc, $(wc -l < "$F/rr$st.count") attempts; $(tail -2 "$F/rr$st.out")"; fi
    done
fi
finish
