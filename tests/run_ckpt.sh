#!/usr/bin/env bash
# Checkpoints, resume and durability: seen rounded to the global batch, a
# checkpoint resumed on another rank count, refusals to start at or past the
# end, pruning of only the job's own generations, fsync/rename order, and the
# backup folder's lock. Run by tests/run.sh (T, D, TEST_BIN, MPI set there);
# ONLY=name runs one section.
. "$(dirname "$0")/lib.sh"
F=$T/ckpt
rm -rf "$F" && mkdir -p "$F"
want() { [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ]; }

# cfg FILE BATCH SUBDIV MAXB [distributed lines...]: the tiny classifier
# (tests/lib.sh) at a constant rate of 0.01, deterministic and unshuffled.
cfg() {
    local f=$1 b=$2 s=$3 m=$4; shift 4
    mn_cfg "$f" batch=$((b * s)) subdivisions="$s" learning_rate=0.01 -burn_in -policy -steps -scales max_batches="$m" \
        -- deterministic=1 shuffle=0 "$@"
}
# data NAME: $F/NAME.data with backup folder $F/NAME.
data() { printf 'classes=10\ntrain=%s/train.list\nvalid=%s/test.list\nlabels=%s/labels.txt\nbackup=%s/%s\n' "$D" "$D" "$D" "$F" "$1" > "$F/$1.data"; }
# run NAME NP CFG [args...]: every rank's status in $F/NAME.rc.<rank> (mn,
# tests/lib.sh), all ranks' output in NAME.out / NAME.err.
run() {
    local name=$1 np=$2 c=$3; shift 3
    rm -f "$F/$name".rc.* "$F/$name".out "$F/$name".err
    mn "$F/$name" "$np" classifier train "$F/$name.data" "$c" "$@"
    cat "$F/$name".out.* > "$F/$name.out"; cat "$F/$name".err.* > "$F/$name.err"
}
seen_of() { od -An -t u8 -j 12 -N 8 "$1" | tr -d ' '; }
set_seen() { perl -e 'open F, "+<", $ARGV[0] or die; seek F, 12, 0; print F pack("Q<", $ARGV[1]); close F' "$1" "$2"; }
W=$TEST_BIN/mn_wcmp

# 1a. A weights file whose seen is not a multiple of the global batch
#     (2 ranks x 2 x 2 subdivisions = 8): 28 images start like 24, float16.
if want seen; then
    cfg "$F/s.cfg" 2 2 3 allreduce_grad_dtype=float16
    data sbase; run sbase 2 "$F/s.cfg"
    cp "$F/sbase/s_final.weights" "$F/s24.weights"; cp "$F/s24.weights" "$F/s28.weights"; set_seen "$F/s28.weights" 28
    cfg "$F/s.cfg" 2 2 8 allreduce_grad_dtype=float16
    data s24; data s28
    run s24 2 "$F/s.cfg" "$F/s24.weights"; run s28 2 "$F/s.cfg" "$F/s28.weights"
    if [ "$(seen_of "$F/s24.weights")" = 24 ] && all_rc "$F/s28" 2 0 &&
       grep -q "s28.weights: seen 28 is not a multiple of the global batch 8 .*rounded down to 24 (iteration 3)" "$F/s28.out" &&
       "$W" "$F/s28/s_final.weights" "$F/s24/s_final.weights" 0 > "$F/s.log"; then
        ok "seen 28 with a global batch of 8 is rounded to 24: the same weights as a start from seen 24 ($(cat "$F/s.log"))"
    else bad "seen rounding: $(cat "$F/s.log" 2>/dev/null); $(grep -h 'seen' "$F/s28.out" | head -2)"; fi
fi

# 7. A checkpoint of 4 ranks resumes on 2 and on 3 at its iteration. Criterion
#    (momentum=0, so the state is the weights and the iteration): the resumed
#    run equals a run on the new rank count from the 4-rank run's weights of
#    that iteration with seen = iteration x the new global batch.
if want ranks; then
    cfg "$F/r4/r.cfg" 2 1 6 checkpoint_interval=4 save_interval=4
    sed -i 's/^momentum=.*/momentum=0/' "$F/r4/r.cfg"
    data r4; run r4 4 "$F/r4/r.cfg"
    for n in 2 3; do
        sed 's/^max_batches=.*/max_batches=9/' "$F/r4/r.cfg" > "$F/r.cfg"
        data "r$n"; data "r${n}ref"; mkdir -p "$F/r$n"; cp "$F/r4/r.ckpt-4" "$F/r$n/"
        run "r$n" $n "$F/r.cfg"
        cp "$F/r4/r_4.weights" "$F/r${n}ref.weights"; set_seen "$F/r${n}ref.weights" $((4 * 2 * n))
        sed -i 's/^checkpoint_interval=.*/checkpoint_interval=0/' "$F/r.cfg"
        run "r${n}ref" $n "$F/r.cfg" "$F/r${n}ref.weights"
        if all_rc "$F/r$n" $n 0 &&
           grep -q "resuming from checkpoint $F/r$n/r.ckpt-4: iteration 4 of max_batches 9, written by 4 ranks (global batch 8); now $n ranks (global batch $((2 * n))), seen = 4 x $((2 * n))" "$F/r$n.out" &&
           [ "$(grep -c ': loss' "$F/r$n.out")" = 5 ] && [ "$(seen_of "$F/r$n/r_final.weights")" = $((9 * 2 * n)) ] &&
           "$W" "$F/r$n/r_final.weights" "$F/r${n}ref/r_final.weights" 0 > "$F/r$n.log"; then
            ok "checkpoint of 4 ranks resumed on $n at iteration 4: 5 updates, seen $((9 * 2 * n)), equal to a $n-rank run from that state ($(cat "$F/r$n.log"))"
        else bad "resume on $n ranks: rc $(rcs "$F/r$n" $n); $(grep -h 'resum' "$F/r$n.out" | head -2); $(cat "$F/r$n.log" 2>/dev/null); $(head -3 "$F/r$n.err")"; fi
    done
