#!/usr/bin/env bash
# The backup folder's lock and its lease (docs/internals.md, "Checkpoints"):
# rank 0 holds an flock on <backup>/.darknet_mn.lock and a record in it
# (job, host, pid, a lease renewed by a thread), so that neither a flock
# that outlives its host (NFS, Lustre) stops a rerun, nor a flock that is
# node-local or a no-op lets two jobs write one folder. Each section fakes
# one case: a record of another host (fresh or stale) with the flock held
# by a process that stays, a holder frozen past its lease, a rerun of the
# same Slurm job, flock() made a no-op by an LD_PRELOAD shim (a live holder;
# two jobs taking over one stale lock at the same moment), and mn_rerun.sh's second attempt after
# its first one's rank 0 died and the flock lingered. Run by make
# test-cluster (TEST_BIN set there); ONLY=name runs one section.
. "$(dirname "$0")/../helpers/lib.sh"
F=$T/lock
rm -rf "$F" && mkdir -p "$F"
[ -d "$D" ] || fashion_slice "$D" 256 64
# The job identity comes from these (mn_lock.c): none of this shell's may leak in.
unset SLURM_JOB_ID SLURM_CLUSTER_NAME MN_RERUN_ID
LOCK=.darknet_mn.lock
host=$(hostname)

# cfg FILE MAXB [distributed lines...]: the tiny classifier at a constant
# rate, deterministic; no backups, saves or chart on the way, so a folder
# shows who wrote what (each job's <cfg>_log.csv, the final weights).
cfg() {
    local f=$1 m=$2; shift 2
    mn_cfg "$f" learning_rate=0.01 -burn_in -policy -steps -scales max_batches="$m" \
        -- deterministic=1 shuffle=0 backup_interval=1000000 save_interval=1000000 chart=0 "$@"
}
# data NAME: $F/NAME.data with backup folder $F/NAME (made).
data() {
    printf 'classes=10\ntrain=%s/train.list\nvalid=%s/test.list\nlabels=%s/labels.txt\nbackup=%s/%s\n' "$D" "$D" "$D" "$F" "$1" > "$F/$1.data"
    mkdir -p "$F/$1"
}
cfg "$F/hold.cfg" 100000000                 # a holder: runs until stopped
cfg "$F/hold2.cfg" 100000000 lock_lease=2   # the same, stale 2 s after its last renewal
cfg "$F/short.cfg" 20                       # the second job: done in a moment
# holder NAME CFG [ENV=VALUE...]: a 1-rank holder of folder NAME in the
# background (bg_ranks: $F/NAME-h.pid.0, .out, .err, .mpiexec), once it
# reported iteration 3, so that it holds the lock.
holder() {
    local name=$1 c=$2; shift 2
    bg_ranks "$F/$name-h" 1 env "$@" "$PROG" classifier train "$F/$name.data" "$c"
    local i mp; mp=$(cat "$F/$name-h.mpiexec")
    for ((i = 0; i < 3000; ++i)); do
        grep -aq "^3: loss" "$F/$name-h.out" 2> /dev/null && return 0
        kill -0 "$mp" 2> /dev/null || { echo "holder $name ended: $(head -2 "$F/$name-h.err")"; return 1; }
        sleep 0.02
    done
    return 1
}
# second OUT NAME NP [ENV=VALUE...]: short.cfg on NP ranks into folder NAME
# (on_ranks: OUT.rc.<rank>, OUT.err.<rank>, OUT.out.<rank>); seconds taken in $took.
second() {
    local o=$1 name=$2 np=$3 t0=$SECONDS; shift 3
    on_ranks "$o" 120 "$np" "$@" -- "$PROG" classifier train "$F/$name.data" "$F/short.cfg"
    took=$((SECONDS - t0))
}
# fake_lock FILE HOST PID JOB AGE LEASE [STATE]: the record a job of HOST,
# pid PID and identity JOB ("-": none) writes, last renewed AGE seconds ago
# with a lease of LEASE seconds, held (or STATE: released): mn_lock.c's line
# and checksum (FNV-1a 64 of the text before " sum="), padded to 511
# characters and a newline.
fake_lock() {
    python3 - "$@" << 'EOF'
import sys, time
path, host, pid, job, age, lease = sys.argv[1:7]
state = sys.argv[7] if len(sys.argv) > 7 else "held"
text = "%s %s %016x job=%s lease=%s renewed=%.3f %s token=%016x" % (
    host, pid, 0xabc, job, lease, time.time() - float(age), state, 0x5eed)
h = 1469598103934665603
for b in text.encode():
    h = ((h ^ b) * 1099511628211) & (2**64 - 1)
with open(path, "w") as f:
    f.write(("%s sum=%016x" % (text, h)).ljust(511) + "\n")
EOF
}
# flock_holder FILE: a process that holds FILE's flock until killed (a host
# whose lock outlives it); its pid in $fh.
flock_holder() {
    ( flock -x 9 && exec sleep 100 ) 9<> "$1" &
    fh=$!
    local i
    for ((i = 0; i < 100; ++i)); do flock -n "$1" true || return 0; sleep 0.05; done
}
# said OUT PATTERN: the rank-0 line of OUT (stdout or stderr) matching PATTERN.
said() { cat "$1".out.0 "$1".err.0 2> /dev/null | grep -a -m1 -- "$2"; }
# ended NAME WANT: the holder of NAME, continued, ends with status WANT
# within 60 s (its mpiexec's status), in $hrc.
ended() {
    local mp; mp=$(cat "$F/$1-h.mpiexec")
    rank_signal CONT "$F/$1-h" 0
    wait "$mp"; hrc=$?
    [ "$hrc" = "$2" ]
}
# stop_holder NAME: the holder of NAME gone (SIGKILL), its mpiexec reaped.
stop_holder() { rank_signal CONT "$F/$1-h" 0; rank_signal KILL "$F/$1-h" 0; wait "$(cat "$F/$1-h.mpiexec")" 2> /dev/null; }
# foreign NAME AGE: folder NAME whose lock is another host's job (slurm:9 on
# node-b, pid 4242), renewed AGE s ago with a 60 s lease, its flock held by
# a process that stays; the second job into it on 2 ranks, rank 0's line
# about the lock in $msg.
foreign() {
    data "$1"
    fake_lock "$F/$1/$LOCK" node-b 4242 slurm:9 "$2" 60
    flock_holder "$F/$1/$LOCK"
    second "$F/$1-2" "$1" 2
    kill "$fh"
    msg=$(said "$F/$1-2" "in use by another job\|taking over")
}

