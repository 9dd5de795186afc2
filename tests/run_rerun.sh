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
#  - a user error is not rerun; --max-restarts bounds the reruns.
# What each failure cost (seconds from the kill to the first iteration of
# the rerun, iterations done twice) is printed with each case.
# Run by tests/run.sh (T, D, TEST_BIN set there). Needs root (ip netns).
. "$(dirname "$0")/lib.sh"
suite_folder rerun
R=$G
tb=scripts/testbed.sh
trap '$tb down > /dev/null 2>&1' EXIT
AGENT="$(pwd)/$tb rsh"
HOSTS=10.77.0.1:2,10.77.0.2:2
MPIARGS=(mpiexec --mca plm_rsh_agent "$AGENT" --mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24
         --mca btl self,vader,tcp --bind-to none --oversubscribe -x PATH --wdir "$(pwd)")

# job NAME: a classifier cfg and data of its own: 40 updates of 4 x 64
# images, deterministic, a checkpoint every 5.
job() {
    mn_cfg "$R/$1.cfg" batch=64 max_batches=40 burn_in=0 -policy -steps -scales -- deterministic=1 shuffle=0 checkpoint_interval=5 collective_timeout=10
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
    [ "${2:-}" = gone ] && ip link del "v$1"
    ip netns pids "$1" 2> /dev/null | xargs -r kill -9
    [ "${2:-}" = gone ] && ip netns del "$1"
    return 0
}

if ! $tb up > "$R/up.log" 2>&1; then bad "testbed up: $(tail -2 "$R/up.log")"; finish; fi
job straight
timeout 300 "${MPIARGS[@]}" -n 4 --host $HOSTS ./darknet_mn classifier train "$R/straight.data" "$R/straight.cfg" \
    > "$R/straight.out" 2> "$R/straight.err" || bad "the uninterrupted run failed: $(tail -2 "$R/straight.err")"

# case NAME HOW: the rerun job, host B killed at iteration 12 (HOW: back or gone).
case_run() {
    local name=$1 how=$2 t_kill t_first
    job "$name"
    timeout 400 scripts/mn_rerun.sh --max-restarts 2 --probe-timeout 5 --host $HOSTS -- "${MPIARGS[@]}" \
        ./darknet_mn classifier train "$R/$name.data" "$R/$name.cfg" > "$R/$name.out" 2> "$R/$name.err" &
    local pid=$!
    if ! wait_line "$R/$name.out" '^12: loss' 120; then bad "$name: never reached iteration 12"; kill $pid; wait $pid; return 1; fi
    t_kill=$(date +%s.%N)
    kill_host mnB $([ "$how" = gone ] && echo gone)
    local i
    for ((i = 0; i < 4800; ++i)); do   # the rerun's first iteration, after its checkpoint
        awk '/attempt 2 of 3 starts/ { on = 1 } on && /^[0-9]+: loss/ { f = 1 } END { exit !f }' "$R/$name.out" && break
        sleep 0.05
    done
    t_first=$(date +%s.%N)
    wait $pid
    local rc=$?
    local cost
    cost=$(awk -v a="$t_kill" -v b="$t_first" 'BEGIN { printf "%.1f", b - a }')
    local lost=$(( $(grep -c '^[0-9]*: loss' "$R/$name.out") - 40 ))
    echo "     $name: $cost s from the kill to the rerun's first iteration; $lost iterations done twice"
    echo "$name $cost $lost" >> "$R/costs"
    return $rc
}

case_run back back; rc=$?
if [ $rc = 0 ] && grep -q '^mn_rerun: .*attempt 1 ended with exit status [1-9][0-9]*$' "$R/back.out" &&
   grep -q "resuming from checkpoint .*ckpt-\([0-9]*\): iteration \1 of max_batches 40, seen [0-9]* (written by 4 ranks, as now)" "$R/back.out" &&
   cmp -s "$R/straight/straight_final.weights" "$R/back/back_final.weights"; then
    ok "host B's ranks killed at iteration 12 of 40, B back: rerun on both hosts, $(grep -o 'resuming from checkpoint .*ckpt-[0-9]*' "$R/back.out" | sed 's/ .*ckpt-/ /'), final weights = 40 straight"
