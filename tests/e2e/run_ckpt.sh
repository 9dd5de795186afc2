#!/usr/bin/env bash
# Checkpoints, resume and durability: seen rounded to the global batch, a
# checkpoint resumed on another rank count, refusals to start at or past the
# end, pruning of only the job's own generations, fsync/rename order, and the
# backup folder's lock. Run by tests/run.sh (T, D, TEST_BIN, MPI set there);
# ONLY=name runs one section.
. "$(dirname "$0")/../helpers/lib.sh"
F=$T/ckpt
rm -rf "$F" && mkdir -p "$F"

# cfg FILE BATCH SUBDIV MAXB [distributed lines...]: the tiny classifier
# (tests/helpers/lib.sh) at a constant rate of 0.01, deterministic and unshuffled.
cfg() {
    local f=$1 b=$2 s=$3 m=$4; shift 4
    mn_cfg "$f" batch=$((b * s)) subdivisions="$s" learning_rate=0.01 -burn_in -policy -steps -scales max_batches="$m" \
        -- deterministic=1 shuffle=0 "$@"
}
# data NAME: $F/NAME.data with backup folder $F/NAME.
data() { printf 'classes=10\ntrain=%s/train.list\nvalid=%s/test.list\nlabels=%s/labels.txt\nbackup=%s/%s\n' "$D" "$D" "$D" "$F" "$1" > "$F/$1.data"; }
# run NAME NP CFG [args...]: every rank's status in $F/NAME.rc.<rank> (mn,
# tests/helpers/lib.sh), all ranks' output in NAME.out / NAME.err.
run() {
    local name=$1 np=$2 c=$3; shift 3
    rm -f "$F/$name".rc.* "$F/$name".out "$F/$name".err
    mn "$F/$name" "$np" classifier train "$F/$name.data" "$c" "$@"
    cat "$F/$name".out.* > "$F/$name.out"; cat "$F/$name".err.* > "$F/$name.err"
}
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

# 1b. double_buffering=1 resumed from checkpoints written during its fresh
#     steps (iteration 5 of double_buffering_fresh=10) and at the last one
#     (10): no mean is in flight there, so the resumed run stays fresh to 10
#     and is bit-identical to an uninterrupted one; also from 11 and 15,
#     where a stale step's mean is in flight. Each resume is the same command again
#     with the later checkpoints and the final weights gone.
if want dbuf-fresh; then
    cfg "$F/dbf.cfg" 2 1 30 double_buffering=1 double_buffering_local=0 double_buffering_fresh=10 checkpoint_interval=1 checkpoint_keep=30
    data dbf; run dbf 2 "$F/dbf.cfg"
    for k in 5 10 11 15; do
        data "dbf$k"; mkdir -p "$F/dbf$k"
        cp "$F/dbf/dbf.ckpt-$k" "$F/dbf$k/"
        run "dbf$k" 2 "$F/dbf.cfg"
        if all_rc "$F/dbf" 2 0 && all_rc "$F/dbf$k" 2 0 && grep -q "resuming from checkpoint .*dbf.ckpt-$k: iteration $k " "$F/dbf$k.out" &&
           "$W" "$F/dbf$k/dbf_final.weights" "$F/dbf/dbf_final.weights" 0 > "$F/dbf$k.log"; then
            ok "double_buffering=1 (fresh to 10) resumed from its checkpoint at $k: bit-identical to an uninterrupted run ($(cat "$F/dbf$k.log"))"
        else bad "double_buffering=1 resumed at $k: ranks $(rcs "$F/dbf$k" 2); $(cat "$F/dbf$k.log" 2> /dev/null); $(grep -h resuming "$F/dbf$k.out")"; fi
    done
fi

