#!/usr/bin/env bash
# darknet-mn under Slurm, for real (make test-cluster): Debian's slurmctld
# and two slurmd nodes in network namespaces (scripts/slurm.sh, which
# installs the packages):
#  1. srun --mpi=pmix -N 2 --ntasks-per-node=2: info shows 2 nodes x 2; the
#     training of flat, hierarchical and two_dimensional (deterministic)
#     equals, bit for bit, mpiexec -n 4's as 2 nodes of 2, whose legs sum
#     in the same order;
#     MPICH's build under srun --mpi=pmi2 trains the same, and under
#     --mpi=none (each task alone) stops with 64 saying what srun needs;
#  2. scripts/darknet_mn.sbatch as a user submits it (--requeue, --no-kill),
#     a node lost at iteration 600 of 2000:
#     - mns2 killed and started again (MIN_NODES left at both nodes): the job
#       requeues itself, resumes from its checkpoint once both nodes are
#       back, and its final weights equal an uninterrupted job's, bit for bit;
#     - mns2 killed and left down, MIN_NODES=1: the job goes on in its
#       allocation on mns1 alone, resumes from its checkpoint saying what
#       changed (ranks, global batch), and finishes;
#     - mns1 killed, the node running the batch script and rank 0, slurmd
#       and all, and started again once Slurm requeued the job: it resumes
#       and ends bit for bit as the uninterrupted job;
#     - mns2 silent (its link down 45 s, its processes alive): rank 0 names
#       it after collective_timeout, the job is requeued once Slurm marks the
#       node down, and ends bit for bit as the uninterrupted job;
#  3. the time limit: a job submitted with --time=2 for about 110 s of
#     training (and its start-up), FLAGS="-dont_show -clear" as a fine-tuning
#     user writes them, gets SIGUSR1 before the limit, stops, checkpoints,
#     requeues itself (scontrol requeue: the testbed has no RequeueExit) as
#     often as it takes, repeats no iteration and ends with the weights of
#     an uninterrupted run;
#  4. a cancel cancels: scancel of a running job stops the ranks at an
#     iteration's end with a checkpoint, and the job ends CANCELLED, not
#     requeued; a requeue Slurm refuses (a job submitted --no-requeue,
#     stopped with scancel --batch --signal=USR1) is said with Slurm's
#     reason; the script run inside an salloc refuses (64) and trains nothing;
#  5. docs/cluster.md's quick start, its blocks 2 to 6 extracted from the
#     page and run as written (only the EDIT lines' values the test's: 200
#     images of the detection set, 2 nodes x 1 rank, a 64-pixel input, 20
#     iterations, partition mn), from an empty folder through to a finished
#     job with its final and best weights.
# What each loss cost (seconds from the kill to the first iteration of the
# new run, iterations done twice) is printed with each case.
# Needs root; about 10 minutes.
. "$(dirname "$0")/../helpers/lib.sh"
suite_folder slurm
S=$G
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
        deterministic=1 shuffle=0 checkpoint_interval=$((iters / 8)) collective_timeout="${CT:-20}" "$@"
    printf 'classes=10\ntrain=%s/train.list\nlabels=%s/labels.txt\nbackup=%s/%s\n' "$D" "$D" "$S" "$name" > "$S/$name.data"
    mkdir -p "$S/$name"
}
PROG_ABS=$(pwd)/darknet_mn
# ONLY=a,b runs those sections alone: srun back gone rank0 silent limit cancel quickstart.

