#!/usr/bin/env bash
# A job that carries on by itself under mpiexec (scripts/mn_rerun.sh), on
# the two-host testbed (scripts/testbed.sh: mnA, mnB, 2 ranks each):
#  - host B's ranks killed at iteration 12 of 40, B still up: the job is
#    rerun on both hosts, resumes from the last checkpoint, and its final weights
#    equal an uninterrupted run's (deterministic=1) bit for bit;
#  - host B gone (off the network, then its ranks killed): collective_timeout
#    ends the job on host A, and the rerun
#    leaves B out, resumes from the last checkpoint on host A's 2 ranks, says what
#    changed (ranks, global batch), and finishes;
#  - host B silent (link down 45 s, its ranks alive): rank 0 names the
#    stalled allreduce after collective_timeout, mpiexec returns once B
#    answers again, and the rerun finishes;
#  - the exit statuses that end a job are not rerun; --max-restarts bounds
#    the reruns; host lists as users write them.
# What each failure cost (seconds from the kill to the first iteration of
# the rerun, iterations done twice) is printed with each case.
# Run by make test-cluster (TEST_BIN set there). Needs root (ip netns).
. "$(dirname "$0")/../helpers/lib.sh"
suite_folder rerun
R=$G
tb=scripts/testbed.sh
trap '$tb down > /dev/null 2>&1' EXIT
AGENT="$(pwd)/$tb rsh"
HOSTS=10.77.0.1:2,10.77.0.2:2
MPIARGS=(mpiexec --mca plm_rsh_agent "$AGENT" --mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24
         --mca btl self,vader,tcp --bind-to none --oversubscribe -x PATH --wdir "$(pwd)")

# job NAME [K]: a classifier cfg and data of its own: 40 updates of 4 x 64
# images, deterministic, a checkpoint every K (5). Its batch norm's running
# statistics are each rank's own (no sync_bn) and the final weights hold
# rank 0's, so a rerun ends as the straight run only if it resumed from
# rank 0's; on fewer ranks, only if rank 0 keeps those of each rank it
# stands for apart.
job() {
    local bn=('[convolutional]' batch_normalize=1 '[maxpool]' '[connected]' '[softmax]')
    mn_cfg "$R/$1.cfg" batch=64 max_batches=40 burn_in=0 -policy -steps -scales "${bn[@]}" \
        -- deterministic=1 shuffle=0 checkpoint_interval=${2:-5} collective_timeout=10
    printf 'classes=10\ntrain=%s/train.list\nlabels=%s/labels.txt\nbackup=%s/%s\n' "$D" "$D" "$R" "$1" > "$R/$1.data"
    mkdir -p "$R/$1"
}
# wait_line FILE PATTERN SECONDS: until a line of FILE matches.
wait_line() {
    local i
    for ((i = 0; i < $3 * 20; ++i)); do grep -q "$2" "$1" 2> /dev/null && return 0; sleep 0.05; done
    return 1
}
# kill_host NS [gone]: kill -9 every process of the host (their sockets
# close, so the peers see it at once); gone: the host first drops off the
# network, as at a power loss, and nothing tells the peers: darknet-mn's
# collective_timeout (10 s here) ends the job.
kill_host() {
    if [ "${2:-}" = silent ]; then   # off the network, its processes alive, back 45 s later
        ip link set "v$1" down
        (sleep 45; ip link set "v$1" up 2> /dev/null) &
        return 0
    fi
    [ "${2:-}" = gone ] && ip link del "v$1"
    ip netns pids "$1" 2> /dev/null | xargs -r kill -9
    [ "${2:-}" = gone ] && ip netns del "$1"
    return 0
}