# 7. A checkpoint of 4 ranks resumes on 2 and on 3 at its iteration. Criterion
#    (momentum=0, so the state is the weights and the iteration): the resumed
#    run equals a run on the new rank count from the 4-rank run's weights of
#    that iteration with seen = iteration x the new global batch
#    (global_batch=cfg: the global batch follows the ranks; keeping it is
#    tests/e2e/run_stop.sh's).
if want ranks; then
    cfg "$F/r4/r.cfg" 2 1 6 checkpoint_interval=4 save_interval=4 global_batch=cfg
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
    if all_rc "$F/e" 2 $EX_USER && [ "$before" = "$(ls -l --time-style=full-iso "$F/e")" ] &&
       grep -q "checkpoint $F/e/e.ckpt-6 is at iteration 6 and the cfg's max_batches is 6: nothing to train; raise max_batches to go on, or move its files aside" "$F/e.err" &&
       [ "$(grep -c 'nothing to train' "$F/e.err")" = 1 ]; then
        ok "a re-run after a finished run is refused on every rank, nothing written: $(grep -o 'checkpoint .*' "$F/e.err" | cut -c1-110)"
    else bad "re-run after the end: rc $(rcs "$F/e" 2); $(head -2 "$F/e.err"); $(grep -h 'resumed\|wrote' "$F/e.out")"; fi
    # The same job again after it finished (a Slurm requeue, an mn_rerun.sh
    # attempt: the lock's record names the job), its launcher having failed
    # at the end: nothing to do, exit 0, nothing written. Another job's run
    # (another MN_RERUN_ID) is refused as above.
    data ej; MN_RERUN_ID=job-a run ej 2 "$F/e.cfg"
    before=$(ls -l --time-style=full-iso "$F/ej")
    MN_RERUN_ID=job-a run ej 2 "$F/e.cfg"
    if all_rc "$F/ej" 2 0 && [ "$before" = "$(ls -l --time-style=full-iso "$F/ej")" ] && ! grep -q ': loss' "$F/ej.out" &&
       grep -q "^darknet-mn: an earlier run of this job (mn_rerun:job-a) finished: checkpoint $F/ej/e.ckpt-6 is at max_batches 6 and $F/ej/e_final.weights was written after it; nothing left to do" "$F/ej.out"; then
        said=$(grep -o 'an earlier run of this job.* finished' "$F/ej.out")
        MN_RERUN_ID=job-b run ej 2 "$F/e.cfg"
        if all_rc "$F/ej" 2 $EX_USER && grep -q "checkpoint $F/ej/e.ckpt-6 is at iteration 6 and the cfg's max_batches is 6: nothing to train" "$F/ej.err"; then
            ok "the same job run again after it finished: exit 0 on every rank, nothing written: $said; another job is refused ($EX_USER)"
        else bad "another job after a finished one: rc $(rcs "$F/ej" 2); $(head -2 "$F/ej.err")"; fi
    else bad "the same job after it finished: rc $(rcs "$F/ej" 2); $(head -2 "$F/ej.err"); $(grep -h 'darknet-mn' "$F/ej.out" | head -3)"; fi
    cfg "$F/e.cfg" 2 1 6
    data ew; run ew 2 "$F/e.cfg" "$F/e/e_final.weights"
    if all_rc "$F/ew" 2 $EX_USER && [ ! -e "$F/ew" -o -z "$(ls "$F/ew" 2> /dev/null)" ] &&
       grep -q "weights file $F/e/e_final.weights is at iteration 6 and the cfg's max_batches is 6: nothing to train; raise max_batches to go on, or add -clear" "$F/ew.err"; then
        ok "a weights file at max_batches is refused: $(grep -o 'weights file .*' "$F/ew.err" | cut -c1-80)"
    else bad "weights at the end: rc $(rcs "$F/ew" 2); $(head -2 "$F/ew.err")"; fi
    cfg "$F/e.cfg" 2 1 0
    data ez; run ez 2 "$F/e.cfg"
    if all_rc "$F/ez" 2 $EX_USER && [ -z "$(ls "$F/ez" 2> /dev/null)" ] &&
       grep -q "max_batches is 0: nothing to train" "$F/ez.err"; then ok "max_batches=0 is refused, nothing written"
    else bad "max_batches=0: rc $(rcs "$F/ez" 2); $(head -2 "$F/ez.err"); $(ls "$F/ez" 2> /dev/null)"; fi
    # -clear with a weights file, in a folder without checkpoints: from it at iteration 0.
    cfg "$F/e.cfg" 2 1 4 checkpoint_interval=3
    data ec; run ec 2 "$F/e.cfg" "$F/e/e_3.weights" -clear
    if all_rc "$F/ec" 2 0 && grep -q "^1: loss" "$F/ec.out" && grep -q "starting from $F/e/e_3.weights at iteration 0 (-clear: seen set to 0)$" "$F/ec.out"; then
        ok "-clear with a weights file: trains 4 updates from it, from iteration 1"
    else bad "-clear: rc $(rcs "$F/ec" 2); $(grep -h 'resum\|starting' "$F/ec.out"); $(head -2 "$F/ec.err")"; fi
    # -clear in a batch script's flags: a second run of the job (MN_RERUN_ID,
    # as SLURM_JOB_ID in a requeue), or the script submitted again, goes on
    # from the newest checkpoint. Run 1 stops at iteration 2 (max_batches 2),
    # run 2 goes on to 4: together the straight -clear run's weights, bit for
    # bit. Without checkpoints (ej0) run 2 would start over beside run 1's
    # final weights: refused (64), nothing written.
    for k in 1 0; do
        data "ej$k"
        cfg "$F/e.cfg" 2 1 2 checkpoint_interval=$k
        MN_RERUN_ID="clear-$k" run "ej$k" 2 "$F/e.cfg" "$F/e/e_3.weights" -clear -log "$F/ej$k.log"
        cfg "$F/e.cfg" 2 1 4 checkpoint_interval=$k
        cp "$F/ej$k.log" "$F/ej$k.log1"
        before=$(ls -l --time-style=full-iso "$F/ej$k")
        MN_RERUN_ID="clear-$k" run "ej$k" 2 "$F/e.cfg" "$F/e/e_3.weights" -clear -log "$F/ej$k.log"
        tail -n +$(($(wc -l < "$F/ej$k.log1") + 1)) "$F/ej$k.log" > "$F/ej$k.out"   # run 2's lines
    done
    # -log appends: the file holds both runs' lines, the first run's first.
    if [ "$(grep -c ': loss' "$F/ej1.log")" = 4 ] && cmp -s "$F/ej1.log1" <(head -n "$(wc -l < "$F/ej1.log1")" "$F/ej1.log"); then
        ok "-log across two runs of a job: appended, 2 + 2 loss lines, the first run's lines kept"
    else bad "-log across two runs: $(grep -c ': loss' "$F/ej1.log") loss lines"; fi
    if all_rc "$F/ej1" 2 0 && [ "$(grep -c ': loss' "$F/ej1.out")" = 2 ] && grep -q '^3: loss' "$F/ej1.out" &&
       grep -q "^darknet-mn: resuming from checkpoint $F/ej1/e.ckpt-2: iteration 2 of max_batches 4" "$F/ej1.out" &&
       "$W" "$F/ej1/e_final.weights" "$F/ec/e_final.weights" 0 > "$F/ej1.cmp"; then
        ok "-clear, the job's second run: resumes from its first run's checkpoint at iteration 2; 2 + 2 updates = the straight -clear run ($(cat "$F/ej1.cmp"))"
    else bad "-clear in a job's second run: rc $(rcs "$F/ej1" 2); $(grep -h 'darknet-mn' "$F/ej1.out" | head -3); $(head -2 "$F/ej1.err")"; fi
    if all_rc "$F/ej0" 2 $EX_USAGE && [ "$before" = "$(ls -l --time-style=full-iso "$F/ej0")" ] &&
       grep -q "backup folder $F/ej0 holds an earlier training of e ($F/ej0/e_final.weights) and this run would start over at iteration 0" "$F/ej0.err"; then
        ok "-clear, the job's second run after a first that wrote no checkpoint: refused ($EX_USAGE), its final weights untouched"
    else bad "-clear in a job's second run, no checkpoint: rc $(rcs "$F/ej0" 2); $(head -2 "$F/ej0.err")"; fi