# 1. srun: the node map, and the training of mpiexec -n 4.
if want srun; then
    timeout 60 srun --mpi=pmix -N 2 --ntasks-per-node=2 "$PROG_ABS" info > "$S/info.out" 2> "$S/info.err"
    if grep -q '^ranks: 4 ranks on 2 nodes (2+2)$' "$S/info.out" && grep -q '^node 0 (mns1): ranks 0 1$' "$S/info.out" &&
       grep -q '^node 1 (mns2): ranks 2 3$' "$S/info.out" && [ "$(tail -1 "$S/info.out")" = "all well" ]; then
        ok "srun --mpi=pmix -N 2 --ntasks-per-node=2 ./darknet_mn info: 4 ranks on 2 nodes (2+2), all well"
    else bad "srun info: $(head -8 "$S/info.out" | tr '\n' '|') $(tail -2 "$S/info.err")"; fi
    # The reference: mpiexec -n 4 on this host as 2 nodes of 2
    # (MN_RANKS_PER_NODE=2), so that it sums in the same order as 2 nodes
    # do, and the weights must be the same bits. Against 4 ranks on one node
    # (another order) the difference is float rounding grown over 40
    # updates, so only the same order can be compared bit for bit.
    for comm in flat hierarchical two_dimensional; do
        job "mpiexec-$comm" 32 40 communicator=$comm
        timeout 120 $MPI -n 4 env MN_RANKS_PER_NODE=2 ./darknet_mn classifier train "$S/mpiexec-$comm.data" "$S/mpiexec-$comm.cfg" \
            > "$S/mpiexec-$comm.out" 2>&1
        job "srun-$comm" 32 40 communicator=$comm
        timeout 120 srun --mpi=pmix -N 2 --ntasks-per-node=2 "$PROG_ABS" classifier train "$S/srun-$comm.data" "$S/srun-$comm.cfg" \
            > "$S/srun-$comm.out" 2> "$S/srun-$comm.err"
        if grep -q "on 4 ranks (2 nodes), communicator $comm" "$S/srun-$comm.out" &&
           "$TEST_BIN/mn_wcmp" "$S/srun-$comm/srun-${comm}_final.weights" "$S/mpiexec-$comm/mpiexec-${comm}_final.weights" 0 > "$S/$comm.cmp"; then
            ok "srun 2 nodes x 2, $comm = mpiexec -n 4 as 2 nodes of 2, bit for bit: $(cat "$S/$comm.cmp")"
        else bad "srun $comm: $(grep -m1 'on 4 ranks' "$S/srun-$comm.out") $(cat "$S/$comm.cmp" 2> /dev/null) $(tail -2 "$S/srun-$comm.err")"; fi
    done
    # MPICH's build (cluster_mpich.sh's) under srun: Slurm's pmi2 plugin
    # connects it; without the plugin (--mpi=none) each task would train
    # alone, and darknet_mn says what to give srun instead.
    PM=$(pwd)/$BUILD/mpich/cpu/darknet_mn
    if [ -x "$PM" ]; then
        job srun-mpich 32 40 communicator=hierarchical
        timeout 120 srun --mpi=pmi2 -N 2 --ntasks-per-node=2 "$PM" classifier train "$S/srun-mpich.data" "$S/srun-mpich.cfg" \
            > "$S/srun-mpich.out" 2> "$S/srun-mpich.err"
        if grep -q "on 4 ranks (2 nodes), communicator hierarchical" "$S/srun-mpich.out" &&
           "$TEST_BIN/mn_wcmp" "$S/srun-mpich/srun-mpich_final.weights" "$S/mpiexec-hierarchical/mpiexec-hierarchical_final.weights" 1e-5 > "$S/srun-mpich.cmp"; then
            ok "MPICH's build under srun --mpi=pmi2, 2 nodes x 2, hierarchical = Open MPI's mpiexec -n 4 as 2 nodes of 2: $(cat "$S/srun-mpich.cmp")"
        else bad "MPICH under srun --mpi=pmi2: $(grep -m1 'on 4 ranks' "$S/srun-mpich.out") $(cat "$S/srun-mpich.cmp" 2> /dev/null) $(tail -2 "$S/srun-mpich.err")"; fi
        timeout 60 srun --mpi=none -N 2 --ntasks-per-node=1 "$PM" info > "$S/srun-none.out" 2> "$S/srun-none.err"
        rc=$?
        if [ $rc = $EX_USAGE ] && [ "$(grep -c 'darknet-mn: srun started 2 processes, but each is alone' "$S/srun-none.err")" = 1 ] &&
           grep -q -- '--mpi=pmi2 for MPICH' "$S/srun-none.err"; then
            ok "MPICH's build under srun --mpi=none: status 64, said once: $(grep -o 'srun started.*job of 1' "$S/srun-none.err")"
        else bad "srun --mpi=none: status $rc, $(head -3 "$S/srun-none.err")"; fi
    else bad "no MPICH build at $PM (tests/cluster/cluster_mpich.sh, run before this suite, makes it)"; fi
