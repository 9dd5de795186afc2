#!/usr/bin/env bash
# scripts/gpu_bundle.sh DIR: the GPU check (docs/gpu-check.md) packed for a
# machine that has NVIDIA's driver, CUDA 13, cuDNN 9 and NCCL 2 but none of
# Debian's packages and no MPI: a borrowed GPU box, a container image.
# DIR gets
#   bin/   the GPU builds of darknet_mn linked with Debian's MPICH:
#          pjreddie's base (darknet_mn), AlexeyAB's (darknet_mn-alexeyab)
#          and hank-ai's (darknet_mn-hankai, with a static OpenCV), each
#          fork's where its snapshot is here; each fork's own darknet for
#          the speed rows: AlexeyAB's unpatched (darknet-alexeyab-stock),
#          hank-ai's CLI from the tree darknet-mn builds (its hooks unset;
#          darknet-hankai-stock, with the same static OpenCV); MPICH's
#          launcher (mpiexec.hydra and its proxy, which it finds beside
#          itself), mn_wcmp;
#   lib/   every library these need but glibc, the C++ runtime and NVIDIA's
#          (CUDA, cuBLAS, cuRAND, cuDNN, NCCL: the GPU machine's own);
#   fashion/  the 256 + 64 Fashion-MNIST images the classifier trains on;
#   shapes/   mn_shapes' 16 + 8 images the detector trains on;
#   speed/    AlexeyAB's cfg/yolov4-tiny.cfg (hank-ai's is the same net) and
#             256 images of make fashion-det-data, for the speed rows
#             (scripts/gpu_speed.sh);
#   run.sh    on the GPU machine, from this repository's root:
#             bash DIR/run.sh [OUT] runs scripts/gpu_check.sh on each base
#             (AlexeyAB's, hank-ai's, then pjreddie's), then the speed
#             rows (AlexeyAB's, hank-ai's), each phase within its own
#             timeout (PHASE_S, 90 s; SPEED_S, 70 s, one round of each
#             run) and all of them within RUN_S (420 s, the probe's minute
#             included: the 7 minutes asked, so that a rerun still fits
#             the 15 minutes of device time a task gets, the machine's
#             start counted), finding NVIDIA's
#             libraries where the machine keeps them, and leaves its logs
#             in OUT (default DIR/out), each result appended as it comes;
# and DIR.tar.gz, what is carried to the GPU machine (it must stay under
# the 64 MiB a lent machine takes: this script fails past it).
# hank-ai's base links a static OpenCV of the four modules it uses
# (scripts/opencv_static.sh; Debian's shared ones are 325 MB with theirs).
# MPICH rather than Open MPI: its launcher runs from any folder, where Open
# MPI's looks for its components and PMIx's under the prefix it was built for.
# Built for the lent machine's GPU alone (an H200: BUNDLE_ARCHS=90, what
# docs/gpu-check.md's machine has), in a quarter of the time of make's list.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu_bundle.sh DIR}
command -v mpicc.mpich > /dev/null || { echo "gpu_bundle: needs Debian's MPICH (apt-get install mpich libmpich-dev)" >&2; exit 2; }
archs=CUDA_ARCHS=${BUNDLE_ARCHS:-90}
make -s -j"$(nproc)" BUILD=build/mpich MPICC=mpicc.mpich "$archs" GPU=1 CUDNN=1 NCCL=1 build/mpich/gpu/darknet_mn
ab=0
if [ -n "${ALEXEYAB_SRC:-}" ] || [ -f "${AB_SNAPSHOT:-../shared/third_party/darknet-alexeyab-59596d78.tar.xz}" ]; then
    make -s -j"$(nproc)" BUILD=build/mpich MPICC=mpicc.mpich "$archs" DARKNET=alexeyab GPU=1 CUDNN=1 NCCL=1 build/mpich/alexeyab-gpu/darknet_mn
    make -s "$archs" third_party/darknet-alexeyab-stock-gpu/darknet fashion-det-data
    ab=1
