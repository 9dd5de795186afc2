#!/usr/bin/env bash
# A Slurm cluster on one machine, to test darknet-mn under srun/sbatch: node
# failure, requeue and restart included. Like scripts/testbed.sh, nodes are
# network namespaces joined by veth pairs to a bridge (mnsbr0, 10.78.0.0/24,
# apart from testbed.sh's); slurmctld runs in the root namespace on the
# bridge address, where clients (srun, sbatch, squeue) run too.
#
#   scripts/slurm.sh up [NODES]   # NODES (default 2) nodes mns1.., SLURM_TB_CPUS (2) CPUs each
#   scripts/slurm.sh env          # eval "$(scripts/slurm.sh env)": what a client needs
#   scripts/slurm.sh kill NODE    # the node dies: kill -9 of every process in it
#   scripts/slurm.sh start NODE   # its slurmd comes back
#   scripts/slurm.sh cut NODE     # the node goes silent: link down, processes alive
#   scripts/slurm.sh mend NODE    # its link comes back
#   scripts/slurm.sh status       # sinfo and squeue
#   scripts/slurm.sh down         # stops and removes everything; idempotent
#
# Needs root; installs Debian's slurmd, slurmctld, slurm-client and munge where
# missing, with libpmix-dev (Slurm's pmix plugin loads libpmix.so, which only
# the -dev package has), iproute2 and mount (a bare mmdebstrap root lacks
# both). Works in a chroot (CI's mmdebstrap root): no systemd, daemons are
# started here with setsid and stopped by pid. All state (config, munge key
# and socket, logs, spools) lives in one folder, SLURM_TB_DIR (default
# /run/darknet-mn-slurm), which down removes: a StateSaveLocation left over
# would bring old jobs back, so up always starts from down.
#
# Each slurmd runs in its node's network namespace, a UTS namespace (its
# hostname is its NodeName: Open MPI names its per-host files after it) and a
# mount namespace with a tmpfs /dev/shm of its own (what a killed rank leaves
# there goes with the node). /tmp is the machine's, shared as a cluster's
# shared file system would be (a program under /tmp runs on every node), but
# each node has its own TmpFS, D/NODE/tmp: Slurm's pmix plugin puts the same
# spmix_appdir_* path there on every node of a step. Unusual slurm.conf
# settings are explained where written.
#
# SLURM_TB_GPUS=N gives each node N GPUs for Slurm (GRES gpu, no GPU
# behind them): Slurm allocates them and sets each step's
# CUDA_VISIBLE_DEVICES as on a GPU cluster, so a batch script's GPU options
# can be tried without a GPU. Unset, the nodes have none.
set -u
D=$(realpath -m "${SLURM_TB_DIR:-/run/darknet-mn-slurm}")
# The address block, the bridge (the nodes' veths are named after it) and
# slurmctld's port: SLURM_TB_NET, SLURM_TB_BRIDGE and SLURM_TB_PORT move them,
# so that a second testbed (another root's, a chroot's) can run beside.
NET=${SLURM_TB_NET:-10.78.0}
BR=${SLURM_TB_BRIDGE:-mnsbr0}
CTL=mnsctl                  # slurmctld's hostname (its own UTS namespace)
PORT=${SLURM_TB_PORT:-6817} # SlurmctldPort, in the root namespace
CPUS=${SLURM_TB_CPUS:-2}    # CPUs a node declares
GPUS=${SLURM_TB_GPUS:-0}    # GPUs a node declares (GRES gpu)
PKGS="slurmd slurmctld slurm-client munge libpmix-dev iproute2 mount"
MARK=.darknet-mn-slurm      # in D: down removes only a folder holding it

say() { echo "slurm.sh: $*"; }
die() { echo "slurm.sh: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" = 0 ] || die "needs root (network namespaces, mounts, daemons)"; }

nodes() { ip netns list 2> /dev/null | awk '$1 ~ /^mns[0-9]+$/ { print $1 }' | sort -V; }
need_node() { [[ $1 =~ ^mns[0-9]+$ ]] && [ -e "/run/netns/$1" ] || die "no node $1 (nodes: $(nodes | xargs))"; }

# pid of daemon NAME (pid file D/NAME.pid) if that process still runs it
alive() {
    local pid; pid=$(cat "$D/$1.pid" 2> /dev/null) || return 1
    [ "$(cat "/proc/$pid/comm" 2> /dev/null)" = "$1" ] && echo "$pid"
}