# 1. Another host's job whose lease is fresh, its flock held: every rank of
#    the second job exits 73 (refused), rank 0 naming its job, host, pid and
#    lease; nothing written.
if want fresh; then
    foreign fresh 5
    if all_rc "$F/fresh-2" 2 $EX_REFUSED && [ -z "$(ls "$F/fresh")" ] &&
       grep -q "backup folder $F/fresh is in use by another job (job slurm:9, host node-b, pid 4242; its lease renewed [0-9.]* s ago, stale after 60 s); lock file $F/fresh/$LOCK" <<< "$msg"; then
        ok "fresh lease of another host, flock held: exit $EX_REFUSED on every rank in ${took}s: ${msg//$F\//}"
    else bad "fresh lease: exit $(rcs "$F/fresh-2" 2); '$msg'; $(cat "$F"/fresh-2.err.* | head -2)"; fi
fi

# 2. Another host's job whose lease went stale 120 s ago (the host is gone),
#    its flock still held (an NFS lease, Lustre until eviction): taken over
#    with a message naming it and its age; the job trains to the end.
if want gone; then
    foreign gone 120
    if all_rc "$F/gone-2" 2 0 && [ -f "$F/gone/short_final.weights" ] &&
       grep -q "taking over the lock of backup folder $F/gone from job slurm:9 (host node-b, pid 4242): its lease was renewed 1[12][0-9]\.[0-9] s ago, stale after 60 s; its flock is still held" <<< "$msg"; then
        ok "stale lease of a gone host, flock held: taken over, trained in ${took}s: ${msg//$F\//}"
    else bad "stale lease: exit $(rcs "$F/gone-2" 2); '$msg'; $(cat "$F"/gone-2.err.* | head -2)"; fi
fi

