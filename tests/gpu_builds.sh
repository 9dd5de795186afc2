#!/usr/bin/env bash
# make test-gpu: the GPU builds of pjreddie's and AlexeyAB's bases (GPU=1
# CUDNN=1 NCCL=1: compile and link; nothing runs a kernel here), then what
# make test checks of every build on theirs: the plugin's calls go one way
# (tests/layers.py) and nothing outside base/ calls Darknet
# (tests/boundary.py); where no GPU is usable, each GPU build stops at
# start, saying why, on every rank; and the bundle a lent GPU machine gets
# (scripts/gpu_bundle.sh, hank-ai's base in it too, where its snapshot is)
# holds what its programs load. Apart from make test, whose 15 minutes its
# building (3 minutes, and 5 more for the bundle's static OpenCV) would
# pass; .ci/run runs it. hank-ai's own GPU build: make test-hankai-gpu.
# Env: BUILD, TEST_BIN (make sets them), or alone from the repository root.
. "$(dirname "$0")/lib.sh"
T=$T-gpu
rm -rf "$T" && mkdir -p "$T"
if ! command -v nvcc > /dev/null; then
    # CUDA is NVIDIA's, not Debian's: a machine without it cannot check this
    # (CI's fresh root has it bound in: scripts/fresh_debian.sh).
    skipped=1
    echo "skip GPU builds of both bases: nvcc not found (NVIDIA's CUDA under /usr/local/cuda, with cuDNN and NCCL, checks them)"
    finish gpu
fi
echo "== GPU builds of both bases (compile and link only; no GPU here)"
flags=("GPU=1 CUDNN=1 NCCL=1")
t0=$SECONDS
if make -s -j"$(nproc)" GPU=1 CUDNN=1 NCCL=1 > "$T/gpu-build.log" 2>&1; then ok "make GPU=1 CUDNN=1 NCCL=1 builds $BUILD/gpu/darknet_mn ($((SECONDS - t0)) s)"
else bad "GPU build (see $T/gpu-build.log)"; tail -5 "$T/gpu-build.log"; fi
if [ -n "${ALEXEYAB_SRC:-}" ] || [ -f "${AB_SNAPSHOT:-../shared/third_party/darknet-alexeyab-59596d78.tar.xz}" ]; then
    flags+=("DARKNET=alexeyab GPU=1 CUDNN=1 NCCL=1")
    t0=$SECONDS
    if make -s -j"$(nproc)" DARKNET=alexeyab GPU=1 CUDNN=1 NCCL=1 > "$T/gpu-build-alexeyab.log" 2>&1; then
        ok "make DARKNET=alexeyab GPU=1 CUDNN=1 NCCL=1 builds $BUILD/alexeyab-gpu/darknet_mn ($((SECONDS - t0)) s)"
    else bad "AlexeyAB's GPU build (see $T/gpu-build-alexeyab.log)"; tail -5 "$T/gpu-build-alexeyab.log"; fi
else skipped=$((${skipped:-0} + 1)); echo "skip AlexeyAB's GPU build: neither ALEXEYAB_SRC nor its snapshot is here"; fi

# Without a usable GPU each GPU build stops at start, with the reason, on
# every rank, -nogpu or not (hank-ai's GPU build, when make
# test-hankai-gpu made it, too).
if ! nvidia-smi -L > /dev/null 2>&1; then
    [ -f "$D/train.list" ] || fashion_slice "$D" 64 20
    mn_cfg "$T/good.cfg"
    printf 'classes=10\ntrain=%s/train.list\nlabels=%s/labels.txt\nbackup=%s/none\n' "$D" "$D" "$T" > "$T/none.data"
    [ -x "$BUILD/gpu/darknet_mn" ] && gpu_none "$T/gpu-none" "$BUILD/gpu/darknet_mn" classifier train "$T/none.data" "$T/good.cfg" -nogpu
    [ -x "$BUILD/hankai-gpu/darknet_mn" ] && gpu_none "$T/gpu-none-hankai" "$BUILD/hankai-gpu/darknet_mn" info
fi

