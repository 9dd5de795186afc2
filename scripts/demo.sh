#!/usr/bin/env bash
# make demo: trains cfg/fashion.cfg on Fashion-MNIST with 2 MPI ranks on CPU for
# a few minutes, then scores the weights it wrote on the 10,000 test images
# with the multi-node evaluator.
set -eu
cd "$(dirname "$0")/.."
NP=${NP:-2}
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p build/backup
rm -f build/backup/fashion_final.weights
echo "== training on $NP ranks: mpiexec -n $NP ./darknet_mn classifier train cfg/fashion.data cfg/fashion.cfg"
mpiexec --oversubscribe -n "$NP" ./darknet_mn classifier train cfg/fashion.data cfg/fashion.cfg 2> build/demo-train.log \
    || { tail -20 build/demo-train.log; exit 1; }
echo "== test set: mpiexec -n $NP ./darknet_mn classifier valid cfg/fashion.data cfg/fashion.cfg build/backup/fashion_final.weights"
mpiexec --oversubscribe -n "$NP" ./darknet_mn classifier valid cfg/fashion.data cfg/fashion.cfg build/backup/fashion_final.weights 2> build/demo-valid.log \
    || { tail -20 build/demo-valid.log; exit 1; }