# same_weights NAME: NAME's final weights against the uninterrupted run's;
# says how in $said. Bit for bit where the resumed checkpoint holds rank 0's
# running statistics: rank 0 wrote that update (its rescue, or a periodic
# checkpoint that no rescue names). A rank whose allreduce completed when
# rank 0's did not (the cut fell inside it) writes the newer update alone,
# with its own statistics: then every byte but those is equal (the batch-norm
# layer's rolling mean and variance: floats 16-31 after the 20-byte header,
# its 8 filters' biases and scales first).
same_weights() {
    local a="$R/$1/$1_final.weights" b="$R/straight/straight_final.weights" k w
    k=$(grep -o 'resuming from checkpoint .*ckpt-[0-9]*' "$R/$1.out" | sed 's/.*ckpt-//')
    [ -n "$k" ] && [ -s "$a" ] || { said="no resume or no final weights"; return 1; }
    w=$(grep -o "rank [0-9]* (mn.): ending: the last completed update, iteration $k, written to" "$R/$1.err" | cut -d' ' -f2 | head -1)
    if grep -q "rank 0 (mnA): ending: the last completed update, iteration $k, written to" "$R/$1.err" || [ -z "$w" ]; then
        said="final weights = 40 straight"
        cmp -s "$a" "$b"
    else
        said="final weights = 40 straight but the running statistics, rank $w's (rank 0 did not complete update $k)"
        [ "$(stat -c %s "$a")" = "$(stat -c %s "$b")" ] && cmp -l "$a" "$b" | awk '$1 < 85 || $1 > 148 { d = 1 } END { exit d }'
    fi
}

if ! $tb up > "$R/up.log" 2>&1; then bad "testbed up: $(tail -2 "$R/up.log")"; finish; fi
job straight 5
timeout 300 "${MPIARGS[@]}" -n 4 --host $HOSTS ./darknet_mn classifier train "$R/straight.data" "$R/straight.cfg" \
    > "$R/straight.out" 2> "$R/straight.err" || bad "the uninterrupted run failed: $(tail -2 "$R/straight.err")"

# case NAME HOW [K]: the rerun job, host B killed at iteration 12
# (HOW: back or gone), a checkpoint every K iterations (5).
case_run() {
    local name=$1 how=$2 t_kill t_first
    said=
    job "$name" "${3:-5}"
    timeout 400 scripts/mn_rerun.sh --max-restarts 2 --probe-timeout 5 --min-hosts 1 --host $HOSTS -- "${MPIARGS[@]}" \
        ./darknet_mn classifier train "$R/$name.data" "$R/$name.cfg" > "$R/$name.out" 2> "$R/$name.err" &
    local pid=$!
    if ! wait_line "$R/$name.out" '^12: loss' 120; then bad "$name: never reached iteration 12"; kill $pid; wait $pid; return 1; fi
    t_kill=$(date +%s.%N)
    kill_host mnB $([ "$how" != back ] && echo "$how")
    local i
    for ((i = 0; i < 2400; ++i)); do   # the rerun's first iteration, after its checkpoint
        awk '/attempt 2 of 3 starts/ { on = 1 } on && /^[0-9]+: loss/ { f = 1 } END { exit !f }' "$R/$name.out" && break
        sleep 0.05
    done
    t_first=$(date +%s.%N)
    wait $pid
    local rc=$?
    local cost
    cost=$(awk -v a="$t_kill" -v b="$t_first" 'BEGIN { printf "%.1f", b - a }')
    local lost unprinted
    read -r lost unprinted <<< "$(reruns_count "$R/$name.out" 40)"
    echo "     $name: $cost s from the kill to the rerun's first iteration; $lost iterations done twice ($unprinted completed unprinted)"
    echo "$name $cost $lost" >> "$R/costs"
    return $rc
}

case_run back back; rc=$?
if [ $rc = 0 ] && grep -q '^mn_rerun: .*attempt 1 ended with exit status [1-9][0-9]*$' "$R/back.out" &&
   grep -q "resuming from checkpoint .*ckpt-\([0-9]*\): iteration \1 of max_batches 40, seen [0-9]* (written by 4 ranks, as now)" "$R/back.out" &&
   same_weights back; then
    ok "host B's ranks killed at iteration 12 of 40, B back: rerun on both hosts, $(grep -o 'resuming from checkpoint .*ckpt-[0-9]*' "$R/back.out" | sed 's/ .*ckpt-/ /'), $said"