# 3. A holder frozen (SIGSTOP to its only rank: its renewal thread stops
#    too) with lock_lease=2: a new job 3 s later takes over (its flock still
#    held) and finishes; the holder, continued, finds the lock another
#    job's and exits 73 without writing its weights.
if want frozen; then
    data frozen
    holder frozen "$F/hold2.cfg"
    pid=$(cat "$F/frozen-h.pid.0")
    rank_signal STOP "$F/frozen-h" 0
    sleep 3
    second "$F/frozen-2" frozen 2
    msg=$(said "$F/frozen-2" "taking over")
    files=$(ls "$F/frozen" | tr '\n' ' ')
    if ended frozen $EX_REFUSED && all_rc "$F/frozen-2" 2 0 && [ -f "$F/frozen/short_final.weights" ] && [ ! -e "$F/frozen/hold2_final.weights" ] &&
       grep -q "taking over the lock of backup folder $F/frozen from a job (host $host, pid $pid): its lease was renewed [0-9.]* s ago, stale after 2 s; its flock is still held" <<< "$msg" &&
       grep -q "lost the lock of backup folder $F/frozen" "$F/frozen-h.err"; then
        ok "holder frozen past lock_lease=2: taken over in ${took}s: ${msg//$F\//}; the holder, continued, exits $EX_REFUSED: $(grep -m1 -o 'lost the lock.*' "$F/frozen-h.err" | sed "s|$F/||")"
    else bad "frozen holder: new job $(rcs "$F/frozen-2" 2), holder $hrc; files '$files'; '$msg'; $(cat "$F"/frozen-2.err.* | head -2); holder: $(tail -2 "$F/frozen-h.err")"; fi
    stop_holder frozen
fi

# 4. The same Slurm job (SLURM_JOB_ID=777 in both) takes over a lock whose
#    holder is frozen with a fresh lease and its flock held, at once;
#    another job id (778) is refused with exit 73 naming job slurm:777.
if want samejob; then
    data same
    holder same "$F/hold.cfg" SLURM_JOB_ID=777
    pid=$(cat "$F/same-h.pid.0")
    rank_signal STOP "$F/same-h" 0
    second "$F/same-other" same 2 SLURM_JOB_ID=778
    other=$(said "$F/same-other" "in use by another job")
    second "$F/same-2" same 2 SLURM_JOB_ID=777
    msg=$(said "$F/same-2" "taking over")
    if all_rc "$F/same-other" 2 $EX_REFUSED && grep -q "(job slurm:777, host $host, pid $pid; its lease renewed" <<< "$other" &&
       all_rc "$F/same-2" 2 0 && [ -f "$F/same/short_final.weights" ] && ended same $EX_REFUSED &&
       grep -q "taking over the lock of backup folder $F/same from an earlier run of this job (job slurm:777, host $host, pid $pid; its lease renewed [0-9.]* s ago); its flock is still held" <<< "$msg"; then
        ok "the same Slurm job takes over a held lock in ${took}s: ${msg//$F\//}; job 778 exits $EX_REFUSED: ${other//$F\//}"
    else bad "same job: job 778 $(rcs "$F/same-other" 2) '$other'; job 777 $(rcs "$F/same-2" 2) '$msg'; holder $hrc; $(cat "$F"/same-2.err.* | head -2)"; fi
    stop_holder same
fi