else bad "killed and rerun: exit $rc; $(grep -E 'mn_rerun|resuming' "$R/back.out" | head -4); $(tail -2 "$R/back.err")"; fi

case_run gone gone; rc=$?
if [ $rc = 0 ] && grep -q '^mn_rerun: .*host 10.77.0.2 does not answer' "$R/gone.out" "$R/gone.err" &&
   grep -q '^mn_rerun: .*now on 10.77.0.1:2 (2 ranks), was 10.77.0.1:2,10.77.0.2:2' "$R/gone.out" &&
   grep -q "resuming from checkpoint .*ckpt-\([0-9]*\): iteration \1 of max_batches 40, written by 4 ranks (global batch 256); now 2 ranks (global batch 128)" "$R/gone.out" &&
   [ -s "$R/gone/gone_final.weights" ] && grep -q '^40: loss' "$R/gone.out"; then
    ok "host B gone at iteration 12 of 40: rerun on host A's 2 ranks, finished; $(grep -m1 'now 2 ranks' "$R/gone.out" | sed 's/^darknet-mn: //')"
else bad "host gone: exit $rc; $(grep -E 'mn_rerun|resuming' "$R/gone.out" "$R/gone.err" | head -6)"; fi
$tb down > /dev/null 2>&1

# Not rerun: a user error (exit 1), a refusal (3), and no more than
# --max-restarts reruns of a job that fails each time (here a command
# exiting 75, as the watchdog does).
job usererr
sed -i 's/^batch=.*/batch=0/' "$R/usererr.cfg"
timeout 60 scripts/mn_rerun.sh --max-restarts 3 -- mpiexec -n 2 ./darknet_mn classifier train "$R/usererr.data" "$R/usererr.cfg" > "$R/usererr.out" 2>&1
rc=$?
if [ $rc = 1 ] && [ "$(grep -c 'attempt [0-9] of 4 starts' "$R/usererr.out")" = 1 ] && grep -q 'exit status 1 is a user error (cfg, data, weights): not rerun' "$R/usererr.out"; then
    ok "a user error is not rerun: $(grep -m1 'not rerun' "$R/usererr.out" | cut -d' ' -f3-)"
else bad "user error: exit $rc, $(grep -c 'attempt [0-9] of 4 starts' "$R/usererr.out") attempts"; fi
timeout 60 scripts/mn_rerun.sh --max-restarts 3 -- sh -c 'exit 3' > "$R/refused.out" 2>&1
rc=$?
if [ $rc = 3 ] && [ "$(grep -c 'attempt [0-9] of 4 starts' "$R/refused.out")" = 1 ] && grep -q 'exit status 3 is a refusal (.*): not rerun' "$R/refused.out"; then
    ok "a refusal is not rerun: $(grep -m1 'not rerun' "$R/refused.out" | cut -d' ' -f3-)"
else bad "refusal: exit $rc, $(grep -c 'attempt [0-9] of 4 starts' "$R/refused.out") attempts"; fi
timeout 60 scripts/mn_rerun.sh --max-restarts 2 -- sh -c 'exit 75' > "$R/bounded.out" 2>&1
rc=$?
if [ $rc = 75 ] && [ "$(grep -c 'attempt [0-9] of 3 starts' "$R/bounded.out")" = 3 ] && grep -q 'no restarts left (--max-restarts 2)' "$R/bounded.out"; then
    ok "--max-restarts 2: 3 attempts, then the job's own status (75)"
else bad "--max-restarts: exit $rc, $(grep -c 'attempt [0-9] of 3 starts' "$R/bounded.out") attempts"; fi
finish rerun