else bad "killed and rerun: exit $rc, ${said:-}; $(grep -E 'mn_rerun|resuming' "$R/back.out" | head -4); $(tail -2 "$R/back.err")"; fi

# The same without a checkpoint due (checkpoint_interval=1000): host A's
# ranks, sent SIGTERM by Open MPI when B's daemon is lost, write the last
# update they completed (rescue=1); the rerun resumes there, repeating no
# iteration, and ends bit for bit as the straight run.
case_run nockpt back 1000; rc=$?
if [ $rc = 0 ] && [ "$(tail -1 "$R/costs" | cut -d' ' -f3)" = 0 ] &&
   grep -q "ending: the last completed update, iteration \([0-9]*\), written to $R/nockpt/nockpt.ckpt-" "$R/nockpt.err" &&
   grep -q "resuming from checkpoint .*nockpt.ckpt-[0-9]*: iteration [0-9]* of max_batches 40" "$R/nockpt.out" &&
   same_weights nockpt; then
    ok "host B killed at iteration 12, no checkpoint due: host A's ranks wrote the last update ($(grep -o 'resuming from checkpoint .*ckpt-[0-9]*' "$R/nockpt.out" | sed 's/ .*ckpt-/ /')), no iteration done twice, $said"
else bad "host B killed without a checkpoint due: exit $rc, ${said:-}, $(tail -1 "$R/costs") $(grep -h 'ending:\|resuming' "$R/nockpt.err" "$R/nockpt.out" | head -3)"; fi

# Host B silent (its link down 45 s, its ranks alive and waiting): host
# A's ranks end after collective_timeout (10 s), rank 0 naming the stalled
# collective (the gradient's or the loss's, as the cut falls); Open MPI's mpiexec itself returns only once it reaches B's
# daemon again (B back, or TCP giving up: about 15 minutes by Linux's
# defaults), and mn_rerun.sh then reruns the job, which resumes and ends
# with the weights of the uninterrupted run.
case_run silent silent; rc=$?
if [ $rc = 0 ] && grep -q "rank 0 (mnA): [a-z_ -]* \(at\|after\) iteration [0-9]*\('s gradient allreduce\)\?\(: rank.* did not arrive within 10 s\| did not complete in time (collective_timeout=10 s)\)" "$R/silent.err" &&
   grep -q '^mn_rerun: .*attempt 1 ended with exit status 75' "$R/silent.out" &&
   grep -q "resuming from checkpoint .*silent.ckpt-" "$R/silent.out" &&
   same_weights silent; then
    ok "host B silent from iteration 12 of 40 (link down 45 s, ranks alive): $(grep -m1 -o 'rank 0 (mnA): [a-z_ -]* \(at\|after\) iteration [0-9]*[^;]*' "$R/silent.err" | cut -c1-110); mpiexec returned once B answered (exit 75), rerun, $said"
else bad "host silent: exit $rc, ${said:-}; $(grep -h 'did not\|ending:' "$R/silent.err" | head -5)"; fi
wait   # B's link back
case_run gone gone 5; rc=$?
if [ $rc = 0 ] && grep -q '^mn_rerun: .*host 10.77.0.2 does not answer' "$R/gone.out" "$R/gone.err" &&
   grep -q '^mn_rerun: .*now on 10.77.0.1:2 (2 ranks), was 10.77.0.1:2,10.77.0.2:2' "$R/gone.out" &&
   grep -q "the checkpoint's global batch 256 kept on 2 ranks: subdivisions 1 -> 2 .*; batch norm's running statistics kept apart for each rank a rank stands for" "$R/gone.out" &&
   grep -q "resuming from checkpoint .*ckpt-\([0-9]*\): iteration \1 of max_batches 40, written by 4 ranks (global batch 256); now 2 ranks (global batch 256)" "$R/gone.out" &&
   "$TEST_BIN/mn_wcmp" "$R/gone/gone_final.weights" "$R/straight/straight_final.weights" 1e-4 > "$R/gone.cmp" &&
   [ -s "$R/gone/gone_final.weights" ] && grep -q '^40: loss' "$R/gone.out"; then
    ok "host B gone at iteration 12 of 40: rerun on host A's 2 ranks with the global batch kept (subdivisions 2) and batch norm's statistics kept apart, finished with the uninterrupted run's weights ($(cat "$R/gone.cmp"))"