fi
hk=0
if [ -f "${HK_SNAPSHOT:-../shared/third_party/darknet-hankai-f684e1d7.tar.xz}" ]; then
    make -s deps DARKNET=hankai   # the fork's CMake and OpenCV, libjpeg's and libpng's headers
    bash scripts/opencv_static.sh third_party/opencv-static
    make -s -j"$(nproc)" BUILD=build/mpich MPICC=mpicc.mpich MPICXX=mpicxx.mpich "$archs" DARKNET=hankai GPU=1 CUDNN=1 NCCL=1 \
        OPENCV_PREFIX="$PWD/third_party/opencv-static" build/mpich/hankai-gpu/darknet_mn build/mpich/hankai-gpu/darknet-fork
    hk=1
fi
make -s build/cpu/tests/mn_wcmp build/cpu/tests/mn_shapes build/tools/mn_fashion
rm -rf "$out" "$out.tar.gz" && mkdir -p "$out/bin" "$out/lib"
cp build/mpich/gpu/darknet_mn build/cpu/tests/mn_wcmp /usr/bin/mpiexec.hydra /usr/bin/hydra_pmi_proxy "$out/bin/"
if [ $hk = 1 ]; then
    cp build/mpich/hankai-gpu/darknet_mn "$out/bin/darknet_mn-hankai"
    cp build/mpich/hankai-gpu/darknet-fork "$out/bin/darknet-hankai-stock"
fi
if [ $ab = 1 ]; then
    cp build/mpich/alexeyab-gpu/darknet_mn "$out/bin/darknet_mn-alexeyab"
    cp third_party/darknet-alexeyab-stock-gpu/darknet "$out/bin/darknet-alexeyab-stock"
    mkdir -p "$out/speed/images/train" "$out/speed/labels/train"
    cp third_party/darknet-alexeyab-stock-gpu/cfg/yolov4-tiny.cfg "$out/speed/"
    for f in $(ls build/fashion-det/images/train/*.jpg | head -256); do
        n=$(basename "$f" .jpg)
        cp "$f" "$out/speed/images/train/" && cp "build/fashion-det/labels/train/$n.txt" "$out/speed/labels/train/"
    done
fi
# The machine's own: glibc, the C++ runtime (a newer one serves), NVIDIA's.
mine='^(linux-vdso|ld-linux|libc|libm|libmvec|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libcurand|libcudnn.*|libnccl)\.so'
for b in "$out"/bin/*; do
    ldd "$b" | awk '$3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
    [[ $name =~ $mine ]] || cp -L "$path" "$out/lib/$name"
done
build/tools/mn_fashion /usr/share/datasets/fashion-mnist "$out/fashion" --limit-train 256 --limit-test 64 > /dev/null
build/cpu/tests/mn_shapes "$out/shapes" train 16 1 jpg > /dev/null
build/cpu/tests/mn_shapes "$out/shapes" valid 8 2 jpg > /dev/null
rm -f "$out"/shapes/*.list   # paths of this machine; gpu_check.sh lists the images where they are
cat > "$out/run.sh" << 'EOF'
#!/usr/bin/env bash
# On the GPU machine, from the repository's root: bash BUNDLE/run.sh [OUT].
set -u
B=$(cd "$(dirname "$0")" && pwd)
O=${1:-$B/out}
mkdir -p "$O"
end=$((SECONDS + ${RUN_S:-420}))   # the whole, probe included (budget below)
# NVIDIA's libraries wherever this machine keeps them: the CUDA toolkit, or
# the pip wheels a PyTorch image carries (nvidia/*/lib).
nv=$(for l in libcudart.so.13 libcublas.so.13 libcurand.so.10 libcudnn.so.9 libnccl.so.2; do
         find /usr/local/cuda*/ /usr/lib /opt /usr/local/lib -name "$l" 2> /dev/null | head -1
     done | xargs -r -n1 dirname | awk '!seen[$0]++' | paste -sd:)