fi

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
# lose NAME BACK NODE SBATCH_ARGS...: submit, NODE lost at iteration 600:
# killed (BACK=1 starts it again once the job has requeued itself, BACK=0
# once the job has ended, BACK=now at once) or, with
# BACK=cut, its link down for 45 s. Prints the cost line.
lose() {
    local name=$1 back=$2 node=$3 id t_kill t_first i
    shift 3
    job "$name" 64 $ITERS
    both_idle || { bad "$name: the nodes are not both idle: $(sinfo -N | tr '\n' '|')"; return 1; }
    id=$(submit "$name" "$@")
    if ! wait_line "$S/$name.out" '/^600: loss/' 120; then bad "$name: never reached iteration 600"; scancel "$id"; return 1; fi
    t_kill=$(date +%s.%N)
    if [ "$back" = cut ]; then
        $sl cut "$node" > "$S/$name.kill" 2>&1
        (sleep 45; $sl mend "$node" >> "$S/$name.kill" 2>&1) &
    else $sl kill "$node" > "$S/$name.kill" 2>&1; fi
    # BACK=now: its slurmd back at once, as after a crash of every process
    # there (or a reboot within SlurmdTimeout): it tells Slurm the batch
    # script is gone, and Slurm requeues the job. (Back only once Slurm
    # marked it down, the job, --no-kill, stays RUNNING on the other node
    # with nothing in it until its time limit: Slurm 22.05.)
    [ "$back" = now ] && $sl start "$node" >> "$S/$name.kill" 2>&1
    if [ "$back" = 1 ]; then
        for ((i = 0; i < 600; ++i)); do   # requeued: Slurm counts a restart
            scontrol show job "$id" 2> /dev/null | grep -q 'Restarts=[1-9]' && break
            sleep 0.2
        done
        if [ $i = 600 ]; then
            bad "$name: not requeued within 120 s: $(scontrol show job "$id" | grep -o 'JobState=[A-Z]*')"
            scancel "$id"; $sl start "$node" >> "$S/$name.kill" 2>&1; return 1
        fi
        $sl start "$node" >> "$S/$name.kill" 2>&1
    fi
    wait_line "$S/$name.out" '/, run 2,/ { on = 1 } on && /^[0-9]+: loss/' 180
    t_first=$(date +%s.%N)
    job_done "$id" 180 || { bad "$name: did not end"; scancel "$id"; }
    [ "$back" = 0 ] && $sl start "$node" >> "$S/$name.kill" 2>&1
    wait
    local d u
    read -r d u <<< "$(reruns_count "$S/$name.out" $ITERS)"
    awk -v a="$t_kill" -v b="$t_first" -v name="$name" -v d="$d" -v u="$u" \
        'BEGIN { printf "     %s: %.1f s from the kill to the first iteration of run 2; %d iterations done twice (%d completed unprinted)\n", name, b - a, d, u }'
}
if want back; then
    lose back 1 mns2 --nodes=2 --ntasks-per-node=1
    if grep -q "resuming from checkpoint .*back.ckpt-\([0-9]*\): iteration \1 of max_batches $ITERS, seen [0-9]* (written by 2 ranks, as now)" "$S/back.out" &&
       grep -q '^darknet-mn: job .*, run 2, on 2 node(s)' "$S/back.out" &&
       cmp -s "$S/straight/straight_final.weights" "$S/back/back_final.weights"; then
        ok "sbatch job, node mns2 killed at iteration 600 of $ITERS and back: requeued, $(grep -o 'resuming from checkpoint .*ckpt-[0-9]*' "$S/back.out" | sed 's/ .*ckpt-/ /'), final weights = the uninterrupted job's"
    else bad "node lost and back: $(grep -E '^darknet-mn: (job|resuming)' "$S/back.out" | head -5 | tr '\n' '|')"; fi