else bad "host gone: exit $rc; $(grep -E 'mn_rerun|resuming' "$R/gone.out" "$R/gone.err" | head -6)"; fi
wait
$tb down > /dev/null 2>&1

# Not rerun: a user error (EX_USER), and no more than --max-restarts reruns
# of a job that fails each time (here a command exiting 75, as the watchdog does).
job usererr
sed -i 's/^batch=.*/batch=0/' "$R/usererr.cfg"
timeout 60 scripts/mn_rerun.sh --max-restarts 3 -- mpiexec -n 2 ./darknet_mn classifier train "$R/usererr.data" "$R/usererr.cfg" > "$R/usererr.out" 2>&1
rc=$?
if [ $rc = $EX_USER ] && [ "$(grep -c 'attempt [0-9] of 4 starts' "$R/usererr.out")" = 1 ] && grep -q "exit status $EX_USER is a user error (cfg, data, weights): not rerun" "$R/usererr.out"; then
    ok "a user error is not rerun: $(grep -m1 'not rerun' "$R/usererr.out" | cut -d' ' -f3-)"
else bad "user error: exit $rc, $(grep -c 'attempt [0-9] of 4 starts' "$R/usererr.out") attempts"; fi
timeout 60 scripts/mn_rerun.sh --max-restarts 2 -- sh -c 'exit 75' > "$R/bounded.out" 2>&1
rc=$?
if [ $rc = 75 ] && [ "$(grep -c 'attempt [0-9] of 3 starts' "$R/bounded.out")" = 3 ] && grep -q 'no restarts left (--max-restarts 2)' "$R/bounded.out"; then
    ok "--max-restarts 2: 3 attempts, then the job's own status (75)"
else bad "--max-restarts: exit $rc, $(grep -c 'attempt [0-9] of 3 starts' "$R/bounded.out") attempts"; fi
# Each status of the contract that ends the job (docs/user-guide.md, "Exit statuses").
for st in $EX_USAGE $EX_REFUSED $EX_FAULT; do
    timeout 60 scripts/mn_rerun.sh --max-restarts 2 -- sh -c "exit $st" > "$R/st$st.out" 2>&1
    rc=$?
    if [ $rc = $st ] && [ "$(grep -c 'attempt [0-9] of 3 starts' "$R/st$st.out")" = 1 ]; then ok "exit status $st is not rerun: $(grep -m1 'not rerun' "$R/st$st.out" | cut -d' ' -f3-)"
    else bad "exit status $st: mn_rerun exit $rc, $(grep -c 'attempt [0-9] of 3 starts' "$R/st$st.out") attempts"; fi
done

