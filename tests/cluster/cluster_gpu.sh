#!/usr/bin/env bash
# scripts/darknet_mn.sbatch on GPU nodes (GPUS_PER_NODE), on the Slurm
# testbed (scripts/slurm.sh) with GPUs for Slurm and none behind them
# (SLURM_TB_GPUS=2: Slurm allocates them and sets CUDA_VISIBLE_DEVICES):
# what srun hands each rank, not a training on a GPU. A stand-in takes
# darknet_mn's place and prints what its rank got: node, local rank,
# CUDA_VISIBLE_DEVICES, --cpus-per-task, the cores it may run on,
# OMP_NUM_THREADS, the path it was started as and its arguments.
#  1. GPUS_PER_NODE=2 and CPUS_PER_TASK=2 in darknet_mn.env, MN unset, the
#     script run as the quick start runs it (./train.sbatch --nodes=2): it
#     asks sbatch for the GPUs, and srun starts one rank per GPU, each seeing
#     its node's two GPUs, with 2 cores, as build/gpu/darknet_mn;
#  2. GPUS_PER_NODE=2 alone, the job given a whole node of 6 cores
#     (--exclusive): each rank gets 6 / 2 = 3;
#  3. submitted with plain sbatch, without GPUs or without the cores asked:
#     the job ends with 64 and one line saying what to submit it with;
#  4. GPUS_PER_NODE=4 on nodes of 2, and GPUS_PER_NODE=2 on a testbed
#     without GPUs: refused before the queue, 64, one line with Slurm's
#     reason; nothing queued;
#  5. GPUS_PER_NODE unset on the testbed without GPUs: the CPU job as
#     before (./darknet_mn, the #SBATCH lines' 2 ranks a node, no GPU).
# Needs root.
. "$(dirname "$0")/../helpers/lib.sh"
suite_folder gpu-job
S=$G
sl=scripts/slurm.sh
trap '$sl down > /dev/null 2>&1' EXIT

# The user's darknet-mn folder: the batch script copied as the quick start
# copies it, the data and cfg it checks, and the stand-in at the GPU build's
# path and at the CPU build's.
J=$S/job
mkdir -p "$J/build/gpu" "$J/data" "$J/backup"
cp scripts/darknet_mn.sbatch "$J/train.sbatch"
printf 'classes=1\ntrain=data/train.txt\nnames=data/obj.names\nbackup=backup/\n' > "$J/data/obj.data"
: > "$J/data/train.txt"; : > "$J/data/obj.names"; : > "$J/yolo-obj.cfg"
cat > "$J/build/gpu/darknet_mn" << 'EOF'
#!/bin/sh
cores=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
echo "rank $SLURM_PROCID of $SLURM_NTASKS on $(uname -n) (local $SLURM_LOCALID): CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}, cpus-per-task ${SLURM_CPUS_PER_TASK-unset}, cores $cores, OMP_NUM_THREADS=${OMP_NUM_THREADS-unset}, started as $0, arguments $*"
EOF
chmod +x "$J/build/gpu/darknet_mn"
cp "$J/build/gpu/darknet_mn" "$J/darknet_mn"
ARGS="detector train data/obj.data yolo-obj.cfg -dont_show -map"
# The testbed binds no task to cores (TaskPlugin=task/none): each rank may
# run on all of this machine's, as on a site without task/affinity.
MACHINE_CORES=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
unset OMP_NUM_THREADS