fi
if want gone; then
    MIN_NODES=1 lose gone 0 mns2 --nodes=2 --ntasks-per-node=1
    # A run can also end at its start on a node just restarted (a crash in
    # the launch, before darknet-mn runs): rerun like any lost run, so the
    # run on mns1 alone need not be the second.
    if grep -q '^darknet-mn: job .*, going on with 1 of 2 nodes (mns1; MIN_NODES=1)' "$S/gone.out" &&
       grep -q '^darknet-mn: job .*, run [0-9]*, on 1 node(s) (mns1), 1 ranks' "$S/gone.out" &&
       grep -q "the checkpoint's global batch 128 kept on 1 ranks: subdivisions 1 -> 2 (1 ranks x 64 images x 2 passes an update)" "$S/gone.out" &&
       grep -q "resuming from checkpoint .*gone.ckpt-\([0-9]*\): iteration \1 of max_batches $ITERS, written by 2 ranks (global batch 128); now 1 ranks (global batch 128)" "$S/gone.out" &&
       grep -q '^darknet-mn: job .*, run [0-9]* ended with status 0' "$S/gone.out" && [ -s "$S/gone/gone_final.weights" ] &&
       ! grep -q 'Restarts=[1-9]' <(scontrol show job "$(grep -m1 -o 'job [0-9]*' "$S/gone.out" | cut -c5-)" 2> /dev/null) &&
       "$TEST_BIN/mn_wcmp" "$S/gone/gone_final.weights" "$S/straight/straight_final.weights" 1e-4 > "$S/gone.cmp"; then
        ok "sbatch job, MIN_NODES=1, node mns2 killed at iteration 600 of $ITERS and left down: goes on with 1 of 2 nodes ($(grep -c '^darknet-mn: job .*, run [0-9]*, on' "$S/gone.out") runs), $(grep -o 'resuming from checkpoint .*ckpt-[0-9]*' "$S/gone.out" | sed 's/ .*ckpt-/ /'), its global batch kept (subdivisions 2): the uninterrupted job's weights to float rounding ($(cat "$S/gone.cmp"))"
    else bad "node lost and gone: $(grep -E '^darknet-mn: (job|resuming)|written by' "$S/gone.out" | head -8 | tr '\n' '|')"; fi
fi
# rank0 / silent: the same job, mns1 (the batch script's node and rank 0's)
# killed and back, or mns2's link down 45 s.
# A run after the loss may fail at launch (its step on the node that comes
# back is still being cleaned up: srun kills the step, exit 137) and the next
# one goes on; the job must end with a run on both nodes that exits 0.
same() {   # same NAME WHAT [MORE]: the job ran again and ends with the straight job's weights
    if grep -q "resuming from checkpoint .*$1.ckpt-\([0-9]*\): iteration \1 of max_batches $ITERS, seen [0-9]* (written by 2 ranks, as now)" "$S/$1.out" &&
       grep -q '^darknet-mn: job .*, run [2-9], on 2 node(s)' "$S/$1.out" && grep -q ', run [2-9] ended with status 0' "$S/$1.out" &&
       cmp -s "$S/straight/straight_final.weights" "$S/$1/$1_final.weights"; then
        ok "sbatch job, $2: $(grep -o 'resuming from checkpoint .*ckpt-[0-9]*' "$S/$1.out" | sed 's/ .*ckpt-/ /') in run $(grep -o ', run [0-9]* ended with status 0' "$S/$1.out" | grep -o '[0-9]* ended' | cut -d' ' -f1), final weights = the uninterrupted job's${3:+; $3}$(grep -q 'nothing left to do' "$S/$1.out" && echo " (that run found the job finished: the run before wrote the final weights, then its srun failed)")"
    else bad "$2: $(grep -aE '^darknet-mn: (job|resuming|rank [0-9]+ \(|an earlier run)|did not|srun: error' "$S/$1.out" | head -14 | tr '\n' '|')"; fi
}
if want rank0; then
    lose rank0 now mns1 --nodes=2 --ntasks-per-node=1
    same rank0 "mns1 (batch script and rank 0) killed at iteration 600 of $ITERS, its slurmd back at once: requeued by Slurm"
fi
if want silent; then
    # collective_timeout=5, below what Slurm takes to mark the node down
    # (SlurmdTimeout=10 here): darknet-mn ends the step and names the node.
    CT=5 lose silent cut mns2 --nodes=2 --ntasks-per-node=1
    same silent "mns2 silent for 45 s from iteration 600 (link down, processes alive, collective_timeout=5)" \
        "$(grep -aom1 'rank 1 (mns2) did not arrive within 5 s\|did not complete in time (collective_timeout=5 s)' "$S/silent.out")"
    grep -aq 'rank 1 (mns2) did not arrive within 5 s\|did not complete in time (collective_timeout=5 s)' "$S/silent.out" ||
        bad "silent node: no rank named it within collective_timeout: $(grep -a 'did not\|status' "$S/silent.out" | head -3 | tr '\n' '|')"