fi

# Issue 44.1. A checkpoint records its experiment: the cfg's layers and
# training keys, and the train list. A run of another experiment in the same
# folder is refused (status 3 on every rank, one message naming what differs
# and how to start anew, the folder untouched), also where the parameter
# count is the same (it resumed the old run before, the weights given left
# unloaded). What only splits or lengthens the run stays a resume.
# Each cfg is an edited $F/x.cfg under the same name, $F/<edit>/x.cfg, so
# that it finds x's checkpoints.
# refused_by NAME CFG DATA PATTERN [args...]: NAME's run of CFG with DATA
# (backup folder $F/x) exits 73 on both ranks with one message, matching
# PATTERN, and leaves the folder as it was.
refused_by() {
    local name=$1 c=$2 d=$3 pat=$4; shift 4
    local before; before=$(ls -l --time-style=full-iso "$F/x")   # dot files aside: the lock names each job
    cp "$F/$d.data" "$F/$name.data"
    run "$name" 2 "$c" "$@"
    if all_rc "$F/$name" 2 $EX_REFUSED && [ "$(grep -c '^darknet-mn: ' "$F/$name.err")" = 1 ] && grep -q -- "$pat" "$F/$name.err" &&
       [ "$before" = "$(ls -l --time-style=full-iso "$F/x")" ] && [ -z "$(ls -A "$F/x" | grep token)" ] &&
       ! grep -q '^[0-9]*: loss' "$F/$name.out"; then
        ok "$name: another experiment's checkpoint is refused, exit $EX_REFUSED on every rank, the folder untouched: $(grep -o 'checkpoint .*' "$F/$name.err" | sed "s|$F/||g")"
    else bad "$name: exit $(rcs "$F/$name" 2), want $EX_REFUSED; $(grep -h 'resuming\|not loaded' "$F/$name.out" | sed "s|$F/||g"); $(head -3 "$F/$name.err")"; fi
}
if want experiment; then
    cfg "$F/x.cfg" 2 1 4 checkpoint_interval=2 save_interval=2
    data x; run x 2 "$F/x.cfg"
    if all_rc "$F/x" 2 0 && [ -f "$F/x/x.ckpt-4" ] && ! grep -q 'not seen' "$F/x.err" && [ -z "$(ls -A "$F/x" | grep token)" ]; then
        ok "the first experiment: 4 updates, checkpoints $(ls "$F/x" | grep -o 'ckpt-[0-9]*' | sort -t- -k2 -n | tr '\n' ' ')"
    else bad "the first experiment: exit $(rcs "$F/x" 2); $(ls -A "$F/x" | tr '\n' ' '); $(head -2 "$F/x.err")"; fi
    # The same parameter count: another momentum (a weights file given), another activation.
    mkdir -p "$F/lr" "$F/act" "$F/filters" "$F/x6" "$F/xr.cfg.d"
    sed 's/^max_batches=.*/max_batches=6/; s/^momentum=.*/momentum=0.8/' "$F/x.cfg" > "$F/lr/x.cfg"
    refused_by x-lr "$F/lr/x.cfg" x "checkpoint $F/x/x.ckpt-4 is of another experiment: momentum 0.9 in the checkpoint's run, 0.8 now; move its files aside (mkdir $F/x/old \&\& mv $F/x/x.ckpt-\* $F/x/x_\*.weights $F/x/old/) to start this run anew there, or give the data cfg another backup= folder$" "$F/x/x_2.weights"
    sed 's/^max_batches=.*/max_batches=6/; s/^activation=leaky/activation=relu/' "$F/x.cfg" > "$F/act/x.cfg"
    refused_by x-act "$F/act/x.cfg" x "is of another experiment: layer 0 (convolutional): activation leaky in the checkpoint, relu in the cfg;"
    # Another parameter count: was skipped, and the run started from scratch.
    sed 's/^max_batches=.*/max_batches=6/; 0,/^filters=8/s//filters=16/' "$F/x.cfg" > "$F/filters/x.cfg"
    refused_by x-filters "$F/filters/x.cfg" x "is of another experiment: layer 0 (convolutional): filters 8 in the checkpoint, 16 in the cfg;"
    # Another train list: half of it.
    sed 's/^max_batches=.*/max_batches=6/' "$F/x.cfg" > "$F/x6/x.cfg"
    head -256 "$D/train.list" > "$F/half.list"; sed "s|^train=.*|train=$F/half.list|" "$F/x.data" > "$F/xhalf.data"
    refused_by x-list "$F/x6/x.cfg" xhalf "is of another experiment: the train list $D/train.list held 512 images in the checkpoint's run, $F/half.list holds 256 now;"
    # The older format (MNCKPT02, no experiment): made from checkpoint 4 as the last version wrote it.
    mkdir -p "$F/old" && data old
    python3 - "$F/x/x.ckpt-4" "$F/old/x.ckpt-4" << 'EOF'