# settings LINES...: darknet_mn.env, with the training's files and flags.
settings() { printf '%s\n' 'DATA=data/obj.data' 'CFG=yolo-obj.cfg' 'FLAGS="-dont_show -map"' "$@" > "$J/darknet_mn.env"; }
# submit NAME COMMAND...: COMMAND in the job's folder (a submission with
# --wait, which returns once the job ended); its output in S/NAME.sub, its
# status in rc, the job's output in S/NAME.out.
submit() {
    local name=$1 id; shift
    (cd "$J" && timeout 120 "$@") > "$S/$name.sub" 2>&1
    rc=$?
    id=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$S/$name.sub")
    if [ -n "$id" ]; then cp "$J/darknet-mn-$id.out" "$S/$name.out" 2> /dev/null; else : > "$S/$name.out"; fi
}
# ranks NODES PER_NODE CPUS DEVICES PROGRAM: the lines the stand-in must
# print, rank by rank, block by block on mns1, mns2 ...
ranks() {
    local r
    for ((r = 0; r < $1 * $2; ++r)); do
        echo "rank $r of $(($1 * $2)) on mns$((r / $2 + 1)) (local $((r % $2))): CUDA_VISIBLE_DEVICES=$4, cpus-per-task $3, cores $MACHINE_CORES, OMP_NUM_THREADS=unset, started as $5, arguments $ARGS"
    done
}
# got NAME: the stand-in's lines in the job's output, by rank.
got() { grep '^rank ' "$S/$1.out" | sort -n -k2; }
# one_line FILE PATTERN: the lines of FILE from the script, the settings'
# aside: exactly one, matching PATTERN.
one_line() { [ "$(grep '^darknet-mn: ' "$1" | grep -vc '^darknet-mn: settings from ')" = 1 ] && grep -q "$2" "$1"; }
# before_queue NAME GPUS REASON WHERE: the script run as a program with
# GPUS_PER_NODE=GPUS on nodes WHERE: status 64, one line holding Slurm's
# REASON, nothing submitted.
before_queue() {
    settings "GPUS_PER_NODE=$2"
    submit "$1" ./train.sbatch --nodes=1 --wait
    if [ $rc = $EX_USAGE ] && [ -z "$(squeue -h 2> /dev/null)" ] && ! grep -q '^Submitted' "$S/$1.sub" &&
       one_line "$S/$1.sub" "^darknet-mn: job not yet submitted, Slurm refuses --gpus-per-node=$2 --ntasks-per-node=$2 (GPUS_PER_NODE=$2, CPUS_PER_TASK=unset): '$3'; a node must have that many GPUs and cores for Slurm"; then
        ok "GPUS_PER_NODE=$2 $4: status 64 before the queue, one line: $(grep -o 'Slurm refuses.*: not submitted' "$S/$1.sub")"
    else bad "GPUS_PER_NODE=$2 $4: status $rc; $(tr '\n' '|' < "$S/$1.sub"); queue: $(squeue -h | tr '\n' '|')"; fi
}

if ! SLURM_TB_GPUS=2 SLURM_TB_CPUS=6 $sl up > "$S/up.log" 2>&1; then bad "slurm up with GPUs: $(tail -3 "$S/up.log")"; finish; fi
eval "$($sl env)"
ok "$(grep -m1 'up in' "$S/up.log" | sed 's/^slurm.sh: //'); sinfo: $(sinfo -h -N -o '%N %c %G' | paste -sd, | sed 's/,/, /g')"

settings GPUS_PER_NODE=2 CPUS_PER_TASK=2
submit quick ./train.sbatch --nodes=2 --wait
want=$(ranks 2 2 2 0,1 build/gpu/darknet_mn)
if [ $rc = 0 ] && [ "$(got quick)" = "$want" ] &&
   grep -q '^darknet-mn: job [0-9]*, run 1, on 2 node(s) (mns1,mns2), 4 ranks, each 1 GPU and 2 cores, ' "$S/quick.out" &&
   grep -q '^darknet-mn: job [0-9]*, run 1 ended with status 0, ' "$S/quick.out"; then
    ok "GPUS_PER_NODE=2 CPUS_PER_TASK=2, MN unset, ./train.sbatch --nodes=2: 4 ranks, 2 a node, each seeing its node's GPUs 0,1 (local ranks 0 and 1: darknet-mn's devices 0 and 1), cpus-per-task 2, started as build/gpu/darknet_mn with the settings' arguments; e.g. $(got quick | head -1)"
else bad "GPUS_PER_NODE=2 CPUS_PER_TASK=2: status $rc; got |$(got quick | tr '\n' '|')|, want |$(tr '\n' '|' <<< "$want")|; $(grep '^darknet-mn:\|rror' "$S/quick.sub" "$S/quick.out" | tail -4 | tr '\n' '|')"; fi