fi

# 3. The time limit. 12000 updates of 2 x 128 images, no periodic checkpoint
# (the stops' own are what it resumes from), under --time=2 with SIGUSR1 60 s
# before the limit. Slurm sends it at its first look (every 30 s) once the
# limit is within the lead and 30 s, here 30-60 s into each run; a limit
# shorter than that would have it sent at the run's first look, which can
# come before the batch script listens, and the job would run into its
# limit. The training must outlast the first run's signal by a margin (at
# 2 x 64 the whole job takes under a minute; 24000 updates at this rate
# diverge).
if want limit; then
    ITERS=12000
    mn_cfg "$S/limit.cfg" batch=128 max_batches=$ITERS burn_in=0 -policy -steps -scales -- deterministic=1 shuffle=0 collective_timeout=20
    for n in limit limitref; do
        printf 'classes=10\ntrain=%s/train.list\nlabels=%s/labels.txt\nbackup=%s/%s\n' "$D" "$D" "$S" "$n" > "$S/$n.data"
        mkdir -p "$S/$n"
    done
    timeout 900 $MPI -n 2 ./darknet_mn classifier train "$S/limitref.data" "$S/limit.cfg" > "$S/limitref.out" 2>&1
    both_idle || bad "time limit: the nodes are not both idle: $(sinfo -N | tr '\n' '|')"
    # -clear, as the docs advise for fine-tuning: each requeued run goes on
    # from the checkpoint (a checkpoint is always resumed, -clear or not),
    # so no iteration is done twice.
    id=$(sbatch --parsable --chdir="$(pwd)" --output="$S/limit.out" --nodes=2 --ntasks-per-node=1 --time=2 --signal=B:USR1@60 \
        --export=ALL,MN="$PROG_ABS",TASK=classifier,DATA="$S/limit.data",CFG="$S/limit.cfg",FLAGS="-dont_show -clear" scripts/darknet_mn.sbatch)
    wait_line "$S/limit.out" '/SIGUSR1: asking the ranks to stop/' 120; t_sig=$(date +%s.%N)
    wait_line "$S/limit.out" '/, run 2,/ { on = 1 } on && /^[0-9]+: loss/' 120; t_first=$(date +%s.%N)
    job_done "$id" 600 || { bad "time limit: the job did not end within 600 s"; scancel "$id"; }
    stops=$(grep -ac 'stopped by SIGUSR1: asking Slurm to requeue the job' "$S/limit.out")
    twice=$(( $(grep -ac '^[0-9]*: loss' "$S/limit.out") - ITERS ))
    state=$(scontrol show job "$id" 2> /dev/null | grep -o 'JobState=[A-Z]*')
    awk -v a="$t_sig" -v b="$t_first" -v n="$twice" \
        'BEGIN { printf "     limit: %.1f s from the signal to the first iteration of run 2; %d iterations done twice\n", b - a, n }'
    if [ "$stops" -ge 1 ] && [ "$twice" = 0 ] && ! grep -aq 'TIME LIMIT' "$S/limit.out" && [ "$state" != JobState=TIMEOUT ] &&
       grep -aq "^darknet-mn: resuming from checkpoint $S/limit/limit.ckpt-[0-9]*: iteration" "$S/limit.out" &&
       ! grep -aq 'refused the requeue' "$S/limit.out" &&
       grep -aq ', run [0-9]* ended with status 0' "$S/limit.out" &&
       "$TEST_BIN/mn_wcmp" "$S/limit/limit_final.weights" "$S/limitref/limit_final.weights" 0 > "$S/limit.cmp"; then
        ok "sbatch --time=2 on $ITERS updates, FLAGS=\"-dont_show -clear\": stopped by SIGUSR1 before the limit and requeued by the script $stops time(s), each run after the first resumed its checkpoint, no iteration done twice, ${state:-gone}; final weights = an uninterrupted run's ($(cat "$S/limit.cmp"))"
    else bad "time limit: $stops stops, $twice iterations twice, ${state:-?}; $(grep -aE '^darknet-mn: (job|stopped)|TIME LIMIT|CANCELLED' "$S/limit.out" | tail -6 | tr '\n' '|') $(cat "$S/limit.cmp" 2> /dev/null)"; fi