fi

# 6 and issue 14 item 3b. A re-run after a finished run, a weights file at
# max_batches and max_batches=0 are refused (one message, status 1 on every
# rank, no file written); -clear starts from the given weights, not from the
# checkpoint.
if want refuse; then
    cfg "$F/e.cfg" 2 1 6 checkpoint_interval=3 save_interval=3
    data e; run e 2 "$F/e.cfg"
    before=$(ls -l --time-style=full-iso "$F/e")
    run e 2 "$F/e.cfg"
    if all_rc "$F/e" 2 1 && [ "$before" = "$(ls -l --time-style=full-iso "$F/e")" ] &&
       grep -q "checkpoint $F/e/e.ckpt-6 is at iteration 6 and the cfg's max_batches is 6: nothing to train; raise max_batches to go on, or add -clear" "$F/e.err" &&
       [ "$(grep -c 'nothing to train' "$F/e.err")" = 1 ]; then
        ok "a re-run after a finished run is refused on every rank, nothing written: $(grep -o 'checkpoint .*' "$F/e.err" | cut -c1-110)"
    else bad "re-run after the end: rc $(rcs "$F/e" 2); $(head -2 "$F/e.err"); $(grep -h 'resumed\|wrote' "$F/e.out")"; fi
    cfg "$F/e.cfg" 2 1 6
    data ew; run ew 2 "$F/e.cfg" "$F/e/e_final.weights"
    if all_rc "$F/ew" 2 1 && [ ! -e "$F/ew" -o -z "$(ls "$F/ew" 2> /dev/null)" ] &&
       grep -q "weights file $F/e/e_final.weights is at iteration 6 and the cfg's max_batches is 6: nothing to train; raise max_batches to go on, or add -clear" "$F/ew.err"; then
        ok "a weights file at max_batches is refused: $(grep -o 'weights file .*' "$F/ew.err" | cut -c1-80)"
    else bad "weights at the end: rc $(rcs "$F/ew" 2); $(head -2 "$F/ew.err")"; fi
    cfg "$F/e.cfg" 2 1 0
    data ez; run ez 2 "$F/e.cfg"
    if all_rc "$F/ez" 2 1 && [ -z "$(ls "$F/ez" 2> /dev/null)" ] &&
       grep -q "max_batches is 0: nothing to train" "$F/ez.err"; then ok "max_batches=0 is refused, nothing written"
    else bad "max_batches=0: rc $(rcs "$F/ez" 2); $(head -2 "$F/ez.err"); $(ls "$F/ez" 2> /dev/null)"; fi
    # -clear with a weights file: from it at iteration 0, the checkpoints untouched.
    cfg "$F/e.cfg" 2 1 4 checkpoint_interval=3
    cp "$F/e/e.ckpt-6" "$F/e.ckpt-6.before"
    run e 2 "$F/e.cfg" "$F/e/e_3.weights" -clear
    data ec; run ec 2 "$F/e.cfg" "$F/e/e_3.weights" -clear
    if all_rc "$F/e" 2 0 && grep -q "^1: loss" "$F/e.out" && grep -q "starting from $F/e/e_3.weights at iteration 0 (-clear: seen set to 0, checkpoints not used)" "$F/e.out" &&
       cmp -s "$F/e.ckpt-6.before" "$F/e/e.ckpt-6" && "$W" "$F/e/e_final.weights" "$F/ec/e_final.weights" 0 > "$F/ec.log"; then
        ok "-clear with a weights file ignores the checkpoints: trains 4 updates from it, as in an empty folder ($(cat "$F/ec.log"))"
    else bad "-clear: rc $(rcs "$F/e" 2); $(grep -h 'resum\|starting' "$F/e.out"); $(cat "$F/ec.log" 2> /dev/null)"; fi
fi

