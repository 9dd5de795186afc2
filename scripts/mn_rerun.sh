#!/usr/bin/env bash
# scripts/mn_rerun.sh: run a darknet-mn job under mpiexec, and when it fails
# for a reason a rerun can cure (a rank or host lost, a collective timed
# out), run it again, at most --max-restarts times, on the hosts that still
# answer; training resumes from the newest checkpoint by itself
# (checkpoint_interval in [distributed]). What torchrun's --max-restarts
# does, on mpiexec and darknet-mn's checkpoints: no process manager here.
#
#   scripts/mn_rerun.sh [--max-restarts N] [--host H1[:S1],H2[:S2],... | --hostfile FILE]
#                       [--min-hosts K] [--probe-timeout SEC] -- MPIEXEC_ARGS... ./darknet_mn ARGS...
#
# The ranks are the slots of the hosts that answer (a hostfile's lines are
# "host slots=N"; a host without slots has 1, as for Open MPI); without
# hosts, the job reruns on this machine with the same arguments. A host
# answers when Open MPI's launch agent runs `true` there within
# --probe-timeout seconds (the agent of --mca plm_rsh_agent in the
# arguments, else OMPI_MCA_plm_rsh_agent, else ssh in batch mode). With
# hosts the command must be Open MPI's launcher (mpiexec, mpirun, orterun,
# by any path) without -n or hosts of its own: the script gives it
# -n <slots> --host <hosts>. The defaults are the sbatch script's: 3
# restarts, 30 s to answer, every host (--min-hosts: a job that should
# train as launched stops rather than shrink).
# Not rerun: success (exit 0), darknet-mn's user errors (64, 65), internal
# faults (70), refusals (73), storage failures (74: a full disk is not
# freed by a rerun at once) and a program not found (127): a rerun would
# fail alike; a stop by the
# user (SIGINT, SIGTERM to this script), fewer than --min-hosts hosts
# answering. Rerun: 75 (darknet-mn's "rerun me": a signal
# stopped it after a checkpoint, a rank was lost, a collective timed out)
# and whatever else the launcher returns for a rank it lost.
# Each attempt's start, end, exit status and hosts are printed with a
# timestamp ("mn_rerun: ..."), so a log shows what each failure cost.
# Every attempt has the same MN_RERUN_ID, new for each invocation (mpiexec
# passes it to every host with -x): darknet-mn's rank 0 then takes over the
# backup folder's lock of an earlier attempt even where its flock outlives
# a host that is gone (docs/user-guide.md, "Rerunning a failed job under mpiexec").
set -u
max=3 hosts="" hostfile="" min_hosts="" probe_timeout=30
usage() { echo "usage: $0 [--max-restarts N] [--host H:S,... | --hostfile FILE] [--min-hosts K] [--probe-timeout SEC] -- MPIEXEC_ARGS... ./darknet_mn ARGS..." >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        --max-restarts) max=${2:-}; shift 2 ;;
        --host) hosts=${2:-}; shift 2 ;;
        --hostfile) hostfile=${2:-}; shift 2 ;;
        --min-hosts) min_hosts=${2:-}; shift 2 ;;
        --probe-timeout) probe_timeout=${2:-}; shift 2 ;;
        --) shift; break ;;
        *) usage ;;
    esac
done
[ $# -gt 0 ] || usage
refuse() { echo "mn_rerun: $*" >&2; exit 2; }
for v in "$max" "${min_hosts:-1}" "$probe_timeout"; do
    [[ $v =~ ^[0-9]+$ ]] || refuse "'$v' is not a whole number"
done
if [ -n "$hostfile" ]; then
    [ -r "$hostfile" ] || refuse "cannot read hostfile $hostfile"
    hosts=$(awk '!/^[ \t]*(#|$)/ { s = 1; for (i = 2; i <= NF; ++i) if ($i ~ /^slots=/) s = substr($i, 7)
                                   printf "%s%s:%s", n++ ? "," : "", $1, s }' "$hostfile")
    [ -n "$hosts" ] || refuse "hostfile $hostfile names no host"
fi
if [ -n "$hosts" ]; then
    norm=""
    for e in ${hosts//,/ }; do
        [[ $e =~ ^[^:]+$ ]] && e=$e:1
        [[ $e =~ ^[^:]+:[1-9][0-9]*$ ]] || refuse "host entry '$e' is not HOST or HOST:SLOTS"
        norm=$norm${norm:+,}$e
    done
    hosts=$norm
    case $(basename "$1") in
        mpiexec | mpirun | orterun | mpiexec.openmpi | mpirun.openmpi) ;;
        *) refuse "--host and --hostfile give Open MPI's mpiexec -n and --host; '$1' is not Open MPI's mpiexec or mpirun (run it without --host: it is rerun on its own hosts)" ;;
    esac
    for a in "$@"; do
        case $a in
            -n | -np | --np | -c | --host | -host | -H | --hostfile | -hostfile | --machinefile | -machinefile)
                refuse "'$a' in the command: with --host or --hostfile the ranks and hosts are the script's" ;;
        esac
    done