# scripts/darknet_mn.sbatch's statuses, with srun, scontrol, squeue and
# scancel stubbed (no cluster): 64, 65, 70, 73, 74 and 127 end the job
# after its first run, as docs/user-guide.md's table says, and so does a
# task srun names out of memory (137, "Out Of Memory"); 75, srun's own 1 (a
# step that did not start) and a 137 without that word run again,
# MAX_RESTARTS times.
stub=$R/stub && mkdir -p "$stub"
# srun: the batch script's probe (a task printing its node's name) answers n1.
printf '#!/bin/sh\ncase "$*" in *SLURMD_NODENAME*) echo n1; exit 0 ;; esac\n[ -z "$STUB_ERR" ] || echo "$STUB_ERR" >&2\n[ -z "$STUB_ARGS" ] || echo "$*" > "$STUB_ARGS"\nexit "$STUB_RC"\n' > "$stub/srun"
printf '#!/bin/sh\necho n1\n' > "$stub/scontrol"
cp "$stub/scontrol" "$stub/squeue"; printf '#!/bin/sh\n' > "$stub/scancel"
printf '#!/bin/sh\necho "sbatch $*" >> "%s/sbatch.calls"\n' "$R" > "$stub/sbatch"; chmod +x "$stub"/*
mkdir -p "$R/sb-backup"
printf 'classes=10\ntrain = %s/train.list\nnames=%s/labels.txt\nbackup=%s/sb-backup\n' "$D" "$D" "$R" > "$R/sb.data"
export MN=$PROG DATA=$R/sb.data
got=""
for st in $EX_USAGE $EX_USER $EX_FAULT $EX_REFUSED 74 127 $EX_RERUN 1 137 oom; do
    err=; [ $st = oom ] && err="srun: error: n1: task 0: Out Of Memory"
    PATH=$stub:$PATH STUB_RC=${st/oom/137} STUB_ERR=$err ENVIRONMENT=BATCH SLURM_JOB_ID=1 SLURM_JOB_NUM_NODES=1 SLURM_NTASKS=1 SLURM_JOB_NODELIST=n1 MAX_RESTARTS=2 \
        RERUN_WAIT=1 CFG=/dev/null timeout 60 bash scripts/darknet_mn.sbatch > "$R/stub-$st.out" 2>&1
    got="$got $st:$?x$(grep -c 'ended with status' "$R/stub-$st.out")"
done
want=" 64:64x1 65:65x1 70:70x1 73:73x1 74:74x1 127:127x1 75:75x3 1:1x3 137:137x3 oom:137x1"
waits=$(grep -o 'rerun in [0-9]* s' "$R/stub-75.out" | cut -d' ' -f3 | paste -sd,)
if [ "$got" = "$want" ] && [ "$waits" = 1,2 ] &&
   grep -q "exit status 137: out of memory on a node (srun: srun: error: n1: task 0: Out Of Memory): not rerun" "$R/stub-oom.out"; then
    ok "darknet_mn.sbatch, srun stubbed (status:exit x runs):$got: 64, 65, 70, 73, 74, 127 and an out-of-memory kill end the job, 75, srun's 1 and another 137 run 3 times (MAX_RESTARTS=2), waiting 1 s then 2 s before the reruns (RERUN_WAIT=1)"
else bad "darknet_mn.sbatch's statuses (status:exit x runs):$got, want$want; waits before the reruns: $waits, want 1,2"; fi

# A node lost for good, with MIN_NODES=1: Slurm launches a step over several
# nodes whole, so a probe step over n1 and the lost n2 hangs past the probe's
# timeout and n1 never prints (the stub's srun does so); the job must still
# go on with n1 alone. The training step ends 75 once, then 0.
lost=$R/stub-lost && mkdir -p "$lost" && cp "$stub"/* "$lost/"
cat > "$lost/srun" <<'STUB'
#!/bin/sh
case "$*" in
    *SLURMD_NODENAME*) case " $* " in *" -w n1 "*) echo n1; exit 0 ;; esac; sleep 30; exit 1 ;;
esac
[ -f "$STUB_RUNS" ] && exit 0
: > "$STUB_RUNS"; exit 75
STUB
printf '#!/bin/sh
[ "$1" = show ] && printf "n1\nn2\n"
exit 0
' > "$lost/scontrol"
chmod +x "$lost"/*
t0=$SECONDS
PATH=$lost:$PATH STUB_RUNS=$R/stub-lost.runs ENVIRONMENT=BATCH SLURM_JOB_ID=1 SLURM_JOB_NUM_NODES=2 SLURM_NTASKS=2 SLURM_JOB_NODELIST=n1,n2 \
    MIN_NODES=1 PROBE_TIMEOUT=3 RERUN_WAIT=1 CFG=/dev/null timeout 60 bash scripts/darknet_mn.sbatch > "$R/stub-lost.out" 2>&1; rc=$?
if [ $rc = 0 ] && grep -q 'going on with 1 of 2 nodes (n1; MIN_NODES=1)' "$R/stub-lost.out" &&
   grep -q 'run 2, on 1 node(s) (n1)' "$R/stub-lost.out" && ! grep -q requeue "$R/stub-lost.out"; then
    ok "darknet_mn.sbatch, n2 lost and its probe hanging: n1 answers alone, the job goes on with 1 of 2 nodes and ends 0 ($((SECONDS - t0)) s, PROBE_TIMEOUT=3)"
else bad "darknet_mn.sbatch with n2 lost (exit $rc): $(grep -E 'nodes|run [0-9]' "$R/stub-lost.out" | tr '\n' '|' | cut -c1-300)"; fi

# The settings in darknet_mn.env beside the job, read by a run from a
# shell that exported nothing (a resubmission from a new login): srun gets
# the file's program, files and flags; the file's FLAGS win over the
# shell's; a SETTINGS file that is not there is refused (64).
PA=$(realpath "$PROG") RA=$(realpath "$R")
mkdir -p "$R/env"
printf 'MN=%s\nDATA=%s\nCFG=/dev/null\nFLAGS="-dont_show -map"\nSRUN_MPI=pmi2   # a comment\nMAX_RESTARTS=0\n' "$PA" "$RA/sb.data" > "$R/env/darknet_mn.env"
fresh() { (cd "$R/env" && env -i PATH="$stub:/usr/bin:/bin" HOME="$HOME" STUB_RC=0 STUB_ARGS="$RA/env/srun.args" ENVIRONMENT=BATCH \
    SLURM_JOB_ID=1 SLURM_JOB_NUM_NODES=1 SLURM_NTASKS=1 SLURM_JOB_NODELIST=n1 "$@" timeout 60 bash "$OLDPWD/scripts/darknet_mn.sbatch"); }
fresh FLAGS=-clear > "$R/env/run.out" 2>&1
rc=$?
fresh SETTINGS=none.env > "$R/env/none.out" 2>&1
rc2=$?
if [ $rc = 0 ] && [ "$(cat "$R/env/srun.args" 2> /dev/null)" = "--mpi=pmi2 --kill-on-bad-exit=1 -N 1 -n 1 --ntasks-per-node=1 -w n1 $PA detector train $RA/sb.data /dev/null -dont_show -map" ] &&
   grep -q "^darknet-mn: settings from $RA/env/darknet_mn.env" "$R/env/run.out" &&
   [ $rc2 = $EX_USAGE ] && grep -q "cannot read the settings file none.env (SETTINGS=)" "$R/env/none.out"; then
    ok "darknet_mn.sbatch from a shell that exported nothing: srun got darknet_mn.env's settings ($(cut -d' ' -f7- "$R/env/srun.args")), over the shell's FLAGS; SETTINGS=none.env refused, 64"
else bad "darknet_mn.sbatch's settings file: status $rc, srun got '$(cat "$R/env/srun.args" 2> /dev/null)'; SETTINGS=none.env: $rc2; $(tail -2 "$R/env/run.out")"; fi

# Run as a program (no SLURM_JOB_ID), it checks the training's files before
# it submits itself: each missing one named, 65 and nothing submitted; all
# there, sbatch gets the options given and the script.
rm -f "$R/sbatch.calls"
sed 's/^names=.*/names=labels.none/' "$R/sb.data" > "$R/sb-bad.data"
PATH=$stub:$PATH DATA=$R/sb-bad.data CFG=$R/none.cfg bash scripts/darknet_mn.sbatch --time=5 > "$R/sb-check.out" 2>&1
rc=$?
PATH=$stub:$PATH CFG=/dev/null bash scripts/darknet_mn.sbatch --time=5 -N 2 > "$R/sb-submit.out" 2>&1
rc2=$?
if [ $rc = $EX_USER ] && grep -q "cannot read $R/none.cfg" "$R/sb-check.out" && grep -q "sb-bad.data: names=labels.none cannot be read" "$R/sb-check.out" &&
   [ $rc2 = 0 ] && [ "$(cat "$R/sbatch.calls")" = "sbatch --time=5 -N 2 scripts/darknet_mn.sbatch" ]; then
    ok "darknet_mn.sbatch run before the queue: a missing cfg and names= named, exit 65, nothing submitted; with its files there it submits itself ($(cat "$R/sbatch.calls"))"
