#!/usr/bin/env bash
# A multi-host testbed on one machine: hosts are network namespaces (each with
# its own UTS namespace and hostname, so Open MPI's shared-memory segments of
# different "hosts" cannot collide), joined by veth pairs to a bridge in the
# root namespace; Open MPI launches ranks into them over TCP through an rsh
# agent that enters the namespace. Traffic stays on 10.77.0.0/24.
#
#   scripts/testbed.sh up [RATE [DELAY]]   # RATE caps each host's link, e.g. 1gbit (tc tbf);
#                                          # DELAY adds one-way latency, e.g. 2ms (tc netem)
#   scripts/testbed.sh run NP CMD...   # mpiexec across the hosts, NP/2 ranks per host
#   scripts/testbed.sh down
#   scripts/testbed.sh rsh HOST CMD... # the rsh agent (used by run)
set -u
HOSTS="mnA mnB"
NET=10.77.0
BR=mnbr0
here=$(cd "$(dirname "$0")" && pwd)

ip_of() { case $1 in mnA) echo $NET.1 ;; mnB) echo $NET.2 ;; *) return 1 ;; esac; }
host_of() { case $1 in $NET.1 | mnA) echo mnA ;; $NET.2 | mnB) echo mnB ;; *) return 1 ;; esac; }

down() {
    for h in $HOSTS; do
        ip netns pids "$h" 2> /dev/null | xargs -r kill -9 2> /dev/null
        ip link del "v$h" 2> /dev/null   # veths before namespaces
        ip netns del "$h" 2> /dev/null
    done
    ip link del "$BR" 2> /dev/null
    return 0
}

up() {
    local rate=${1:-} delay=${2:-}
    down
    if [ -n "$delay" ] && ! grep -qs 'CONFIG_NET_SCH_NETEM=[ym]' /boot/config-"$(uname -r)" <(zcat /proc/config.gz 2> /dev/null); then
        echo "testbed: DELAY needs tc netem, which this kernel ($(uname -r)) does not have (CONFIG_NET_SCH_NETEM)" >&2
        return 1
    fi
    set -e
    ip link add "$BR" type bridge
    ip addr add $NET.254/24 dev "$BR"
    ip link set "$BR" up
    for h in $HOSTS; do
        ip netns add "$h"
        ip link add "v$h" type veth peer name eth0 netns "$h"
        ip link set "v$h" master "$BR" up
        ip -n "$h" addr add "$(ip_of "$h")/24" dev eth0
        ip -n "$h" link set eth0 up
        ip -n "$h" link set lo up
        # Both directions: egress inside the host, and egress towards it on
        # the bridge side; netem (delay) first, tbf (rate) under it.
        local dev run parent
        for dev in eth0 "v$h"; do
            run=(); [ "$dev" = eth0 ] && run=(ip netns exec "$h")
            parent=root
            if [ -n "$delay" ]; then
                "${run[@]}" tc qdisc add dev "$dev" root handle 1: netem delay "$delay"
                parent="parent 1:"
            fi
            [ -n "$rate" ] && "${run[@]}" tc qdisc add dev "$dev" $parent handle 2: tbf rate "$rate" burst 512kb latency "${TESTBED_TBF_LATENCY:-100ms}"
        done
    done
    set +e
    echo "testbed: hosts $HOSTS on $NET.0/24${rate:+, links capped at $rate}${delay:+, $delay one way}"
}

# Open MPI calls: <agent> [options] <host> <command...>
rsh() {
    while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
    local h; h=$(host_of "$1") || { echo "testbed: unknown host $1" >&2; exit 1; }
    shift
    exec ip netns exec "$h" unshare --uts sh -c "hostname $h && exec $*"
}

# The hosts share this machine's cores, which Open MPI cannot see (each host
# offers NP/2 slots): with more ranks than cores, busy-polling ranks starve
# each other for a scheduler tick (8 ms for any collective, measured), so
# they yield when idle (50 us).
run() {
    local np=$1; shift
    local per=$((np / 2)) yield=()
    [ "$np" -gt "$(nproc)" ] && yield=(--mca mpi_yield_when_idle 1)
    # a bench may force it either way; else darknet_mn chooses (main.c)
    [ -n "${TESTBED_YIELD:-}" ] && yield=(--mca mpi_yield_when_idle "$TESTBED_YIELD")
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        mpiexec -n "$np" --host "$NET.1:$per,$NET.2:$per" "${yield[@]}" \
        --mca plm_rsh_agent "$here/testbed.sh rsh" \
        --mca oob_tcp_if_include $NET.0/24 --mca btl_tcp_if_include $NET.0/24 \
        --mca btl self,vader,tcp --bind-to none --oversubscribe \
        -x PATH --wdir "$(pwd)" "$@"
}

cmd=${1:-}; shift || true
case $cmd in
    up) up "$@" ;;
    down) down ;;
    rsh) rsh "$@" ;;
    run) run "$@" ;;
    *) echo "usage: $0 up [RATE [DELAY]] | run NP CMD... | down" >&2; exit 2 ;;
esac