fi
n_hosts=$(awk -v l="$hosts" 'BEGIN { print l == "" ? 0 : split(l, a, ",") }')
min_hosts=${min_hosts:-$n_hosts}

# The launch agent, as mpiexec would use it.
agent=${OMPI_MCA_plm_rsh_agent:-ssh -o BatchMode=yes -o ConnectTimeout=$probe_timeout}
args=("$@")
for ((i = 0; i + 2 < ${#args[@]}; ++i)); do
    [ "${args[i]}" = --mca ] && [ "${args[i+1]}" = plm_rsh_agent ] && agent=${args[i+2]}
done

# The job's identity for the lock (plugin/train/checkpoint/mn_lock.c): this invocation's.
MN_RERUN_ID=$(hostname)-$$-$(date +%s)
export MN_RERUN_ID
# Open MPI's mpiexec takes the environment to other hosts only with -x.
xid=()
case ${args[0]##*/} in
    mpiexec | mpirun | orterun | mpiexec.openmpi | mpirun.openmpi)
        "${args[0]}" --version 2>&1 | grep -q 'Open MPI\|OpenRTE' && xid=(-x MN_RERUN_ID) ;;
esac

stamp() { echo "mn_rerun: $(date -u +%H:%M:%S.%N | cut -c1-12): $*"; }
# live HOSTS: the host:slots entries whose host answers, comma-joined.
live() {
    local e h out=""
    for e in ${1//,/ }; do
        h=${e%%:*}
        # shellcheck disable=SC2086
        if timeout "$probe_timeout" $agent "$h" true < /dev/null > /dev/null 2>&1; then out=$out${out:+,}$e
        else stamp "host $h does not answer ($agent $h true): left out" >&2; fi
    done
    echo "$out"
}
slots() { local e n=0; for e in ${1//,/ }; do n=$((n + ${e##*:})); done; echo $n; }

# darknet-mn's exit statuses that a rerun cannot cure (docs/user-guide.md,
# "Exit statuses"); 75 and a launcher's own statuses for a lost rank are rerun.
why() {
    case $1 in
        64) echo "a command-line error" ;; 65) echo "a user error (cfg, data, weights)" ;;
        70) echo "an internal fault" ;; 73) echo "a refusal (the backup folder: another job's, another experiment's checkpoints, or not seen by every node)" ;;
        74) echo "a storage failure (free space or fix the backup folder, then run it again)" ;; 127) echo "a program not found" ;;
    esac
}
stopped=0
trap 'stopped=1' INT TERM
attempt=0
while :; do
    run=("${args[0]}" "${xid[@]}" "${args[@]:1}")
    if [ -n "$hosts" ]; then
        now=$(live "$hosts")
        count=$(awk -v l="$now" 'BEGIN { print l == "" ? 0 : split(l, a, ",") }')
        if [ "$count" -lt "$min_hosts" ]; then
            stamp "$count host(s) answer, fewer than --min-hosts $min_hosts: giving up"
            exit 75   # "rerun me": once the hosts are back
        fi
        [ "$attempt" -gt 0 ] && [ "$now" != "$hosts" ] && stamp "now on $now ($(slots "$now") ranks), was $hosts"
        hosts=$now
        run=("${args[0]}" "${xid[@]}" -n "$(slots "$hosts")" --host "$hosts" "${args[@]:1}")
    fi
    stamp "attempt $((attempt + 1)) of $((max + 1)) starts: ${run[*]}"
    "${run[@]}" &
    pid=$!
    wait "$pid"
    rc=$?
    if [ $stopped = 1 ]; then kill -TERM "$pid" 2> /dev/null; wait "$pid"; stamp "stopped by the user"; exit 130; fi
    stamp "attempt $((attempt + 1)) ended with exit status $rc"
    case $rc in
        0) exit 0 ;;
        64|65|70|73|74|127) stamp "exit status $rc is $(why "$rc"): not rerun"; exit $rc ;;
    esac
    if [ "$attempt" -ge "$max" ]; then stamp "no restarts left (--max-restarts $max)"; exit $rc; fi
    attempt=$((attempt + 1))
done