else bad "darknet_mn.sbatch's check before the queue: exit $rc, then $rc2; $(cat "$R/sb-check.out" "$R/sbatch.calls" 2> /dev/null | head -5)"; fi
unset MN DATA

# Host lists as users write them, on this machine (a launch agent that runs
# the command here, so that every host answers): a host without slots has
# one; Open MPI's launcher by any name or path gets -n and --host; anything
# else, or a command with its own -n, is refused with the reason.
printf '#!/bin/sh\nshift; exec "$@"\n' > "$R/agent"; chmod +x "$R/agent"
hostrun() {   # hostrun NAME HOSTS LAUNCHER ARGS...: mn_rerun's output in R/NAME.out, its status in rc
    local name=$1 h=$2; shift 2
    timeout 60 scripts/mn_rerun.sh --max-restarts 0 --probe-timeout 5 --host "$h" -- "$@" > "$R/$name.out" 2>&1
    rc=$?
}
mpx=$(command -v mpiexec)
hostrun h1 localhost mpirun --mca plm_rsh_agent "$R/agent" ./darknet_mn info
if [ $rc = 0 ] && grep -q "starts: mpirun -x MN_RERUN_ID -n 1 --host localhost:1 " "$R/h1.out" && grep -q '^ranks: 1 rank on 1 node' "$R/h1.out"; then
    ok "--host localhost (no slots) with mpirun: 1 rank ($(grep -m1 'starts:' "$R/h1.out" | sed 's/.*starts: //' | cut -c1-60))"
