#!/usr/bin/env bash
# darknet-mn under Slurm, for real: Debian's slurmctld and two slurmd nodes
# in network namespaces (scripts/slurm.sh, which installs the packages):
#  - srun --mpi=pmix -N 2 --ntasks-per-node=2: info shows 2 nodes x 2; the
#    training equals mpiexec -n 4's (deterministic, flat) to float rounding,
#    and hierarchical and two_dimensional take their legs from the nodes;
#  - scripts/darknet_mn.sbatch's statuses with srun stubbed: 1, 2, 3 and 70
#    end the job, 75 is rerun;
#  - scripts/darknet_mn.sbatch as a user submits it (--requeue, --no-kill),
#    node mns2 killed at iteration 600 of 2000:
#    - started again (MIN_NODES left at both nodes): the job requeues
#      itself, resumes from its checkpoint once both nodes are back, and its
#      final weights equal an uninterrupted job's, bit for bit;
#    - left down, MIN_NODES=1: the job goes on in its allocation on mns1
#      alone, resumes from its checkpoint saying what changed (ranks, global
#      batch), and finishes;
# What each loss cost (seconds from the kill to the first iteration of the
# new run, iterations done twice) is printed with each case.
# Run by tests/run.sh (T, D, TEST_BIN set there). Needs root.
. "$(dirname "$0")/lib.sh"
suite_folder slurm
S=$G
# 0. The batch script's exit statuses, with srun, scontrol and squeue stubbed
#    (no cluster): 1, 2, 3 and 70 end the job after its first run, as
#    docs/user-guide.md's table says; 75 is run again, MAX_RESTARTS times.
stub=$S/stub && mkdir -p "$stub"
printf '#!/bin/sh\ncase "$*" in *" true") exit 0 ;; esac\nexit "$STUB_RC"\n' > "$stub/srun"
printf '#!/bin/sh\necho n1\n' > "$stub/scontrol"
cp "$stub/scontrol" "$stub/squeue" && chmod +x "$stub"/*
got=""
for rc in 1 2 3 70 75; do
    PATH=$stub:$PATH STUB_RC=$rc SLURM_JOB_ID=1 SLURM_JOB_NUM_NODES=1 SLURM_NTASKS=1 SLURM_JOB_NODELIST=n1 MAX_RESTARTS=2 \
        CFG=/dev/null timeout 60 bash scripts/darknet_mn.sbatch > "$S/stub-$rc.out" 2>&1
    got="$got $rc:$?x$(grep -c 'ended with status' "$S/stub-$rc.out")"
done
if [ "$got" = " 1:1x1 2:2x1 3:3x1 70:70x1 75:75x3" ]; then
    ok "darknet_mn.sbatch, srun stubbed: exit 1, 2, 3 and 70 end the job after one run, 75 runs 3 times (MAX_RESTARTS=2): status:exit x runs$got"
else bad "darknet_mn.sbatch's statuses (status:exit x runs):$got, want 1:1x1 2:2x1 3:3x1 70:70x1 75:75x3"; fi

sl=scripts/slurm.sh
trap '$sl down > /dev/null 2>&1' EXIT
if ! $sl up > "$S/up.log" 2>&1; then bad "slurm up: $(tail -3 "$S/up.log")"; finish; fi
eval "$($sl env)"
ok "$(grep -m1 'up in' "$S/up.log" | sed 's/^slurm.sh: //')"

# job NAME BATCH [ITERS [LINE...]]: a classifier cfg and data of its own,
# ITERS updates (40), deterministic, a checkpoint every ITERS/8, and the
# [distributed] LINEs.
job() {
    local name=$1 batch=$2 iters=${3:-40}; shift 2; shift $(($# > 0))
    mn_cfg "$S/$name.cfg" batch="$batch" max_batches="$iters" burn_in=0 -policy -steps -scales -- \
        deterministic=1 shuffle=0 checkpoint_interval=$((iters / 8)) collective_timeout=20 "$@"
    printf 'classes=10\ntrain=%s/train.list\nlabels=%s/labels.txt\nbackup=%s/%s\n' "$D" "$D" "$S" "$name" > "$S/$name.data"
    mkdir -p "$S/$name"
}
PROG_ABS=$(pwd)/darknet_mn

# 1. srun: the node map, and the training of mpiexec -n 4.
timeout 60 srun --mpi=pmix -N 2 --ntasks-per-node=2 "$PROG_ABS" info > "$S/info.out" 2> "$S/info.err"
if grep -q '^ranks: 4 ranks on 2 nodes (2+2)$' "$S/info.out" && grep -q '^node 0 (mns1): ranks 0 1$' "$S/info.out" &&
   grep -q '^node 1 (mns2): ranks 2 3$' "$S/info.out" && [ "$(tail -1 "$S/info.out")" = "all well" ]; then
    ok "srun --mpi=pmix -N 2 --ntasks-per-node=2 ./darknet_mn info: 4 ranks on 2 nodes (2+2), all well"
else bad "srun info: $(head -8 "$S/info.out" | tr '\n' '|') $(tail -2 "$S/info.err")"; fi
job mpiexec 32 40 communicator=flat
timeout 120 $MPI -n 4 ./darknet_mn classifier train "$S/mpiexec.data" "$S/mpiexec.cfg" > "$S/mpiexec.out" 2>&1
for comm in flat hierarchical two_dimensional; do
    job "srun-$comm" 32 40 communicator=$comm
    timeout 120 srun --mpi=pmix -N 2 --ntasks-per-node=2 "$PROG_ABS" classifier train "$S/srun-$comm.data" "$S/srun-$comm.cfg" \
        > "$S/srun-$comm.out" 2> "$S/srun-$comm.err"
    if grep -q "on 4 ranks (2 nodes), communicator $comm" "$S/srun-$comm.out" &&
       "$TEST_BIN/mn_wcmp" "$S/srun-$comm/srun-${comm}_final.weights" "$S/mpiexec/mpiexec_final.weights" 1e-5 > "$S/$comm.cmp"; then
        ok "srun 2 nodes x 2, $comm = mpiexec -n 4 on one node: $(cat "$S/$comm.cmp")"
    else bad "srun $comm: $(grep -m1 'on 4 ranks' "$S/srun-$comm.out") $(cat "$S/$comm.cmp" 2> /dev/null) $(tail -2 "$S/srun-$comm.err")"; fi
done

# 2. The batch script, a node lost mid-run. submit NAME SBATCH_ARGS...: the
# job's id; its output in S/NAME.out.
submit() {
    local name=$1; shift
    sbatch --parsable --chdir="$(pwd)" --output="$S/$name.out" "$@" \
        --export=ALL,MN="$PROG_ABS",TASK=classifier,DATA="$S/$name.data",CFG="$S/$name.cfg" scripts/darknet_mn.sbatch
}
wait_line() {   # wait_line FILE AWK_CONDITION SECONDS
    local i
    for ((i = 0; i < $3 * 10; ++i)); do awk "$2 { f = 1 } END { exit !f }" "$1" 2> /dev/null && return 0; sleep 0.1; done
    return 1
}
job_done() {   # job_done ID SECONDS: until squeue no longer lists it
    local i
    for ((i = 0; i < $2 * 5; ++i)); do [ -z "$(squeue -h -j "$1" 2> /dev/null)" ] && return 0; sleep 0.2; done
    return 1
}
# 2000 updates of 2 x 64 images (about 3 ms each), a checkpoint every 250,
# mns2 killed at iteration 600.
ITERS=2000
job straight 64 $ITERS
id=$(submit straight --nodes=2 --ntasks-per-node=1)
job_done "$id" 120 || bad "the uninterrupted batch job did not end"
# both nodes idle and answering ("idle", not "idle*"), so that a job of 1-2 nodes gets 2
both_idle() { local i; for ((i = 0; i < 300; ++i)); do [ "$(sinfo -h -N -o %t | grep -cx idle)" = 2 ] && return 0; sleep 0.2; done; return 1; }
# lose NAME BACK SBATCH_ARGS...: submit, kill mns2 at iteration 600; BACK=1
# starts it again once the job has requeued itself, BACK=0 once the job has
# ended. Prints the cost line.
lose() {
    local name=$1 back=$2 id t_kill t_first i
    shift 2
    job "$name" 64 $ITERS
    both_idle || { bad "$name: the nodes are not both idle: $(sinfo -N | tr '\n' '|')"; return 1; }
    id=$(submit "$name" "$@")
    if ! wait_line "$S/$name.out" '/^600: loss/' 120; then bad "$name: never reached iteration 600"; scancel "$id"; return 1; fi
    t_kill=$(date +%s.%N)
    $sl kill mns2 > "$S/$name.kill" 2>&1
    if [ "$back" = 1 ]; then
        for ((i = 0; i < 600; ++i)); do   # requeued: Slurm counts a restart
            scontrol show job "$id" 2> /dev/null | grep -q 'Restarts=[1-9]' && break
            sleep 0.2
        done
        if [ $i = 600 ]; then bad "$name: not requeued within 120 s: $(scontrol show job "$id" | grep -o 'JobState=[A-Z]*')"; scancel "$id"; return 1; fi
        $sl start mns2 >> "$S/$name.kill" 2>&1
    fi
    wait_line "$S/$name.out" '/, run 2,/ { on = 1 } on && /^[0-9]+: loss/' 120
    t_first=$(date +%s.%N)
    job_done "$id" 180 || { bad "$name: did not end"; scancel "$id"; }
    [ "$back" = 1 ] || $sl start mns2 >> "$S/$name.kill" 2>&1
    awk -v a="$t_kill" -v b="$t_first" -v n="$(grep -c '^[0-9]*: loss' "$S/$name.out")" -v name="$name" -v it=$ITERS \
        'BEGIN { printf "     %s: %.1f s from the kill to the first iteration of run 2; %d iterations done twice\n", name, b - a, n - it }'
}
lose back 1 --nodes=2 --ntasks-per-node=1
if grep -q "resuming from checkpoint .*back.ckpt-\([0-9]*\): iteration \1 of max_batches $ITERS, seen [0-9]* (written by 2 ranks, as now)" "$S/back.out" &&
   grep -q '^darknet-mn: job .*, run 2, on 2 node(s)' "$S/back.out" &&
   cmp -s "$S/straight/straight_final.weights" "$S/back/back_final.weights"; then
    ok "sbatch job, node mns2 killed at iteration 600 of $ITERS and back: requeued, $(grep -o 'resuming from checkpoint .*ckpt-[0-9]*' "$S/back.out" | sed 's/ .*ckpt-/ /'), final weights = the uninterrupted job's"
else bad "node lost and back: $(grep -E '^darknet-mn: (job|resuming)' "$S/back.out" | head -5 | tr '\n' '|')"; fi
MIN_NODES=1 lose gone 0 --nodes=2 --ntasks-per-node=1
if grep -q '^darknet-mn: job .*, going on with 1 of 2 nodes (mns1; MIN_NODES=1)' "$S/gone.out" &&
   grep -q '^darknet-mn: job .*, run 2, on 1 node(s) (mns1), 1 ranks' "$S/gone.out" &&
   grep -q "resuming from checkpoint .*gone.ckpt-\([0-9]*\): iteration \1 of max_batches $ITERS, written by 2 ranks (global batch 128); now 1 ranks (global batch 64)" "$S/gone.out" &&
   grep -q '^darknet-mn: job .*, run 2 ended with status 0' "$S/gone.out" && [ -s "$S/gone/gone_final.weights" ] &&
   ! grep -q 'Restarts=[1-9]' <(scontrol show job "$(grep -m1 -o 'job [0-9]*' "$S/gone.out" | cut -c5-)" 2> /dev/null); then
    ok "sbatch job, MIN_NODES=1, node mns2 killed at iteration 600 of $ITERS and left down: goes on with 1 of 2 nodes, $(grep -o 'resuming from checkpoint .*ckpt-[0-9]*' "$S/gone.out" | sed 's/ .*ckpt-/ /'), $(grep -o 'written by 2 ranks.*' "$S/gone.out" | head -1), finished"
else bad "node lost and gone: $(grep -E '^darknet-mn: (job|resuming)|written by' "$S/gone.out" | head -8 | tr '\n' '|')"; fi
finish slurm
