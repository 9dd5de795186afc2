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
#   bin/cpu/  the same programs' CPU builds (with MPICH, without OpenBLAS,
#          oneDNN and cairo, whose libraries would take the bundle past its
#          64 MiB): the bundle's rehearsal on a machine without a GPU;
#   run.sh    scripts/gpu_run.sh: on the GPU machine, from a clone of this
#             repository, bash DIR/run.sh [OUT] runs the probe, the check
#             (scripts/gpu_check.sh) on each base and the forks' speed rows
#             (scripts/gpu_speed.sh) within its budget, and ends with a
#             tally of each base's rows and the verdict; GPU_REHEARSAL=1
#             runs the same plan on bin/cpu/ (make test-gpu does);
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
# The rehearsal's CPU builds, each base's where its GPU build is made.
R=build/mpich/rehearsal
mkdir -p $R
cpu=(BUILD=build/mpich MPICC=mpicc.mpich MPICXX=mpicxx.mpich BLAS=0 DNNL=0 CAIRO=0)
hk_cli=build/mpich/hankai-cpu-noblas-nodnnl-nocairo/darknet-fork   # the fork's CLI, in the folder of those settings
make -s -j"$(nproc)" "${cpu[@]}" PROG=$R/darknet_mn $R/darknet_mn
if [ $ab = 1 ]; then
    make -s -j"$(nproc)" "${cpu[@]}" DARKNET=alexeyab PROG=$R/darknet_mn-alexeyab $R/darknet_mn-alexeyab
fi
if [ $hk = 1 ]; then
    make -s -j"$(nproc)" "${cpu[@]}" DARKNET=hankai OPENCV_PREFIX="$PWD/third_party/opencv-static" \
        PROG=$R/darknet_mn-hankai $R/darknet_mn-hankai $hk_cli
fi
make -s build/cpu/tests/mn_wcmp build/cpu/tests/mn_shapes build/tools/mn_fashion
rm -rf "$out" "$out.tar.gz" && mkdir -p "$out/bin/cpu" "$out/lib"
cp $R/darknet_mn "$out/bin/cpu/"
cp build/mpich/gpu/darknet_mn build/cpu/tests/mn_wcmp /usr/bin/mpiexec.hydra /usr/bin/hydra_pmi_proxy "$out/bin/"
if [ $hk = 1 ]; then
    cp build/mpich/hankai-gpu/darknet_mn "$out/bin/darknet_mn-hankai"
    cp build/mpich/hankai-gpu/darknet-fork "$out/bin/darknet-hankai-stock"
    cp $R/darknet_mn-hankai "$out/bin/cpu/"
    cp $hk_cli "$out/bin/cpu/darknet-hankai-stock"
fi
if [ $ab = 1 ]; then
    cp build/mpich/alexeyab-gpu/darknet_mn "$out/bin/darknet_mn-alexeyab"
    cp third_party/darknet-alexeyab-stock-gpu/darknet "$out/bin/darknet-alexeyab-stock"
    cp $R/darknet_mn-alexeyab "$out/bin/cpu/"
    cp third_party/darknet-alexeyab-cpu-noblas/darknet "$out/bin/cpu/darknet-alexeyab-stock"   # the fork's CLI, built with it: the rehearsal's peer
    mkdir -p "$out/speed/images/train" "$out/speed/labels/train"
    cp third_party/darknet-alexeyab-stock-gpu/cfg/yolov4-tiny.cfg "$out/speed/"
    for f in $(ls build/fashion-det/images/train/*.jpg | head -256); do
        n=$(basename "$f" .jpg)
        # each label in both layouts: AlexeyAB's labels/ folder, hank-ai's beside the image
        cp "$f" "build/fashion-det/labels/train/$n.txt" "$out/speed/images/train/" && cp "build/fashion-det/labels/train/$n.txt" "$out/speed/labels/train/"
    done
fi
# The machine's own: glibc, the C++ runtime (a newer one serves), NVIDIA's.
mine='^(linux-vdso|ld-linux|libc|libm|libmvec|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libcurand|libcudnn.*|libnccl)\.so'
for b in "$out"/bin/* "$out"/bin/cpu/*; do
    [ -f "$b" ] || continue
    ldd "$b" | awk '$3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
    [[ $name =~ $mine ]] || cp -L "$path" "$out/lib/$name"
done
build/tools/mn_fashion /usr/share/datasets/fashion-mnist "$out/fashion" --limit-train 256 --limit-test 64 > /dev/null
build/cpu/tests/mn_shapes "$out/shapes" train 16 1 jpg > /dev/null
build/cpu/tests/mn_shapes "$out/shapes" valid 8 2 jpg > /dev/null
rm -f "$out"/shapes/*.list   # paths of this machine; gpu_check.sh lists the images where they are
cp scripts/gpu_run.sh "$out/run.sh"
chmod +x "$out/run.sh"
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"
bytes=$(stat -c %s "$out.tar.gz")
echo "gpu_bundle: $out ($(du -sh "$out" | cut -f1)), $out.tar.gz $((bytes / 1048576)) MiB"
[ "$bytes" -le $((64 * 1048576)) ] || { echo "gpu_bundle: $out.tar.gz is past the 64 MiB a lent GPU machine takes" >&2; exit 1; }