else bad "--host without slots: exit $rc; $(grep -m2 'mn_rerun\|ranks:' "$R/h1.out")"; fi
hostrun h2 localhost:2 "$mpx" --mca plm_rsh_agent "$R/agent" ./darknet_mn info
if [ $rc = 0 ] && grep -q "starts: $mpx -x MN_RERUN_ID -n 2 --host localhost:2 " "$R/h2.out" && grep -q '^ranks: 2 ranks on 1 node' "$R/h2.out"; then
    ok "--host localhost:2 with $mpx (a full path): 2 ranks"
else bad "--host with a full path: exit $rc; $(grep -m2 'mn_rerun\|ranks:' "$R/h2.out")"; fi
hostrun h3 localhost:2 mpiexec.mpich ./darknet_mn info
hostrun h4 localhost:2 mpiexec -n 2 ./darknet_mn info; rc4=$rc
if [ $rc = 2 ] && [ $rc4 = 2 ] && grep -q "'mpiexec.mpich' is not Open MPI's mpiexec or mpirun" "$R/h3.out" &&
   grep -q "'-n' in the command: with --host or --hostfile the ranks and hosts are the script's" "$R/h4.out" &&
   ! grep -q 'starts' "$R/h3.out" "$R/h4.out"; then
    ok "--host with another launcher, or with the command's own -n: refused (2) before anything starts: $(cut -d' ' -f2- "$R/h3.out" | cut -c1-90)"
else bad "--host refusals: exit $rc4/$rc; $(cat "$R/h3.out" "$R/h4.out" | head -3)"; fi
hostrun h5 "localhost:x" mpiexec ./darknet_mn info
if [ $rc = 2 ] && grep -q "host entry 'localhost:x' is not HOST or HOST:SLOTS" "$R/h5.out"; then ok "--host localhost:x: refused naming the entry"
else bad "--host localhost:x: exit $rc; $(head -2 "$R/h5.out")"; fi
finish rerun