import struct, sys
b = open(sys.argv[1], 'rb').read()
exp = struct.unpack_from('<Q', b, 64)[0]
body = b'MNCKPT02' + b[8:64] + b[88 + exp:-8]
h = 1469598103934665603   # MN_FNV_SEED
for x in body: h = ((h ^ x) * 0x100000001b3) & 0xffffffffffffffff
open(sys.argv[2], 'wb').write(body + struct.pack('<Q', h))
EOF
    run old 2 "$F/x6/x.cfg"
    if all_rc "$F/old" 2 $EX_REFUSED && [ "$(grep -c '^darknet-mn: ' "$F/old.err")" = 1 ] &&
       grep -q "checkpoint $F/old/x.ckpt-4 is of an earlier darknet-mn (format MNCKPT02), which did not record its experiment: it may be another run's; move its files aside" "$F/old.err" &&
       [ "$(ls "$F/old")" = x.ckpt-4 ]; then
        ok "a checkpoint of the older format is refused, exit $EX_REFUSED: $(grep -o 'checkpoint .*' "$F/old.err" | sed "s|$F/||g" | cut -c1-150)"
    else bad "the older format: exit $(rcs "$F/old" 2); $(grep -h resuming "$F/old.out"); $(head -2 "$F/old.err")"; fi
    # Stays a resume: max_batches raised, 1 rank of batch 4 in 2 subdivisions for 2
    # of batch 2, the rate spelled 1e-2, a comment, and the list reordered in
    # another file; the weights file given is not loaded (issue 44.2): the
    # final weights are those of the same resume without it.
    cfg "$F/xr.cfg.d/x.cfg" 2 2 6 checkpoint_interval=2 save_interval=2
    sed -i 's/^learning_rate=.*/learning_rate=1e-2   # the same rate/' "$F/xr.cfg.d/x.cfg"
    sort -r "$D/train.list" > "$F/reordered.list"
    for n in xr xn; do
        mkdir -p "$F/$n" && cp "$F/x/x.ckpt-4" "$F/$n/"
        sed "s|^train=.*|train=$F/reordered.list|; s|^backup=.*|backup=$F/$n|" "$F/x.data" > "$F/$n.data"
    done
    run xr 1 "$F/xr.cfg.d/x.cfg" "$F/x/x_2.weights"; run xn 1 "$F/xr.cfg.d/x.cfg"
    if all_rc "$F/xr" 1 0 && all_rc "$F/xn" 1 0 &&
       grep -q "resuming from checkpoint $F/xr/x.ckpt-4: iteration 4 of max_batches 6, written by 2 ranks (global batch 4); now 1 ranks (global batch 4), seen = 4 x 4 = 16" "$F/xr.out" &&
       grep -q "darknet-mn: $F/x/x_2.weights is not loaded: the checkpoint continues the run (move the checkpoints aside to start from it instead)" "$F/xr.out" &&
       [ "$(grep -c '^[56]: loss' "$F/xr.out")" = 2 ] && "$W" "$F/xr/x_final.weights" "$F/xn/x_final.weights" 0 > "$F/xr.log"; then
        ok "the same experiment on 1 rank x 2 subdivisions, max_batches 6, rate 1e-2, the list reordered: resumed at 4; the weights given not loaded, the same final weights as without them ($(cat "$F/xr.log"))"
    else bad "the same experiment resumed: exit $(rcs "$F/xr" 1) $(rcs "$F/xn" 1); $(grep -h 'resuming\|not loaded' "$F/xr.out"); $(cat "$F/xr.log" 2> /dev/null); $(head -2 "$F/xr.err")"; fi
    # A finished training extended as Darknet users do: max_batches raised,
    # the rate halved from iteration 5 on (policy, steps, scales; the rate
    # spelled anew is no change). It resumes, one line per changed key, with
    # the momentum kept: bit for bit a run of the extended cfg from scratch
    # (whose rate is the same 0.01 until iteration 4).
    mkdir -p "$F/xe" "$F/xs" "$F/xe.cfg.d" && cp "$F/x/x.ckpt-4" "$F/xe/"
    cfg "$F/xe.cfg.d/x.cfg" 2 1 6 checkpoint_interval=2 save_interval=2
    sed -i 's/^learning_rate=.*/learning_rate=0.010\npolicy=steps\nsteps=5\nscales=.5/' "$F/xe.cfg.d/x.cfg"
    data xe; data xs; run xe 2 "$F/xe.cfg.d/x.cfg"; run xs 2 "$F/xe.cfg.d/x.cfg"
    if all_rc "$F/xe" 2 0 && [ "$(grep -c '^darknet-mn: the schedule goes on changed' "$F/xe.out")" = 3 ] &&
       grep -q "^darknet-mn: the schedule goes on changed: policy not set in the run of $F/xe/x.ckpt-4, steps now$" "$F/xe.out" &&
       grep -q "^darknet-mn: the schedule goes on changed: steps not set in the run of $F/xe/x.ckpt-4, 5 now$" "$F/xe.out" &&
       grep -q "resuming from checkpoint $F/xe/x.ckpt-4: iteration 4 of max_batches 6" "$F/xe.out" &&
       [ "$(grep -c '^[56]: loss' "$F/xe.out")" = 2 ] && "$W" "$F/xe/x_final.weights" "$F/xs/x_final.weights" 0 > "$F/xe.log"; then
        ok "a finished training extended (max_batches 4 -> 6, policy steps, steps 5, scales .5, the rate respelled): resumed at 4 with $(grep -c 'schedule goes on changed' "$F/xe.out") lines, momentum kept: = the extended cfg from scratch ($(cat "$F/xe.log"))"
    else bad "an extended training: exit $(rcs "$F/xe" 2); $(grep -h 'schedule\|resuming' "$F/xe.out" | sed "s|$F/||g" | head -5); $(cat "$F/xe.log" 2> /dev/null); $(head -2 "$F/xe.err")"; fi
    # As the refusal says: the files moved aside, the other momentum trains there from scratch.
    mkdir "$F/x/old" && mv "$F"/x/x.ckpt-* "$F"/x/x_*.weights "$F/x/old/"
    run x-lr 2 "$F/lr/x.cfg"
    if all_rc "$F/x-lr" 2 0 && grep -q '^1: loss' "$F/x-lr.out" && [ "$(seen_of "$F/x/x_final.weights")" = 24 ] &&
       [ "$(seen_of "$F/x/old/x_final.weights")" = 16 ]; then
        ok "the files moved aside as the refusal says: the other experiment starts anew in the same folder, 6 updates from iteration 1, seen 24; the first kept aside"
    else bad "after the refusal, files moved aside: exit $(rcs "$F/x-lr" 2); $(head -2 "$F/x-lr.err")"; fi