# The bundle a lent GPU machine gets (scripts/gpu_bundle.sh, built with
# Debian's MPICH): its .tar.gz under 64 MiB; run from its own folder, every
# library its programs load is the bundle's, glibc's, the C++ runtime's or
# NVIDIA's (which such a machine has); each build's info, started by the
# bundle's own launcher on 2 ranks, says there is no usable GPU (CUDA's
# stub driver stands in for NVIDIA's: AlexeyAB's build links the driver).
echo "== The GPU machine's bundle (scripts/gpu_bundle.sh)"
if ! command -v mpicc.mpich > /dev/null; then
    skipped=$((${skipped:-0} + 1)); echo "skip the bundle: no MPICH (scripts/deps.sh installs mpich and libmpich-dev)"
elif t0=$SECONDS && bash scripts/gpu_bundle.sh "$T/bundle" > "$T/bundle.log" 2>&1; then
    ok "$(tail -1 "$T/bundle.log") ($((SECONDS - t0)) s)"
    rm -rf "$T/unpacked" && mkdir -p "$T/unpacked" "$T/stub" && tar -C "$T/unpacked" -xzf "$T/bundle.tar.gz"
    B=$T/unpacked/bundle
    cuda=$(dirname "$(readlink -f "$(command -v nvcc)")")/..
    ln -sf "$cuda/lib64/stubs/libcuda.so" "$T/stub/libcuda.so.1"
    for p in "$B"/bin/darknet*; do
        n=${p##*/}
        LD_LIBRARY_PATH=$B/lib:$cuda/lib64:$T/stub ldd "$p" > "$T/$n.ldd" 2>&1
        foreign=$(awk -v b="$B/lib/" '/=>/ && index($3, b) != 1 { print $1 }' "$T/$n.ldd" |
            grep -Ev '^(libc|libm|libmvec|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libcurand|libcudnn.*|libnccl)\.so' | paste -sd' ')
        if grep -q "not found" "$T/$n.ldd"; then bad "bundle $n: $(grep -m2 'not found' "$T/$n.ldd" | paste -sd' ')"; continue
        elif [ -n "$foreign" ]; then bad "bundle $n loads from outside the bundle: $foreign"; continue
        elif [[ $n == darknet-*-stock ]]; then ok "bundle $n (a speed row's peer): every library resolves"; continue; fi
        (cd "$B" && LD_LIBRARY_PATH=$B/lib:$cuda/lib64:$T/stub PATH=$B/bin:$PATH timeout 60 mpiexec.hydra -n 2 "bin/$n" info) > "$T/$n.info" 2>&1
        rc=$?
        if [ $rc = 0 ] || ! grep -q "this GPU build needs a CUDA device.*CUDA has none usable" "$T/$n.info"; then
            bad "bundle $n: info on 2 ranks exit $rc: $(head -3 "$T/$n.info")"
        else ok "bundle $n: every library resolves (the bundle's, or glibc's, the C++ runtime's, NVIDIA's); info on 2 ranks through the bundle's mpiexec.hydra: exit $rc, '$(grep -o 'CUDA has none usable: [^;]*' "$T/$n.info" | head -1)'"; fi
    done
else bad "scripts/gpu_bundle.sh (see $T/bundle.log)"; tail -3 "$T/bundle.log"; fi

echo "== The plugin's layers and Darknet's boundary in the GPU builds (tests/layers.py, tests/boundary.py)"
LAYERS=$(make -s --no-print-directory print-layers)
links=()
for f in "${flags[@]}"; do
    set -- $(make -s --no-print-directory BUILD="$BUILD" $f print-link)   # Darknet's library, the plugin's, main.o
    [ -f "$2" ] || continue   # that build failed above
    if python3 tests/layers.py "$LAYERS" "$2" > "$T/layers.out" 2>&1; then cat "$T/layers.out"; pass=$((pass + 1))
    else sed 's/^/     /' "$T/layers.out" | cut -c1-600; bad "layers: $2"; fi
    links+=(--link "$@")
done
if [ ${#links[@]} -gt 0 ]; then
    if python3 tests/boundary.py "$LAYERS" main.c "${links[@]}" > "$T/boundary.out" 2>&1; then cat "$T/boundary.out"; pass=$((pass + 1))
    else sed 's/^/     /' "$T/boundary.out" | head -20 | cut -c1-300; bad "boundary: $(grep -c FAIL "$T/boundary.out") network or layer reads or Darknet calls outside base/ in the GPU builds"; fi
fi
finish gpu