# clients of this testbed (of this root, with its SLURM_CONF) still waiting
# for it: an srun whose job is pending would wait forever once it is down
clients() {
    local p
    for p in /proc/[0-9]*; do
        case $(cat "$p/comm" 2> /dev/null) in srun | salloc | sbatch | sattach) ;; *) continue ;; esac
        [ "$p/root" -ef / ] && tr '\0' '\n' < "$p/environ" 2> /dev/null | grep -qx "SLURM_CONF=$D/slurm.conf" &&
            echo "${p#/proc/}"
    done
}

# kill -9 PIDS..., then wait (5 s at most) until they are gone, reaped too
# (this machine's init reaps orphans only about once a second)
kill_wait() {
    [ $# -gt 0 ] || return 0
    kill -9 "$@" 2> /dev/null
    local p i left
    for i in $(seq 50); do
        left=$(for p in "$@"; do [ -e "/proc/$p" ] && echo "$p"; done)
        [ -z "$left" ] && return 0
        sleep 0.1
    done
    say "still there 5 s after kill -9: pids" $left >&2
}

install_missing() {
    local p have missing="" out
    have=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' $PKGS 2> /dev/null | awk '$2 == "installed" { print $1 }')
    for p in $PKGS; do grep -qx "$p" <<< "$have" || missing="$missing $p"; done
    [ -n "$missing" ] || return 0
    say "installing$missing"
    out=$( { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing; } 2>&1) ||
        { echo "$out" | tail -20 >&2; die "apt-get install$missing failed"; }
}

# Refuse, touching nothing, where another Slurm (or this testbed started from
# another root, e.g. a chroot's) already holds what up needs.
refuse_foreign() {
    local users ours who route
    users=$(ss -ltnpH "sport = :$PORT" 2> /dev/null)
    ours=$(alive slurmctld)
    if [ -n "$users" ] && ! grep -q "pid=${ours:-none}," <<< "$users"; then
        who=$(sed -nE 's/.*users:\(\("([^"]+)",pid=([0-9]+).*/\1 (pid \2)/p' <<< "$users")
        die "port $PORT, slurmctld's, is taken by ${who:-a process of another pid namespace}: stop it first"
    fi
    route=$(ip -o route show "$NET.0/24" | grep -v "dev $BR ")
    [ -z "$route" ] || die "$NET.0/24 is already in use here: $route"
    if [ -e "$D" ] && [ ! -e "$D/$MARK" ] && [ -n "$(ls -A "$D")" ]; then
        die "$D exists and is not this testbed's folder (SLURM_TB_DIR)"
    fi
}

write_conf() {
    local n=$1 i
    cat > "$D/slurm.conf" << EOF
# written by scripts/slurm.sh up
ClusterName=mns
SlurmctldHost=$CTL($NET.254)
SlurmctldPort=$PORT
SlurmUser=root
SlurmdUser=root
# Munge on a socket of this testbed's own. cred_expire (default 120 s, at
# least 5): a requeued job is held until its old credential expired, 11 s.
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/socket,cred_expire=10
StateSaveLocation=$D/ctld
SlurmctldPidFile=$D/ctld/slurmctld.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdSpoolDir=$D/%n/spool
SlurmdPidFile=$D/%n/slurmd.pid
SlurmdLogFile=$D/%n/slurmd.log
TmpFS=$D/%n/tmp
# No cgroups (none in a chroot; all nodes share this machine's): processes
# tracked by parentage, tasks not bound to CPUs.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
MpiDefault=pmix
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# Nodes declare more CPUs than the machine has: trust slurm.conf, not the
# hardware (else they go INVAL).
SlurmdParameters=config_overrides
# Fast failure handling: a node silent for 10 s is DOWN and its jobs are
# requeued; it returns to service when its slurmd registers again; the
# scheduler looks every 2 s. No RequeueExit, as at most sites: a job that
# exits 75 ends, and only the batch script's own requeue brings it back
# (SLURM_TB_REQUEUE_EXIT=75 sets it, for a site that has it). A ping to
# a dead node fails only after MessageTimeout, and DOWN takes two rounds of
# pings: about 18 s from kill to requeue with 5, 29 s with the default 10.
SlurmdTimeout=10
MessageTimeout=5
ReturnToService=2
SchedulerParameters=sched_interval=2
EOF
    if [ -n "${SLURM_TB_REQUEUE_EXIT:-}" ]; then echo "RequeueExit=$SLURM_TB_REQUEUE_EXIT" >> "$D/slurm.conf"; fi
    local gres=""
    if [ "$GPUS" -gt 0 ]; then
        # The GPUs' device files: character devices of the NVIDIA driver's
        # major number (195) with no driver behind them, which nothing
        # opens. slurmd takes no plain file (it logs an error and sets no
        # CUDA_VISIBLE_DEVICES).
        echo "GresTypes=gpu" >> "$D/slurm.conf"
        mkdir -p "$D/dev"
        for i in $(seq 0 $((GPUS - 1))); do mknod "$D/dev/nvidia$i" c 195 "$i"; done
        echo "Name=gpu File=$D/dev/nvidia[0-$((GPUS - 1))]" > "$D/gres.conf"
        gres=" Gres=gpu:$GPUS"
    fi
    for i in $(seq "$n"); do
        echo "NodeName=mns$i NodeAddr=$NET.$i CPUs=$CPUS$gres State=UNKNOWN" >> "$D/slurm.conf"
    done
    echo "PartitionName=mn Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >> "$D/slurm.conf"
    # slurmd loads a cgroup plugin whatever the settings above; left to
    # autodetect, it fails where /sys/fs/cgroup has no cgroup mount (a chroot).
    echo "CgroupPlugin=cgroup/v1" > "$D/cgroup.conf"
}

start_munge() {
    mkdir -p "$D/munge"
    chmod 755 "$D/munge"   # clients (any user) reach the socket through it
    dd if=/dev/urandom of="$D/munge/key" bs=1024 count=1 status=none
    chmod 400 "$D/munge/key"
    setsid munged -F --socket="$D/munge/socket" --key-file="$D/munge/key" \
        --pid-file="$D/munge/pid" --log-file="$D/munge/log" --seed-file="$D/munge/seed" \
        < /dev/null >> "$D/munge/log" 2>&1 &
    disown; echo $! > "$D/munged.pid"
    local i
    for i in $(seq 50); do [ -S "$D/munge/socket" ] && return 0; sleep 0.1; done
    die "munged did not start"
}

# nsenter, not ip -n or ip netns exec: those remount / (which fails in a
# chroot) and /sys.
add_node() {
    local h=$1 i=${1#mns}
    ip netns add "$h"
    ip link add "$BR-$h" type veth peer name eth0 netns "$h"
    ip link set "$BR-$h" master "$BR" up
    nsenter --net="/run/netns/$h" ip addr add "$NET.$i/24" dev eth0
    nsenter --net="/run/netns/$h" ip link set eth0 up
    nsenter --net="/run/netns/$h" ip link set lo up
}

# A node (re)starts as after a reboot: empty spool and TmpFS. A killed
# step's pmix socket left in the spool makes the requeued job's step (same
# job and step id) fail to launch there. In a chroot / is no mount point and
# its propagation cannot be changed; the /dev/shm below stays in the node's
# namespace as long as the chroot's mounts are private (as in fresh_debian.sh's
# root on a machine without systemd).
start_slurmd() {
    local h=$1 prop=private
    mountpoint -q / || prop=unchanged
    rm -rf "$D/$h/spool" "$D/$h/tmp"
    mkdir -p "$D/$h/spool" "$D/$h/tmp"
    setsid unshare --uts --mount --propagation "$prop" nsenter --net="/run/netns/$h" \
        sh -c 'hostname "$1" && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && exec slurmd -D -f "$2"' \
        sh "$h" "$D/slurm.conf" < /dev/null >> "$D/$h/slurmd.out" 2>&1 &
    disown; echo $! > "$D/$h.pid"
}

start_slurmctld() {
    mkdir -p "$D/ctld"
    # -c: no state to load (D is new), nor errors logged for its absence
    setsid unshare --uts sh -c 'hostname "$1" && exec slurmctld -D -c -f "$2"' \
        sh "$CTL" "$D/slurm.conf" < /dev/null >> "$D/slurmctld.out" 2>&1 &
    disown; echo $! > "$D/slurmctld.pid"
}

# until all N nodes are idle (20 s at most), or a daemon exited
wait_idle() {
    local n=$1 i d idle
    for i in $(seq 200); do
        idle=$(SLURM_CONF=$D/slurm.conf sinfo -h -N -t idle -o %N 2> /dev/null | wc -l)
        [ "$idle" = "$n" ] && return 0
        for d in slurmctld $(nodes); do
            kill -0 "$(cat "$D/$d.pid")" 2> /dev/null || die "${d/mns/slurmd of mns} exited"
        done
        sleep 0.1
    done
    SLURM_CONF=$D/slurm.conf sinfo -N >&2
    die "nodes not idle after 20 s"
}

# what is left is removed, the logs' last lines shown
fail_up() {
    local f
    set +e
    for f in "$D"/munge/log "$D"/slurmctld.out "$D"/mns*/slurmd.out; do
        [ -s "$f" ] && { echo "== $f"; tail -n 5 "$f"; }
    done >&2
    down > /dev/null
    echo "slurm.sh: up failed; stopped and removed what it had started" >&2
}

up() {
    local n=${1:-2} i t0=$EPOCHREALTIME
    [[ $n =~ ^[1-9][0-9]?$ ]] || die "NODES must be 1 to 99, not '$n'"
    [[ $CPUS =~ ^[1-9][0-9]?$ ]] || die "SLURM_TB_CPUS must be 1 to 99, not '$CPUS'"
    [[ $GPUS =~ ^[0-9]$ ]] || die "SLURM_TB_GPUS must be 0 to 9, not '$GPUS'"
    need_root
    install_missing
    refuse_foreign
    down > /dev/null
    ! ip link show "$BR" > /dev/null 2>&1 || die "bridge $BR is in use by a testbed of another root (a chroot's?)"
    trap fail_up EXIT
    set -e
    mkdir -p "$D"
    touch "$D/$MARK"
    write_conf "$n"
    start_munge
    ip link add "$BR" type bridge
    ip addr add "$NET.254/24" dev "$BR"
    ip link set "$BR" up
    for i in $(seq "$n"); do add_node "mns$i"; done
    start_slurmctld
    for i in $(seq "$n"); do start_slurmd "mns$i"; done
    wait_idle "$n"
    set +e
    trap - EXIT
    say "up in $(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $t0 }") s: slurmctld on $NET.254:$PORT, nodes $(nodes | xargs) ($CPUS CPUs$([ "$GPUS" = 0 ] || echo " and $GPUS GPUs") each) on $NET.0/24"
    say "SLURM_CONF=$D/slurm.conf; clients: eval \"\$(${SLURM_TB_DIR:+SLURM_TB_DIR=$D }$0 env)\""
}

# The bridge goes last, and only once no veth is left on it: one that is
# left belongs to a testbed started from another root (a chroot's).
down() {
    local h pids=""
    for h in $(nodes); do pids="$pids $(ip netns pids "$h")"; done
    pids="$pids $(alive slurmctld) $(alive munged) $(clients)"
    kill_wait $pids
    for h in $(nodes); do
        ip link del "$BR-$h" 2> /dev/null   # at once; with its namespace, later
        ip netns del "$h"
    done
    [ -z "$(ip link show master "$BR" 2> /dev/null)" ] && ip link del "$BR" 2> /dev/null
    [ -e "$D/$MARK" ] && rm -rf "$D"
    say "down"
}

# a node dies: every process in its namespace (slurmd, steps, tasks)
kill_node() {
    local h=$1 pids
    need_node "$h"
    pids=$(ip netns pids "$h")
    kill_wait $pids
    say "$h killed ($(echo $pids | wc -w) processes)"
}

start_node() {
    local h=$1 pids
    need_node "$h"
    pids=$(ip netns pids "$h")
    [ -z "$pids" ] || die "$h is not down: pids" $pids "run in it (kill $h first)"
    start_slurmd "$h"
    say "$h: slurmd started (pid $(cat "$D/$h.pid"))"
}

# a node goes silent: its link down, its processes alive (a cable, a switch,
# a kernel hang): packets to and from it are dropped, no reset is sent
cut_node() {
    need_node "$1"
    ip link set "$BR-$1" down
    say "$1: link down (processes alive)"
}
mend_node() {
    need_node "$1"
    ip link set "$BR-$1" up
    say "$1: link up"
}

conf() { [ -e "$D/slurm.conf" ] || die "not up (no $D/slurm.conf)"; }

# Ranks that srun starts need nothing more; the ALLOW variables are for an
# mpirun as root (in a job script, say).
print_env() {
    conf
    echo "export SLURM_CONF=$D/slurm.conf"
    [ "$(id -u)" = 0 ] && echo "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
    return 0
}

status() {
    conf
    export SLURM_CONF=$D/slurm.conf
    sinfo -N -o '%N %T %C %E'
    squeue -o '%i %j %T %M %N %R'
}

cmd=${1:-}; shift || true
case $cmd in
    up) up "$@" ;;
    down) need_root; down ;;
    env) print_env ;;
    kill) [ $# = 1 ] || die "usage: $0 kill NODE"; need_root; kill_node "$1" ;;
    start) [ $# = 1 ] || die "usage: $0 start NODE"; need_root; start_node "$1" ;;
    cut) [ $# = 1 ] || die "usage: $0 cut NODE"; need_root; cut_node "$1" ;;
    mend) [ $# = 1 ] || die "usage: $0 mend NODE"; need_root; mend_node "$1" ;;
    status) status ;;
    *) echo "usage: $0 up [NODES] | env | kill NODE | start NODE | cut NODE | mend NODE | status | down" >&2; exit 2 ;;
esac