# A shim that makes flock() succeed without locking (NFS local_lock=flock
# across hosts, Lustre's localflock): only the lease guards the folder.
# With RACE_BARRIER=DIR the first pwrite() into a .darknet_mn.lock also
# waits (10 s at most) until two processes reached it: both have read the
# lock before either writes, the race the lease must settle.
noflock=$F/noflock.so
cat > "$F/noflock.c" << 'EOF'
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>
int flock(int fd, int op) { (void)fd; (void)op; return 0; }
/* NOFLOCK_NFS=1: every folder reported as NFS's (where flock may be node-local). */
int statfs(const char *path, struct statfs *buf)
{
    int (*real)(const char *, struct statfs *) = (int (*)(const char *, struct statfs *))dlsym(RTLD_NEXT, "statfs");
    int r = real(path, buf);
    if (r == 0 && getenv("NOFLOCK_NFS")) buf->f_type = 0x6969;
    return r;
}
static int arrivals(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    static int met;
    ssize_t (*real)(int, const void *, size_t, off_t) = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
    const char *dir = getenv("RACE_BARRIER");
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t k = readlink(link, path, sizeof path - 1);
    path[k > 0 ? k : 0] = 0;
    if (dir && !met && strstr(path, ".darknet_mn.lock")) {
        met = 1;
        char me[4200];
        snprintf(me, sizeof me, "%s/%d", dir, (int)getpid());
        close(open(me, O_CREAT | O_WRONLY, 0644));
        for (int i = 0; i < 400 && arrivals(dir) < 2; ++i) usleep(25000);
    }
    return real(fd, buf, n, off);
}
EOF
cc -shared -fPIC -o "$noflock" "$F/noflock.c" -ldl || bad "cannot build the flock shim"

# 5. flock a no-op in both jobs: a live holder with lock_lease=2, running
#    3 s (past its lease, so only renewals keep it fresh), refuses the
#    second job, exit 73 on every rank; the folder holds the holder's log only.
if want noflock; then
    data nof
    holder nof "$F/hold2.cfg" LD_PRELOAD="$noflock"
    pid=$(cat "$F/nof-h.pid.0")
    sleep 3
    second "$F/nof-2" nof 2 LD_PRELOAD="$noflock"
    msg=$(said "$F/nof-2" "in use by another job")
    files=$(ls "$F/nof" | tr '\n' ' ')
    if all_rc "$F/nof-2" 2 $EX_REFUSED && [ "$files" = "hold2_log.csv " ] &&
       grep -q "in use by another job (host $host, pid $pid; its lease renewed [01]\.[0-9] s ago, stale after 2 s)" <<< "$msg"; then
        ok "flock a no-op, a live holder renewing its 2 s lease: exit $EX_REFUSED on every rank in ${took}s: ${msg//$F\//}"
    else bad "flock a no-op: exit $(rcs "$F/nof-2" 2); files '$files'; '$msg'; $(cat "$F"/nof-2.err.* | head -2)"; fi
    stop_holder nof
fi

# 6. flock a no-op on NFS (the shim's statfs says so), a stale lock of a
#    gone host (or, race-released, one a finished job released: no
#    takeover to say, issue 50), and two jobs
#    that both read it before either writes (RACE_BARRIER): one holds the
#    folder (still running after 10 s), the other exits 73 at start, having
#    lost the race, before its first iteration.
race() {   # race NAME STATE
    local name=$1 state=$2 j i mp rcs_="" why taken
    data "$name"
    if [ "$state" = released ]; then fake_lock "$F/$name/$LOCK" node-b 4242 - 5 60 released
    else fake_lock "$F/$name/$LOCK" node-b 4242 - 120 60; fi
    mkdir -p "$F/$name-barrier"
    for j in a b; do
        bg_ranks "$F/$name-$j" 1 env LD_PRELOAD="$noflock" NOFLOCK_NFS=1 RACE_BARRIER="$F/$name-barrier" "$PROG" classifier train "$F/$name.data" "$F/hold.cfg"
    done
    for j in a b; do
        mp=$(cat "$F/$name-$j.mpiexec")
        for ((i = 0; i < 100; ++i)); do kill -0 "$mp" 2> /dev/null || break; sleep 0.1; done
        if kill -0 "$mp" 2> /dev/null; then rcs_="$rcs_ running"; else wait "$mp"; rcs_="$rcs_ $?"; fi
    done
    why=$(cat "$F"/$name-[ab].err | grep -a -m1 "darknet-mn: rank 0")
    taken=$(cat "$F"/$name-[ab].out | grep -a -c "taking over the lock of backup folder $F/$name from a job (host node-b, pid 4242)")
    [ "$state" = released ] && taken=$((taken + 2))   # a released lock is free: nothing taken over, nothing said
    if [[ $rcs_ == " running $EX_REFUSED" || $rcs_ == " $EX_REFUSED running" ]] && [ "$taken" = 2 ] &&
       [ "$(cat "$F"/$name-[ab].out | grep -a -c '^1: loss')" = 1 ] &&
       grep -q "backup folder $F/$name was taken at the same moment by another job (host $host, pid [0-9]*); lock file" <<< "$why"; then
        ok "two jobs taking over one $state lock at once, flock a no-op: both wrote their record, one holds it, the other exits $EX_REFUSED before its first iteration: ${why//$F\//}"
    else bad "$name: statuses$rcs_ (a, b), $taken took it over, $(cat "$F"/$name-[ab].out | grep -a -c '^1: loss') first iterations; $(cat "$F"/$name-[ab].err | grep -a 'darknet-mn' | head -3)"; fi
    for j in a b; do rank_signal KILL "$F/$name-$j" 0; wait "$(cat "$F/$name-$j.mpiexec")" 2> /dev/null; done
}
if want race; then race race stale; fi
if want race-released; then race race-released released; fi