fi

# Issue 50. Within a run the iteration orders checkpoints, not the writers'
# clocks: checkpoint 3's time set a day ahead (a rescue from a host whose
# clock runs ahead), the rerun resumes from 4, not 3, and pruning
# (checkpoint_keep=2) keeps 5 and 6, not the future-dated 3.
if want order; then
    cfg "$F/o.cfg" 2 1 4 checkpoint_interval=1 checkpoint_keep=3
    data o; run o 2 "$F/o.cfg"
    python3 - "$F/o/o.ckpt-3" << 'EOF'
import struct, sys, time
b = bytearray(open(sys.argv[1], 'rb').read())
struct.pack_into('<Q', b, 56, int((time.time() + 86400) * 1e9))   # written: a day ahead
h = 1469598103934665603   # MN_FNV_SEED
for x in b[:-8]: h = ((h ^ x) * 0x100000001b3) & 0xffffffffffffffff
struct.pack_into('<Q', b, len(b) - 8, h)
open(sys.argv[1], 'wb').write(b)
EOF
    cfg "$F/o.cfg" 2 1 6 checkpoint_interval=1 checkpoint_keep=2
    run o 2 "$F/o.cfg"
    if all_rc "$F/o" 2 0 && grep -q "resuming from checkpoint $F/o/o.ckpt-4: iteration 4 of max_batches 6" "$F/o.out" &&
       [ "$(grep -c '^[0-9]*: loss' "$F/o.out")" = 2 ] && [ "$(ls "$F/o" | grep ckpt | sort | xargs)" = "o.ckpt-5 o.ckpt-6" ]; then
        ok "checkpoint 3 dated a day ahead: the rerun resumes from 4 (the highest iteration of the run), pruning keeps $(ls "$F/o" | grep ckpt | sort | xargs)"
    else bad "a future-dated checkpoint: exit $(rcs "$F/o" 2); $(grep -h resuming "$F/o.out" | sed "s|$F/||g"); kept $(ls "$F/o" | grep ckpt | xargs); $(head -2 "$F/o.err")"; fi