# 5. Pruning keeps an older run's generations: a -clear run on 1 rank with
#    checkpoint_keep=2 into a folder holding a 2-rank run's 8, 10, 12 keeps
#    its own 4 and 6 and leaves 8, 10, 12.
if want prune; then
    cfg "$F/p.cfg" 2 1 12 checkpoint_interval=2
    data p; run p 2 "$F/p.cfg"
    cfg "$F/p.cfg" 2 1 6 checkpoint_interval=2 checkpoint_keep=2
    run p 1 "$F/p.cfg" -clear
    got=$(ls "$F/p" | grep ckpt | sort -t- -k2 -n | tr '\n' ' ')
    if all_rc "$F/p" 1 0 && [ "$got" = "p.ckpt-4 p.ckpt-6 p.ckpt-8 p.ckpt-10 p.ckpt-12 " ]; then
        ok "pruning removes only the job's own generations: $got"
    else bad "pruning: rc $(rcs "$F/p" 1), left: $got"; fi
fi

# 8. Durability, seen through strace: the tmp file is fsync'ed, renamed, the
#    folder fsync'ed, and only then the oldest generation unlinked; tmp names
#    carry host and pid.
if want fsync; then
    cfg "$F/d.cfg" 2 1 3 checkpoint_interval=1 checkpoint_keep=1
    data d
    timeout 120 strace -f -y -o "$F/d.trace" -e trace=fsync,rename,renameat,renameat2,unlink,unlinkat \
        ./darknet_mn classifier train "$F/d.data" "$F/d.cfg" > "$F/d.out" 2> "$F/d.err"
    order=$(awk -v dir="$F/d" '
        /fsync\(.*d\.ckpt-3\.tmp\./ && !a { a = NR }
        /rename.*d\.ckpt-3\.tmp\.[^"]*", ".*d\.ckpt-3"/ && !b { b = NR }
        index($0, "fsync(") && index($0, "<" dir ">") && b && !c { c = NR }
        /unlink.*d\.ckpt-2"/ && !e { e = NR }
        /fsync\(.*d_final\.weights\.tmp\./ && !f { f = NR }
        /rename.*d_final\.weights\.tmp\.[^"]*", ".*d_final\.weights"/ && !g { g = NR }
        index($0, "fsync(") && index($0, "<" dir ">") && g && !h { h = NR }
        END { print (a && a < b && b < c && c < e) ? "ckpt-ok" : "ckpt-bad " a " " b " " c " " e,
                    (f && f < g && g < h) ? "weights-ok" : "weights-bad " f " " g " " h }' "$F/d.trace")
    host=$(hostname)
    if [ "$order" = "ckpt-ok weights-ok" ] && grep -q "d\.ckpt-3\.tmp\.$host\.[0-9]*\"" "$F/d.trace" &&
       grep -q "d_final\.weights\.tmp\.$host\.[0-9]*\"" "$F/d.trace"; then
        ok "fsync(tmp) < rename < fsync(folder) < unlink(old generation), for checkpoints and weights; tmp names <file>.tmp.$host.<pid>"
    else bad "durability order: $order; $(grep -m2 'rename' "$F/d.trace")"; fi
fi

# 14.8. A second job on the same backup folder is refused at once (exit 3,
#       docs/user-guide.md's table) with the holder's host and pid; the
#       first (stopped meanwhile, so that it is surely still running)
#       finishes fine.
if want lock; then
    cfg "$F/l.cfg" 2 1 3000   # long enough (a second or more) to be stopped while it runs
    data l
    timeout 120 $MPI -n 2 sh -c "echo \$\$ > $F/l1.pid.\$OMPI_COMM_WORLD_RANK; exec ./darknet_mn classifier train $F/l.data $F/l.cfg" > "$F/l1.out" 2> "$F/l1.err" &
    first=$!
    for ((i = 0; i < 3000; ++i)); do grep -q "^3: loss" "$F/l1.out" 2> /dev/null && break; sleep 0.02; done
    kill -STOP "$(cat "$F/l1.pid.0")" "$(cat "$F/l1.pid.1")"
    t0=$SECONDS
    run l 2 "$F/l.cfg"
    took=$((SECONDS - t0))
    kill -CONT "$(cat "$F/l1.pid.0")" "$(cat "$F/l1.pid.1")"
    wait $first; rc1=$?
    if all_rc "$F/l" 2 3 && [ "$took" -le 20 ] && [ $rc1 = 0 ] && [ -f "$F/l/l_final.weights" ] &&
       grep -q "backup folder $F/l is in use by another job (host $(hostname), pid $(cat "$F/l1.pid.0")); lock file $F/l/.darknet_mn.lock" "$F/l.err"; then
        ok "a second job on the same backup folder fails in ${took}s naming the holder; the first finishes: $(grep -o 'backup folder.*' "$F/l.err" | cut -c1-100)"
    else bad "lock: second rc $(rcs "$F/l" 2) in ${took}s, first rc $rc1; $(head -2 "$F/l.err")"; fi
fi
finish