fi
# 4. A cancel cancels. A job of 20000 updates: scancel at iteration 300.
# The job's state is read from scontrol until Slurm forgets it (MinJobAge,
# 300 s): a requeued job would be PENDING or RUNNING again, Restarts=1.
job_state() { scontrol show job "$1" 2> /dev/null | grep -o 'JobState=[A-Z_]* \|Restarts=[0-9]*' | tr -d ' ' | paste -sd' '; }
if want cancel; then
    ITERS=20000
    job cancel 64 $ITERS
    both_idle || bad "cancel: the nodes are not both idle: $(sinfo -N | tr '\n' '|')"
    id=$(submit cancel --nodes=2 --ntasks-per-node=1)
    if wait_line "$S/cancel.out" '/^300: loss/' 120; then
        scancel "$id"
        job_done "$id" 120 || bad "cancel: the job is still listed 120 s after scancel: $(job_state "$id")"
        sleep 15   # time for a requeue, had there been one (the scheduler looks every 2 s)
        st=$(job_state "$id")
        if [ "$st" = "JobState=CANCELLED Restarts=0" ] && [ -z "$(squeue -h -j "$id" 2> /dev/null)" ] &&
           grep -aq 'stopped by SIGTERM (scancel, a preemption or the time limit): not requeued by this script' "$S/cancel.out" &&
           grep -aq '^darknet-mn: stopped at iteration [0-9]* by SIGTERM' "$S/cancel.out" && ls "$S/cancel"/cancel.ckpt-* > /dev/null 2>&1; then
            ok "scancel of a running job: $(grep -ao 'stopped at iteration [0-9]* by SIGTERM' "$S/cancel.out" | head -1), checkpoint written; $st 15 s after it ended, not requeued"
        else bad "scancel: $st; $(grep -aE '^darknet-mn: (job|stopped)' "$S/cancel.out" | tail -4 | tr '\n' '|')"; fi
    else bad "cancel: never reached iteration 300"; scancel "$id"; fi
    # A requeue refused: --no-requeue, stopped and asked to requeue now.
    job norequeue 64 $ITERS
    both_idle || bad "norequeue: the nodes are not both idle: $(sinfo -N | tr '\n' '|')"
    id=$(submit norequeue --nodes=2 --ntasks-per-node=1 --no-requeue)
    if wait_line "$S/norequeue.out" '/^300: loss/' 120; then
        scancel --batch --signal=USR1 "$id"
        job_done "$id" 120 || { bad "norequeue: the job did not end"; scancel "$id"; }
        st=$(job_state "$id")
        if [ "$st" = "JobState=FAILED Restarts=0" ] &&
           grep -aq 'stopped by SIGUSR1: Slurm refused the requeue (.\+): the job ends here' "$S/norequeue.out" &&
           grep -aq '^darknet-mn: stopped at iteration [0-9]* by SIGUSR1' "$S/norequeue.out"; then
            ok "a requeue Slurm refuses (--no-requeue): said, $(grep -ao 'refused the requeue (.*)' "$S/norequeue.out" | head -1); the job ends, $st"
        else bad "refused requeue: $st; $(grep -aE '^darknet-mn: (job|stopped)' "$S/norequeue.out" | tail -4 | tr '\n' '|')"; fi
    else bad "norequeue: never reached iteration 300"; scancel "$id"; fi
    # Inside an allocation: refused, nothing trained.
    job salloc 64 40
    timeout 60 salloc -N 1 env MN="$PROG_ABS" TASK=classifier DATA="$S/salloc.data" CFG="$S/salloc.cfg" \
        bash scripts/darknet_mn.sbatch > "$S/salloc.out" 2>&1
    rc=$?
    if [ $rc = $EX_USAGE ] && grep -q '^darknet-mn: this shell is inside Slurm job [0-9]* (salloc or srun), where this script would train in place instead of submitting' "$S/salloc.out" &&
       ! grep -q ', run 1,' "$S/salloc.out" && [ -z "$(ls "$S/salloc")" ]; then
        ok "the batch script run inside salloc: status 64, $(grep -o 'where this script would train in place.*' "$S/salloc.out" | cut -c1-60)..., nothing trained"
    else bad "the batch script inside salloc: status $rc; $(tail -3 "$S/salloc.out" | tr '\n' '|')"; fi