fi

# Issue 53. The end is a checkpoint too, whatever checkpoint_interval: 5
# iterations with K=2 write 2, 4 and 5, and the training extended to 7
# resumes at 5, repeating nothing.
if want end; then
    cfg "$F/n.cfg" 2 1 5 checkpoint_interval=2
    data n; run n 2 "$F/n.cfg"
    cfg "$F/n.cfg" 2 1 7 checkpoint_interval=2
    run n 2 "$F/n.cfg"
    if all_rc "$F/n" 2 0 && grep -q "resuming from checkpoint $F/n/n.ckpt-5: iteration 5 of max_batches 7" "$F/n.out" &&
       [ "$(grep -c '^[0-9]*: loss' "$F/n.out")" = 2 ] && grep -q '^6: loss' "$F/n.out"; then
        ok "max_batches 5 with checkpoint_interval=2 checkpoints its end: extended to 7, it resumes at 5 and trains 6 and 7"
    else bad "the end's checkpoint: exit $(rcs "$F/n" 2); $(grep -h resuming "$F/n.out" | sed "s|$F/||g"); $(ls "$F/n" | grep ckpt | xargs)"; fi
fi

# Issue 44.4a. The last checkpoint at max_batches and no final weights (the
# run failed between the two): the rerun writes <base>_final.weights from the
# checkpoint, trains nothing and exits 0 (it said "nothing to train", exit
# 1). Once they are there, a rerun is refused as before.
if want final; then
    cfg "$F/f.cfg" 2 1 4 checkpoint_interval=2
    data f; run f 2 "$F/f.cfg"
    mv "$F/f/f_final.weights" "$F/f-straight.weights"
    run f 2 "$F/f.cfg"
    if all_rc "$F/f" 2 0 && ! grep -q ': loss' "$F/f.out" &&
       grep -q "darknet-mn: checkpoint $F/f/f.ckpt-4 is at max_batches 4 and its run ended before writing its final weights: writing $F/f/f_final.weights from it" "$F/f.out" &&
       "$W" "$F/f/f_final.weights" "$F/f-straight.weights" 0 > "$F/f.log"; then
        run f 2 "$F/f.cfg"
        if all_rc "$F/f" 2 $EX_USER && grep -q "checkpoint $F/f/f.ckpt-4 is at iteration 4 and the cfg's max_batches is 4: nothing to train" "$F/f.err"; then
            ok "a checkpoint at max_batches without final weights: they are written from it, exit 0, no update, equal to the run's own ($(cat "$F/f.log")); then a rerun is refused as finished"
        else bad "after the final weights from the checkpoint: exit $(rcs "$F/f" 2); $(head -2 "$F/f.err")"; fi
    else bad "final weights from the checkpoint at max_batches: exit $(rcs "$F/f" 2); $(grep -h 'checkpoint\|wrote' "$F/f.out"); $(cat "$F/f.log" 2> /dev/null); $(head -2 "$F/f.err")"; fi
fi

