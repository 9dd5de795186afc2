#!/usr/bin/env bash
# scripts/opencv_static.sh PREFIX: OpenCV's core, imgproc, imgcodecs and
# highgui as static libraries in PREFIX, from Debian's source package (the
# version hank-ai's build uses through libopencv-dev), for the GPU
# machine's bundle (scripts/gpu_bundle.sh). hank-ai's Darknet reads and
# draws images with these four; Debian's shared ones load GDAL, OpenEXR,
# GTK and more, 325 MB in all, past the 64 MiB a lent GPU machine takes.
# Here: JPEG and PNG only (Debian's libjpeg and libpng, small enough to
# travel), no GUI backend (the bundle trains with -dont_show), no video, no
# OpenCL, IPP or TBB, and SSE3 code alone (OpenCV's AVX2 and AVX-512
# variants of 86 files took a fifth of the build: the check reads a few
# hundred small images). About 4 minutes on 2 cores. Needs cmake, a
# deb-src line and libjpeg's and libpng's -dev packages (scripts/deps.sh
# hankai installs them). Does nothing when PREFIX holds a build of the same
# settings.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
prefix=$(realpath -m "${1:?usage: scripts/opencv_static.sh PREFIX}")
settings=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DBUILD_LIST=core,imgproc,imgcodecs,highgui
    -DBUILD_TESTS=OFF -DBUILD_PERF_TESTS=OFF -DBUILD_EXAMPLES=OFF -DBUILD_opencv_apps=OFF -DBUILD_DOCS=OFF
    -DBUILD_JAVA=OFF -DBUILD_opencv_python3=OFF -DBUILD_opencv_python2=OFF -DOPENCV_GENERATE_PKGCONFIG=ON
    -DWITH_GTK=OFF -DWITH_QT=OFF -DWITH_OPENGL=OFF -DWITH_OPENCL=OFF -DWITH_VA=OFF -DWITH_VA_INTEL=OFF -DWITH_IPP=OFF
    -DWITH_TBB=OFF -DWITH_OPENMP=OFF -DWITH_EIGEN=OFF -DWITH_LAPACK=OFF -DWITH_CUDA=OFF -DWITH_FFMPEG=OFF
    -DWITH_GSTREAMER=OFF -DWITH_V4L=OFF -DWITH_1394=OFF -DWITH_TIFF=OFF -DWITH_WEBP=OFF -DWITH_OPENJPEG=OFF
    -DWITH_JASPER=OFF -DWITH_OPENEXR=OFF -DWITH_GDAL=OFF -DWITH_GDCM=OFF -DWITH_IMGCODEC_HDR=OFF
    -DWITH_IMGCODEC_SUNRASTER=OFF -DWITH_IMGCODEC_PXM=OFF -DWITH_IMGCODEC_PFM=OFF -DWITH_PROTOBUF=OFF -DWITH_ITT=OFF
    -DWITH_QUIRC=OFF -DWITH_ADE=OFF -DWITH_AVIF=OFF -DWITH_SPNG=OFF -DCV_TRACE=OFF
    -DWITH_JPEG=ON -DWITH_PNG=ON -DBUILD_JPEG=OFF -DBUILD_PNG=OFF -DBUILD_ZLIB=OFF -DCPU_DISPATCH=)
stamp=$prefix/settings.txt
if [ -f "$prefix/lib/libopencv_core.a" ] && [ "$(cat "$stamp" 2> /dev/null)" = "${settings[*]}" ]; then exit 0; fi
for h in jpeglib.h png.h zlib.h; do
    echo "#include <$h>" | gcc -E -x c - > /dev/null 2>&1 ||
        { echo "opencv_static: $h missing (apt-get install libjpeg-dev libpng-dev zlib1g-dev)" >&2; exit 2; }
done
command -v cmake > /dev/null || { echo "opencv_static: needs cmake (apt-get install cmake)" >&2; exit 2; }
dl=$top/third_party/dl
if ! ls "$dl"/opencv_*.orig.tar.xz > /dev/null 2>&1; then
    mkdir -p "$dl"
    (cd "$dl" && apt-get source -qq --download-only opencv > "$dl/opencv.log" 2>&1) ||
        { tail -3 "$dl/opencv.log" >&2; echo "opencv_static: apt-get source opencv failed (a deb-src line for bookworm main is needed)" >&2; exit 2; }
fi
orig=$(ls "$dl"/opencv_*.orig.tar.xz | head -1)
work=$prefix.work
rm -rf "$work" "$prefix" && mkdir -p "$work/src"
tar -C "$work/src" --strip-components=1 -xJf "$orig"
echo "opencv_static: building $(basename "$orig") into $prefix"
cmake -S "$work/src" -B "$work/build" "-DCMAKE_INSTALL_PREFIX=$prefix" "${settings[@]}" > "$work/cmake.log" 2>&1 ||
    { tail -20 "$work/cmake.log" >&2; exit 1; }
make -C "$work/build" -s -j"$(nproc)" install > "$work/make.log" 2>&1 || { tail -20 "$work/make.log" >&2; exit 1; }
printf '%s' "${settings[*]}" > "$stamp"
rm -rf "$work"