settings GPUS_PER_NODE=2
submit exclusive ./train.sbatch --nodes=1 --exclusive --wait
if [ $rc = 0 ] && [ "$(got exclusive)" = "$(ranks 1 2 3 0,1 build/gpu/darknet_mn)" ] &&
   grep -q '^darknet-mn: job [0-9]*, run 1, on 1 node(s) (mns[12]), 2 ranks, each 1 GPU and 3 cores, ' "$S/exclusive.out"; then
    ok "GPUS_PER_NODE=2 alone, a whole node of 6 cores (--exclusive): 2 ranks of 3 cores each ($(grep -o 'run 1, on .* cores' "$S/exclusive.out"))"
else bad "GPUS_PER_NODE=2 with --exclusive: status $rc; got |$(got exclusive | tr '\n' '|')|; $(grep '^darknet-mn:\|rror' "$S/exclusive.sub" "$S/exclusive.out" | tail -3 | tr '\n' '|')"; fi

# Plain sbatch: the #SBATCH lines alone ask for no GPU.
submit nogpus sbatch --wait --nodes=1 train.sbatch
if [ $rc = $EX_USAGE ] && one_line "$S/nogpus.out" '^darknet-mn: job [0-9]*, GPUS_PER_NODE=2, but the job has no GPUs on mns[12]: submit it with --gpus-per-node=2, or run the script, which asks for them, '; then
    ok "GPUS_PER_NODE=2, submitted with plain sbatch (no GPUs): status 64, one line: $(grep -o 'GPUS_PER_NODE=2, but.*asks for them' "$S/nogpus.out")"
else bad "a job without GPUs: status $rc; $(grep '^darknet-mn:\|rror' "$S/nogpus.sub" "$S/nogpus.out" | tail -3 | tr '\n' '|')"; fi
settings GPUS_PER_NODE=2 CPUS_PER_TASK=3
submit nocores sbatch --wait --nodes=1 --gpus-per-node=2 train.sbatch
if [ $rc = $EX_USAGE ] && one_line "$S/nocores.out" '^darknet-mn: job [0-9]*, 2 ranks a node of CPUS_PER_TASK=3 cores need 6 cores, but the job has 2 on mns[12]: submit it with --cpus-per-task=3, or run the script, which asks for them, '; then
    ok "GPUS_PER_NODE=2 CPUS_PER_TASK=3, submitted with plain sbatch --gpus-per-node=2 (2 cores a node): status 64, one line: $(grep -o '2 ranks a node.*asks for them' "$S/nocores.out")"
else bad "a job without the cores: status $rc; $(grep '^darknet-mn:\|rror' "$S/nocores.sub" "$S/nocores.out" | tail -3 | tr '\n' '|')"; fi

before_queue four 4 'Requested node configuration is not available' "on nodes of 2 GPUs"
$sl down > /dev/null 2>&1

# The testbed without GPUs.
if ! $sl up > "$S/up-cpu.log" 2>&1; then bad "slurm up without GPUs: $(tail -3 "$S/up-cpu.log")"; finish; fi
before_queue nonodes 2 'Invalid generic resource (gres) specification' "on nodes without GPUs"
settings
submit cpu ./train.sbatch --nodes=2 --wait
# srun starts a program named ./NAME by its full path (J/./NAME), one named
# DIR/NAME as given.
if [ $rc = 0 ] && [ "$(got cpu)" = "$(ranks 2 2 unset unset "$J/./darknet_mn")" ] &&
   grep -q '^darknet-mn: job [0-9]*, run 1, on 2 node(s) (mns1,mns2), 4 ranks, [0-9]' "$S/cpu.out"; then
    ok "GPUS_PER_NODE unset, no GPUs: the CPU job as before: 4 ranks, the #SBATCH lines' 2 a node, no CUDA_VISIBLE_DEVICES, started as ./darknet_mn"
else bad "the CPU job: status $rc; got |$(got cpu | tr '\n' '|')|; $(grep '^darknet-mn:\|rror' "$S/cpu.sub" "$S/cpu.out" | tail -3 | tr '\n' '|')"; fi
finish gpu