# bn_average=1 without sync_bn: each rank's running statistics are its own,
# and a checkpoint holds their mean (as a weights file does), so a run
# stopped at a checkpoint and resumed ends bit for bit as a run never
# stopped. Holding rank 0's statistics instead, the resumed ranks would all
# go on from rank 0's and their final mean would differ.
if want bnavg; then
    bcfg() {
        mn_cfg "$1" batch=4 learning_rate=0.01 -burn_in -policy -steps -scales max_batches="$2" \
            '[convolutional]' batch_normalize=1 '[maxpool]' '[connected]' '[softmax]' \
            -- deterministic=1 shuffle=0 bn_average=1 checkpoint_interval=2
    }
    bcfg "$F/ba.cfg" 8; data ba; run ba 2 "$F/ba.cfg"
    bcfg "$F/bs.cfg" 4; data bs; run bs 2 "$F/bs.cfg"
    bcfg "$F/bs.cfg" 8; run bs 2 "$F/bs.cfg"
    if all_rc "$F/bs" 2 0 && grep -q "resuming from checkpoint $F/bs/bs.ckpt-4: iteration 4 of max_batches 8" "$F/bs.out" &&
       cmp -s "$F/ba/ba_final.weights" "$F/bs/bs_final.weights" &&
       "$W" "$F/bs/bs_final.weights" "$F/ba/ba_final.weights" 0 > "$F/ba.log"; then
        ok "bn_average=1, no sync_bn: stopped at the checkpoint of 4, resumed, 8 updates bit for bit as straight ($(cat "$F/ba.log"))"
    else bad "bn_average resume: rc $(rcs "$F/bs" 2); $(grep -h 'resum' "$F/bs.out"); $("$W" "$F/bs/bs_final.weights" "$F/ba/ba_final.weights" 0); $(head -2 "$F/bs.err")"; fi
fi

# Issue 44.4b. The best score survives a restart: top-1 every 5 updates,
# checkpoints with them; at a rate of 0.05 for 10 updates, then -0.01
# (scales=-0.2: gradient ascent, so later scores are worse). A run to 10
# resumed to 20 prints the evaluations of a run to 20 straight, best
# included, and its _best.weights is that run's (the best started again
# from -1: a worse model replaced it).
if want best; then
    mn_cfg "$F/b.cfg" batch=8 learning_rate=0.05 -burn_in policy=steps steps=11 scales=-0.2 max_batches=20 \
        -- deterministic=1 shuffle=0 eval_interval=5 checkpoint_interval=5
    data bs; run bs 2 "$F/b.cfg"
    mkdir -p "$F/b10"; sed 's/^max_batches=.*/max_batches=10/' "$F/b.cfg" > "$F/b10/b.cfg"
    data b; run b 2 "$F/b10/b.cfg"
    run b 2 "$F/b.cfg"
    evals() { grep -h '^[0-9]*: eval' "$1.out" | sed 's/ (.*//; s|, saving .*||'; }
    got=$(evals "$F/b" | tr '\n' ';'); want_=$(evals "$F/bs" | grep '^\(15\|20\):' | tr '\n' ';')
    if all_rc "$F/b" 2 0 && [ -n "$want_" ] && [ "$got" = "$want_" ] &&
       grep -q "the best evaluation so far, [0-9.]* at iteration 10, carries on" "$F/b.out" &&
       "$W" "$F/b/b_best.weights" "$F/bs/b_best.weights" 0 > "$F/b.log"; then
        ok "the best top-1 carries over a restart at 10: $(grep -o 'the best evaluation so far, [0-9.]* at iteration [0-9]*' "$F/b.out"); evaluations as straight ($got); _best.weights = straight's ($(cat "$F/b.log"))"
    else bad "the best after a restart: exit $(rcs "$F/b" 2); resumed: $got; straight: $want_; $(cat "$F/b.log" 2> /dev/null)"; fi
fi