fi
# 5. The quick start. quickstart_block N: block N of docs/cluster.md, each
# 'VAR=value  # EDIT' line given the value of QS_VAR where the test has one.
quickstart_block() {
    python3 - "$1" docs/cluster.md << 'EOF'
import os, re, shlex, sys
n, text = sys.argv[1], open(sys.argv[2]).read()
m = re.search(r"<!-- quickstart %s -->\n```bash\n(.*?)\n```" % n, text, re.S)
if not m:
    sys.exit("no quick start block %s in %s" % (n, sys.argv[2]))
for line in m.group(1).split("\n"):
    e = re.match(r"^([A-Z_]+)=.*# EDIT", line)
    if e and "QS_" + e.group(1) in os.environ:
        line = "%s=%s" % (e.group(1), shlex.quote(os.environ["QS_" + e.group(1)]))
    print(line)
EOF
}
if want quickstart; then
    Q=$S/quickstart && rm -rf "$Q" && mkdir -p "$Q/data/obj"
    ln -s "$PROG_ABS" "$Q/darknet_mn" && ln -s "$(pwd)/scripts" "$Q/scripts"
    # The user's images, each with its label file beside it (the forks' layout).
    if [ ! -f "$BUILD/fashion-det/.stamp" ]; then make -s fashion-det-data > "$S/det-data.log" 2>&1; fi
    for f in $(ls "$BUILD/fashion-det/images/train" | grep '\.jpg$' | head -200); do
        cp "$BUILD/fashion-det/images/train/$f" "$Q/data/obj/"
        cp "$BUILD/fashion-det/labels/train/${f%.jpg}.txt" "$Q/data/obj/"
    done
    export QS_NAMES="$(tr '\n' ' ' < data/fashion.names)" QS_NODES=2 QS_PER_NODE=1 QS_SIZE=64 QS_MAX_BATCHES=20
    export QS_PARTITION=mn QS_ACCOUNT= QS_MEM= QS_LIMIT=10
    for b in 2 3 4 5 6; do quickstart_block $b; done > "$S/quickstart.sh" 2> "$S/quickstart.err"
    # What block 1 (clone and build: the network) leaves: the program, and DARKNET_SRC.
    ds=$(pwd)/third_party/darknet-cpu
    (cd "$Q" && DARKNET_SRC=$ds bash -e "$S/quickstart.sh") > "$S/quickstart.out" 2>&1
    rc=$?
    id=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$S/quickstart.out")
    [ -n "$id" ] && { job_done "$id" 400 || { bad "quick start: job $id did not end within 400 s"; scancel "$id"; }; }
    qo=$Q/darknet-mn-$id.out
    if [ $rc = 0 ] && [ -n "$id" ] && [ ! -s "$S/quickstart.err" ] && grep -aq ', run 1 ended with status 0' "$qo" &&
       grep -aq '^darknet-mn: yolo-obj on 2 ranks (2 nodes), communicator flat,' "$qo" && grep -aq '^darknet-mn: communicator=auto: flat (' "$qo" &&
       grep -aq "^20: loss" "$qo" && grep -aq 'eval mAP' "$qo" &&
       [ -s "$Q/backup/yolo-obj_final.weights" ] && [ -s "$Q/backup/yolo-obj_best.weights" ]; then
        ok "docs/cluster.md's quick start, blocks 2-6 as written: job $id trained 20 iterations on 2 nodes (flat, chosen by auto), $(grep -ao 'eval mAP[^,]*' "$qo" | tail -1), backup/yolo-obj_final.weights and _best.weights written"
    else bad "quick start: status $rc, job ${id:-none}; $(tail -3 "$S/quickstart.out" | tr '\n' '|') $(grep -aE '^darknet-mn: (job|rank)|rror' "$qo" 2> /dev/null | head -5 | tr '\n' '|')"; fi
fi
finish slurm