# 7. mn_rerun.sh: each invocation exports a new MN_RERUN_ID, passed on by
#    mpiexec -x; its first attempt's rank 0 killed at iteration 30 while a
#    process takes over the flock at once (it lingers, as on NFS): the second
#    attempt is the same job, takes the lock over and finishes from the
#    checkpoint.
if want rerun; then
    id1=$(scripts/mn_rerun.sh --max-restarts 0 -- sh -c 'echo "$MN_RERUN_ID"' | grep -v '^mn_rerun:')
    id2=$(scripts/mn_rerun.sh --max-restarts 0 -- sh -c 'echo "$MN_RERUN_ID"' | grep -v '^mn_rerun:')
    data rerun
    cfg "$F/rr.cfg" 3000 checkpoint_interval=10
    o=$F/rerun
    timeout 120 scripts/mn_rerun.sh --max-restarts 1 -- mpiexec -n 2 \
        sh -c "echo \$\$ > $o.pid.\$OMPI_COMM_WORLD_RANK; exec $PROG classifier train $F/rerun.data $F/rr.cfg" > "$o.out" 2> "$o.err" &
    rr=$!
    wait_iter "$o" 30
    ( flock -x 9 && exec sleep 100 ) 9<> "$F/rerun/$LOCK" &
    fh=$!
    sleep 0.2
    rank_signal KILL "$o" 0
    wait "$rr"; rc=$?
    kill "$fh"
    msg=$(grep -a -m1 "taking over" "$o.out")
    if [ -n "$id1" ] && [ -n "$id2" ] && [ "$id1" != "$id2" ] && [ "$rc" = 0 ] && [ -f "$F/rerun/rr_final.weights" ] &&
       grep -q "attempt 1 of 2 starts: mpiexec -x MN_RERUN_ID -n 2" "$o.out" &&
       grep -q "from an earlier run of this job (job mn_rerun:[^ ]*, host $host, pid [0-9]*; its lease renewed [0-9.]* s ago); its flock is still held" <<< "$msg" &&
       grep -q "darknet-mn: resuming from checkpoint" "$o.out"; then
        ok "mn_rerun.sh: MN_RERUN_ID $id1, then $id2; attempt 2 after rank 0 was killed with its flock lingering: ${msg//$F\//}; finished"
    else bad "mn_rerun.sh: ids '$id1' '$id2', status $rc; '$msg'; $(grep -a 'mn_rerun:' "$o.out" | tail -3); $(grep -a 'darknet-mn: rank 0' "$o.err" | head -2)"; fi
    # Every name of Open MPI's launcher passes the identity on (a remote
    # rank 0 without it would be refused by a lingering lock, 73).
    for l in mpiexec mpirun orterun mpiexec.openmpi mpirun.openmpi; do
        out=$(timeout 60 scripts/mn_rerun.sh --max-restarts 0 -- "$l" -n 1 sh -c 'echo "id=$MN_RERUN_ID"' 2>&1)
        if grep -q "attempt 1 of 1 starts: $l -x MN_RERUN_ID -n 1" <<< "$out" && grep -q '^id=.\+' <<< "$out"; then ok "mn_rerun.sh -- $l: passes MN_RERUN_ID with -x"
        else bad "mn_rerun.sh -- $l: $(head -3 <<< "$out" | tr '\n' '|')"; fi
    done
fi
finish