# Issue 44.3. The backup folder must be seen by every rank where checkpoints
# are written: rank 1 in a mount namespace of its own with an empty tmpfs
# over the folder cannot see rank 0's token. With checkpoint_interval,
# refused (exit 73, the rank and host named, nothing left but the lock);
# without, one warning and the run goes on; where every rank sees it,
# nothing said. No token is left behind.
# blind NAME CFG: NAME's job on 2 ranks, rank 1 blind to the backup folder $F/NAME.
blind() {
    local o=$F/$1; rm -f "$o".rc.* "$o".out.* "$o".err.*; mkdir -p "$o"
    timeout 120 $MPI -n 1 sh -c "$(rank_cmd "$o" "$PROG" classifier train "$F/$1.data" "$2")" : \
        -n 1 unshare -m sh -c "mount -t tmpfs none $o && $(rank_cmd "$o" "$PROG" classifier train "$F/$1.data" "$2")"
    cat "$o".out.* > "$o.out"; cat "$o".err.* > "$o.err"
}
if want shared; then
    if ! unshare -m true 2> /dev/null; then
        skip "the backup folder every rank sees: unshare -m needs root here"
    else
        cfg "$F/v.cfg" 2 1 4 checkpoint_interval=2
        data v; blind v "$F/v.cfg"
        if all_rc "$F/v" 2 $EX_REFUSED && [ "$(grep -c '^darknet-mn: ' "$F/v.err")" = 1 ] &&
           grep -q "backup folder $F/v is not seen by rank 1 ($(hostname)): the backup folder must be on storage every node sees, or a rerun on another node starts from iteration 0 (checkpoint_interval=2 writes checkpoints there)" "$F/v.err" &&
           [ "$(ls -A "$F/v")" = .darknet_mn.lock ]; then
            ok "checkpoints into a folder rank 1 cannot see: refused, exit $EX_REFUSED on every rank, nothing left: $(grep -o 'backup folder .*' "$F/v.err" | sed "s|$F/||g" | cut -c1-150)"
        else bad "checkpoints into a folder rank 1 cannot see: exit $(rcs "$F/v" 2); $(ls -A "$F/v" | tr '\n' ' '); $(head -2 "$F/v.err")"; fi
        cfg "$F/vw.cfg" 2 1 4
        data vw; blind vw "$F/vw.cfg"
        if all_rc "$F/vw" 2 0 && [ "$(grep -c 'not seen' "$F/vw.err")" = 1 ] &&
           grep -q "rank 0 ($(hostname)): warning: backup folder $F/vw is not seen by rank 1 ($(hostname)): rank 0 alone writes there" "$F/vw.err" &&
           [ -f "$F/vw/vw_final.weights" ] && [ -z "$(ls -A "$F/vw" | grep token)" ]; then
            ok "no checkpoints, a folder rank 1 cannot see: one warning, trained, no token left: $(grep -o 'warning: .*' "$F/vw.err" | sed "s|$F/||g" | cut -c1-110)"
        else bad "no checkpoints, a folder rank 1 cannot see: exit $(rcs "$F/vw" 2); $(grep -c 'not seen' "$F/vw.err") warnings; $(ls -A "$F/vw" | tr '\n' ' ')"; fi
        run v 2 "$F/v.cfg"
        if all_rc "$F/v" 2 0 && ! grep -q 'not seen' "$F/v.err" && [ -f "$F/v/v.ckpt-4" ] && [ -z "$(ls -A "$F/v" | grep token)" ]; then
            ok "the same job where both ranks see the folder: trained with checkpoints, nothing said, no token left"
        else bad "both ranks see the folder: exit $(rcs "$F/v" 2); $(ls -A "$F/v" | tr '\n' ' '); $(head -2 "$F/v.err")"; fi
    fi
fi

# 5. Pruning keeps checkpoint_keep of the run's own loadable generations: a
#    resume on 1 rank with checkpoint_keep=2 of a 2-rank run's 8, 10, 12
#    (keep 3) to 16 leaves 14 and 16, and a file that does not load (9,
#    half a header: skipped at the resume) is never removed.
if want prune; then
    cfg "$F/p.cfg" 2 1 12 checkpoint_interval=2
    data p; run p 2 "$F/p.cfg"
    head -c 40 "$F/p/p.ckpt-8" > "$F/p/p.ckpt-9"
    cfg "$F/p.cfg" 2 1 16 checkpoint_interval=2 checkpoint_keep=2
    run p 1 "$F/p.cfg"
    got=$(ls "$F/p" | grep ckpt | sort -t- -k2 -n | tr '\n' ' ')
    if all_rc "$F/p" 1 0 && [ "$got" = "p.ckpt-9 p.ckpt-14 p.ckpt-16 " ] && grep -q "checkpoint $F/p/p.ckpt-9 is incomplete or corrupt: skipped" "$F/p.err"; then
        ok "pruning removes only the run's own loadable generations: $got"
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

# 14.8. A second job on the same backup folder is refused at once, exit 73
#       (refused) on every rank, naming the holder's host, pid and lease
#       (a fresh one: a stop of seconds is well within the default 60 s);
#       the first (stopped meanwhile, so that it is surely still running)
#       finishes fine. The lease's other cases: tests/cluster/cluster_lock.sh.
if want lock; then
    unset SLURM_JOB_ID MN_RERUN_ID   # two jobs of one Slurm job or rerun would take the lock over
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
    if all_rc "$F/l" 2 $EX_REFUSED && [ "$took" -le 20 ] && [ $rc1 = 0 ] && [ -f "$F/l/l_final.weights" ] &&
       grep -q "backup folder $F/l is in use by another job (host $(hostname), pid $(cat "$F/l1.pid.0"); its lease renewed [0-9.]* s ago, stale after 60 s); lock file $F/l/.darknet_mn.lock" "$F/l.err"; then
        ok "a second job on the same backup folder exits $EX_REFUSED in ${took}s naming the holder; the first finishes: $(grep -o 'backup folder.*' "$F/l.err" | cut -c1-150)"
    else bad "lock: second rc $(rcs "$F/l" 2) in ${took}s, first rc $rc1; $(head -2 "$F/l.err")"; fi
fi
finish