export LD_LIBRARY_PATH=$B/lib${nv:+:$nv}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$B/bin:/usr/local/cuda/bin:$PATH
{
    echo "== bundle: $B; NVIDIA's libraries from: ${nv:-none found}"
    nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    for p in "$B"/bin/darknet_mn*; do
        echo "-- $p"
        ldd "$p" | grep -E "not found|cudnn|nccl|cublas|cudart|mpich"
        timeout 120 mpiexec.hydra -n 1 "$p" info; echo "info on 1 rank: exit $?"
        timeout 120 mpiexec.hydra -n 2 "$p" info; echo "info on 2 ranks: exit $?"
    done
    # A figure, not a check: one rank's training step on the demo's detector.
    timeout 120 mpiexec.hydra -n 1 "$B/bin/darknet_mn" bench step cfg/fashion-det.cfg -iters 20; echo "bench step: exit $?"
} > "$O/probe.log" 2>&1
cat "$O/probe.log"
# One phase a base, the forks' first (YOLO's users train on them), then the
# speed rows; a phase past its time (PHASE_S, SPEED_S, or what is left of
# RUN_S for the whole) is killed and the next one starts, every line
# already in its log kept.
budget() {   # budget PHASE WANT: seconds for it, or 0 (and a line) where RUN_S is spent
    local left=$((end - SECONDS))
    [ "$left" -gt "$2" ] && left=$2
    [ "$left" -ge 20 ] && { echo "$left"; return; }
    echo "== $1: not run, RUN_S (${RUN_S:-420} s) spent" | tee -a "$O/gpu-check.log" >&2
    echo 0
}
for base in alexeyab hankai pjreddie; do
    p=$B/bin/darknet_mn$([ $base = pjreddie ] || echo "-$base")
    [ -x "$p" ] || { echo "== $base: not in this bundle" | tee -a "$O/gpu-check.log"; continue; }
    mkdir -p "$O/$base"
    s=$(budget "$base" "${PHASE_S:-90}"); [ "$s" = 0 ] && continue
    BUILD=${BUILD:-build} DARKNET=$base PROG=$p MPI=mpiexec.hydra WCMP=$B/bin/mn_wcmp GPU_DATA=$B/fashion \
        GPU_DET_DATA=$B/shapes GPU_CHECK_OUT=$O/$base SAN_TIMEOUT=${SAN_TIMEOUT:-40} timeout "$s" bash scripts/gpu_check.sh 2>&1 |
        tee -a "$O/gpu-check.log"
    echo "== $base: exit ${PIPESTATUS[0]}" | tee -a "$O/gpu-check.log"
done
# The speed rows: each fork's own darknet against darknet-mn on its base
# (hank-ai's with the same yolov4-tiny.cfg: the fork's is the same net).
for base in alexeyab hankai; do
    [ -x "$B/bin/darknet-$base-stock" ] && [ -f "$B/speed/yolov4-tiny.cfg" ] || continue
    s=$(budget "speed $base" "${SPEED_S:-70}"); [ "$s" = 0 ] && continue
    SPEED_ROUNDS=${SPEED_ROUNDS:-1} STOCK=$B/bin/darknet-$base-stock PROG=$B/bin/darknet_mn-$base MPI=mpiexec.hydra CFG=$B/speed/yolov4-tiny.cfg \
        DET_DATA=$B/speed OUT=$O timeout "$s" bash scripts/gpu_speed.sh 2>&1 | tee -a "$O/gpu-check.log"
    echo "== speed $base: exit ${PIPESTATUS[0]}" | tee -a "$O/gpu-check.log"
done
EOF
chmod +x "$out/run.sh"
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
bytes=$(stat -c %s "$out.tar.gz")
echo "gpu_bundle: $out ($(du -sh "$out" | cut -f1)), $out.tar.gz $((bytes / 1048576)) MiB"
[ "$bytes" -le $((64 * 1048576)) ] || { echo "gpu_bundle: $out.tar.gz is past the 64 MiB a lent GPU machine takes" >&2; exit 1; }
