#!/usr/bin/env bash
# Allreduce across 2 hosts x 2 ranks (network namespaces, scripts/testbed.sh),
# with the link unlimited and capped at 1 Gbit/s per host: every communicator,
# float32 and float16, against a bare MPI_Allreduce. Results in bench/results/.
set -u
cd "$(dirname "$0")/.."
R=bench/results
mkdir -p "$R"
tb=scripts/testbed.sh
trap '$tb down > /dev/null' EXIT
host="$(uname -n), $(nproc) cores, $(mpirun --version | head -1)"
for rate in "" 1gbit; do
    name=testbed-2x2-${rate:-unlimited}.txt
    $tb up $rate > /dev/null || exit 1
    cmd="scripts/testbed.sh run 4 ./darknet_mn bench allreduce -iters ${ITERS:-8} -max 67108864"
    { echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $host; testbed links: ${rate:-unlimited}"
      echo "# command: scripts/testbed.sh up $rate && $cmd"
      timeout 580 $cmd 2> /dev/null; } | tee "$R/$name"
    $tb down > /dev/null
done
