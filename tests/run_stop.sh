#!/usr/bin/env bash
# Stop signals and exit statuses (docs/user-guide.md, "Exit statuses"):
# SIGUSR1, SIGTERM or SIGINT on any one rank stops every rank at the end of
# the iteration, rank 0 writes a checkpoint, every rank exits 75, and the
# same command resumes to the weights of a run never stopped (deterministic
# mode, bit for bit); a checkpoint at the last iteration resumes to
# _final.weights; each other row of the table has its status. Run by
# tests/run.sh (T, D, TEST_BIN, MPI set there); ONLY=name runs one section.
. "$(dirname "$0")/lib.sh"
F=$T/stop
rm -rf "$F" && mkdir -p "$F"
want() { [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ]; }
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

# bg_rcs OUT NP CMD...: bg_ranks (tests/lib.sh), each rank's exit status
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
    if [ "$mrc" != 75 ] || ! all_rc "$o" 2 75 || [ -z "$it" ] || [ ! -f "$F/$name/long.ckpt-$it" ] ||
       [ -e "$F/$name/long_final.weights" ] || ! grep -q "by SIG$sig (on 1 of 2 ranks)\|by a signal on another rank (on 1 of 2 ranks)" <<< "$line"; then
        bad "SIG$sig to rank $r: mpiexec $mrc, ranks $(rcs "$o" 2); '$line'; $(ls "$F/$name" | tr '\n' ' '); $(tail -2 "$o.err")"
        return
    fi
    cp "$F/$name.data" "$F/$name-again.data"
    mn "$F/$name-again" 2 classifier train "$F/$name-again.data" "$F/long.cfg"
    if all_rc "$F/$name-again" 2 0 && grep -q "resuming from checkpoint $F/$name/long.ckpt-$it" "$F/$name-again.out.0" &&
       "$W" "$F/$name/long_final.weights" "$F/ref/long_final.weights" 0 > "$F/$name.cmp"; then
        ok "SIG$sig to rank $r of 2: stopped at iteration $it, every rank and mpiexec exit 75; the rerun resumes there and ends bit-identical to an uninterrupted run ($(cat "$F/$name.cmp"))"
    else bad "SIG$sig to rank $r: the rerun: $(rcs "$F/$name-again" 2); $(grep -a resum "$F/$name-again.out.0"); $(cat "$F/$name.cmp" 2> /dev/null); $(head -2 "$F/$name-again.err.0")"; fi
}
if want signals; then
    stopped usr1 USR1 1
    stopped term TERM 0
    stopped int INT 1
fi
finish stop
