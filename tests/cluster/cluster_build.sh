#!/usr/bin/env bash
# The build as a cluster user has it (issue 41): not root, no sudo, what
# the admin installed (make test's and make's packages are here, as root
# installed them), a copy of the checkout as a clone has it (no build
# outputs, no third_party/), in the user's home:
#  - on Debian: make fetches Darknet's source package without root and
#    builds; 2 ranks train a classifier;
#  - dpkg and apt out of reach (a system that is not Debian; each replaced
#    by a program that fails, in a mount namespace): make stops with one
#    list naming what is missing (pjreddie's Darknet source, a bad MPICC),
#    with the packages of each system and no install tried; a clone of
#    pjreddie/darknet whose src/network.c moved on stops naming the patch
#    and the commit the patches are for, and leaves no patched tree; with
#    DARKNET_SRC naming a clone at that commit, make builds and 2 ranks
#    train; without oneDNN and cairo, and oneDNN from DNNL_ROOT;
#  - hank-ai's base, not Debian, its OpenCV and 64-bit OpenBLAS under /opt
#    as modules give them and Debian's hidden: named nothing, one list of
#    both; a 32-bit OpenBLAS refused; OPENCV_ROOT and OPENBLAS64_ROOT build
#    and 2 ranks train a detector; make again without OpenCV's module
#    stops with one line; the GPU build configures with OpenCV from
#    PKG_CONFIG_PATH and cuDNN from CPATH and LIBRARY_PATH.
# Root (it makes the user and the namespace). Run by make test-cluster.
. "$(dirname "$0")/../helpers/lib.sh"
F=$T/build-user
U=mnbuild
H=/home/$U
top=$(pwd)
rm -rf "$F" && mkdir -p "$F"
[ "$(id -u)" = 0 ] || { bad "cluster_build.sh needs root (a user of its own, a mount namespace)"; finish build-user; }
if ! id "$U" > /dev/null 2>&1; then
    # useradd is not in a minimal Debian (passwd is not essential): the lines it would write.
    if command -v useradd > /dev/null; then useradd -M -d "$H" -s /bin/bash "$U"
    else
        uid=$(awk -F: 'BEGIN { m = 1000 } $3 >= m && $3 < 60000 { m = $3 + 1 } END { print m }' /etc/passwd)
        echo "$U:x:$uid:$uid::$H:/bin/bash" >> /etc/passwd
        echo "$U:x:$uid:" >> /etc/group
    fi
fi
rm -rf "$H" && mkdir -p "$H"
# The checkout without what a build made or fetched (a clone's content).
clean_copy "$H/darknet-mn"
# pjreddie/darknet at the commit the patches are for: Debian's orig tarball is that commit's tree.
orig=$(ls "$top"/third_party/dl/darknet_*.orig.tar.xz 2> /dev/null | head -1)
mkdir -p "$H/pjreddie" && tar -C "$H/pjreddie" --strip-components=1 -xJf "$orig"
git -C "$H/pjreddie" init -q && git -C "$H/pjreddie" add -A &&
    git -C "$H/pjreddie" -c user.name=t -c user.email=t@t commit -qm "61c9d02e, from Debian's orig tarball"
cp -a "$H/pjreddie" "$H/pjreddie-newer"
sed -i 's|size_t batch_num = (\*net->seen)/(net->batch\*net->subdivisions);|size_t batch_num = get_current_batch(net);|' "$H/pjreddie-newer/src/network.c"
fashion_slice "$H/data" 64 16
mn_cfg "$H/c.cfg" batch=4 max_batches=4
printf 'classes=10\ntrain=%s/train.list\nlabels=%s/labels.txt\nbackup=%s/backup\n' "$H/data" "$H/data" "$H" > "$H/c.data"
mkdir -p "$H/backup"
chown -R "$U:" "$H"

# as_user SCRIPT: SCRIPT in bash as the user, in an environment of its own
# (what a login gives: no root's Open MPI variables), output in $F/NAME.
as_user() {
    setpriv --reuid="$U" --regid="$U" --init-groups env -i HOME="$H" USER="$U" LOGNAME="$U" LANG=C.UTF-8 \
        PATH=/usr/local/bin:/usr/bin:/bin OMPI_MCA_rmaps_base_oversubscribe=1 bash -c "cd ~/darknet-mn && $1"
}
# Each row's training from scratch: the row before's weights go first (beside them it is refused).
train() { echo "rm -f ~/backup/c_*.weights && mpiexec -n 2 ./darknet_mn classifier train ~/c.data ~/c.cfg && ls ~/backup/c_final.weights"; }

# 1. Debian, not root, no sudo.
as_user "make -j2 && $(train)" > "$F/debian.log" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q '^deps: ok' "$F/debian.log" && ! grep -q 'sudo' "$F/debian.log" &&
   [ "$(stat -c %U "$H"/darknet-mn/third_party/dl/darknet_*.dsc 2> /dev/null)" = "$U" ] && grep -q '^4: ' "$F/debian.log"; then
    ok "Debian, as $U without sudo: make fetched Darknet's source package and built, 2 ranks trained to $(grep -o '^4: loss [0-9.]*' "$F/debian.log")"
else bad "Debian, as $U: make and a training (status $rc; see $F/debian.log): $(grep -m3 -i 'error\|deps:\|denied' "$F/debian.log")"; fi

# 2. Not Debian: dpkg and apt replaced by a program that fails, in a mount namespace.
printf '#!/bin/sh\necho "$0: not on this system" >&2\nexit 127\n' > "$F/absent"
chmod 755 "$F/absent"
hide="set -e;"
for b in dpkg dpkg-query dpkg-source apt apt-get apt-cache sudo; do
    [ -e /usr/bin/$b ] && hide+=" mount --bind $F/absent /usr/bin/$b;"
done
not_debian() { unshare -m --propagation private bash -c "$hide set +e; $(declare -f as_user); U=$U H=$H as_user \"\$1\"" - "$1"; }
hide_os=$hide
rm -rf "$H/darknet-mn" && clean_copy "$H/darknet-mn" && chown -R "$U:" "$H/darknet-mn"

not_debian "make MPICC=mpicc.none" > "$F/none.log" 2>&1
rc=$?
list=$(sed -n '/^deps: .*needs what is not here/,$p' "$F/none.log")
if [ $rc != 0 ] && [ "$(grep -c 'needs what is not here' "$F/none.log")" = 1 ] &&
   echo "$list" | grep -q "^  MPI (mpicc.none) .*" && echo "$list" | grep -q 'RHEL/Rocky: openmpi-devel' &&
   echo "$list" | grep -q "^  pjreddie's Darknet .*github.com/pjreddie/darknet.*DARKNET_SRC=<clone>" &&
   ! grep -q 'not on this system\|installing' "$F/none.log" && [ ! -e "$H/darknet-mn/darknet_mn" ]; then
    ok "not Debian: make stops (status $rc) with one list: $(echo "$list" | grep -c '^  [^ ]') missing, each with Debian, RHEL and Spack names; no install tried"
else bad "not Debian, nothing to build with: status $rc, $F/none.log: $(head -c 600 "$F/none.log")"; fi

not_debian "make DARKNET_SRC=~/pjreddie-newer" > "$F/newer.log" 2>&1
rc=$?
if [ $rc != 0 ] && grep -q "patches/0001-update-hook-and-global-seen.patch does not apply to $H/pjreddie-newer" "$F/newer.log" &&
   grep -q 'made for https://github.com/pjreddie/darknet commit 61c9d02ec461e30d55762ec7669d6a1d3c356fb2' "$F/newer.log" &&
   [ ! -e "$H/darknet-mn/third_party/darknet-cpu" ]; then
    ok "a clone past the patches' commit: make stops naming the patch and commit 61c9d02e, no patched tree left"
else bad "a clone the patches do not fit: status $rc, $(grep -m3 'darknet-mn\|patch' "$F/newer.log")"; fi

not_debian "make -j2 DARKNET_SRC=~/pjreddie && $(train)" > "$F/clone.log" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q '^4: ' "$F/clone.log" && [ -z "$(ls "$H"/darknet-mn/third_party/dl/*.dsc 2> /dev/null)" ]; then
    ok "not Debian, DARKNET_SRC=<clone of pjreddie/darknet>: make built, 2 ranks trained to $(grep -o '^4: loss [0-9.]*' "$F/clone.log")"
else bad "not Debian with DARKNET_SRC: status $rc (see $F/clone.log): $(grep -m3 -i 'error\|deps:' "$F/clone.log")"; fi

# oneDNN where no compiler looks (its headers hidden under /usr/include)
# and no cairo pkg-config knows of: the build goes on without them, said as
# make links and by info; DNNL_ROOT names
# a prefix holding it (its headers, and the same libraries) and the engine
# is back.
mkdir -p "$F/empty" "$H/onednn/include" "$H/onednn/lib"
cp -a /usr/include/oneapi "$H/onednn/include/"
ln -s /usr/lib/x86_64-linux-gnu/libdnnl.so "$H/onednn/lib/libdnnl.so"
chown -R "$U:" "$H/onednn"
hide+=" mount --bind $F/empty /usr/include/oneapi;"
not_debian "PKG_CONFIG_LIBDIR=/none make -j2 DARKNET_SRC=~/pjreddie && ./darknet_mn info" > "$F/nodnnl.log" 2>&1
rc=$?
if [ $rc = 0 ] && [ "$(grep -c 'no oneDNN found' "$F/nodnnl.log")" = 1 ] && [ "$(grep -c 'no cairo found' "$F/nodnnl.log")" = 1 ] &&
   grep -q '^chart: none (built without cairo' "$F/nodnnl.log" && ! ldd "$H/darknet-mn/darknet_mn" | grep -q libcairo &&
   grep -q "^engine: convolution Darknet's im2col + gemm (built without oneDNN" "$F/nodnnl.log" && ! ldd "$H/darknet-mn/darknet_mn" | grep -q libdnnl; then
    ok "no oneDNN or cairo found: built without them, each said once as make links ($(grep -o 'darknet-mn: no oneDNN found ([^)]*)' "$F/nodnnl.log")) and by info: $(grep -o "^engine: [^(]*" "$F/nodnnl.log")| $(grep -o '^chart: none' "$F/nodnnl.log")"
else bad "no oneDNN, no cairo: status $rc (see $F/nodnnl.log): $(grep -m2 'deps:\|engine' "$F/nodnnl.log")"; fi
not_debian "make -j2 DARKNET_SRC=~/pjreddie DNNL_ROOT=~/onednn && ./darknet_mn info" > "$F/dnnlroot.log" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q '^engine: convolution oneDNN' "$F/dnnlroot.log" && ! grep -q 'no oneDNN' "$F/dnnlroot.log"; then
    ok "DNNL_ROOT=<prefix>: the engine is back: $(grep -o '^engine: convolution oneDNN [^,]*' "$F/dnnlroot.log")"
else bad "DNNL_ROOT: status $rc (see $F/dnnlroot.log): $(grep -m2 'deps:\|engine\|rror' "$F/dnnlroot.log")"; fi

# hank-ai's base off Debian (issue 66): OpenCV and a 64-bit OpenBLAS only
# under /opt prefixes, named as modules name them, and Debian's own hidden
# (OpenCV's headers, CMake files, opencv4.pc and libraries; openblas64's
# headers and library). In the namespace /opt is $O, holding:
#  - opencv: Debian's OpenCV copied into a prefix of include/opencv4 and
#    lib/ (its CMake files moved along), without an opencv4.pc, as OpenCV
#    installs by default; the GPU row adds one;
#  - openblas64: Debian's 64-bit OpenBLAS in Spack's openblas+ilp64
#    layout (include/cblas.h, lib/libopenblas.so); openblas32: its 32-bit one;
#  - cudnn: cuDNN's headers and library apart from CUDA's, as a cudnn
#    module has them.
# Named nothing, make stops with one list naming OpenCV and the 64-bit
# OpenBLAS; a 32-bit OpenBLAS named is refused; with OPENCV_ROOT and
# OPENBLAS64_ROOT make DARKNET=hankai builds, the fork's CMake finding both
# there, the program finds them by its run path, and 2 ranks train a
# detector; a make after it without OPENCV_ROOT stops with the Makefile's
# one line; the GPU build's configuration (no GPU needed) finds OpenCV
# through PKG_CONFIG_PATH and cuDNN through CPATH and LIBRARY_PATH (ahead of
# CUDA's own), and asks for no OpenBLAS.
O=$F/opt
ma=$(gcc -print-multiarch)
rm -rf "$O" && mkdir -p "$O"/opencv/{include,lib/cmake} "$O"/openblas64/{include,lib} "$O"/openblas32/{include,lib}
if ./scripts/deps.sh build hankai > "$F/hk-deps.log" 2>&1; then
    cp -a /usr/include/opencv4 "$O/opencv/include/"
    cp -a /usr/lib/"$ma"/libopencv_*.so* "$O/opencv/lib/"
    cp -a /usr/lib/"$ma"/cmake/opencv4 "$O/opencv/lib/cmake/"
    # The CMake files sit one folder nearer the prefix (lib/, not lib/<multiarch>/).
    sed -i 's|/\.\./\.\./\.\./\.\./"|/../../../"|' "$O/opencv/lib/cmake/opencv4/OpenCVConfig.cmake"
    sed -i '0,/^get_filename_component(_IMPORT_PREFIX "${_IMPORT_PREFIX}" PATH)$/{//d}' "$O/opencv/lib/cmake/opencv4/OpenCVModules.cmake"
    sed -i "s|/lib/$ma/|/lib/|g" "$O/opencv/lib/cmake/opencv4/OpenCVModules-release.cmake"
    # Debian's 64-bit cblas.h includes its config as openblas64_config.h, a link beside that folder.
    cp /usr/include/"$ma"/openblas64-pthread/*.h "$O/openblas64/include/" && cp -L /usr/include/"$ma"/openblas64_config.h "$O/openblas64/include/"
    cp -L /usr/lib/"$ma"/openblas64-pthread/libopenblas64.so.0 "$O/openblas64/lib/" && ln -s libopenblas64.so.0 "$O/openblas64/lib/libopenblas.so"
    cp /usr/include/"$ma"/openblas-pthread/*.h "$O/openblas32/include/"
    ln -s /usr/lib/"$ma"/openblas-pthread/libopenblas.so.0 "$O/openblas32/lib/libopenblas.so"
else bad "hank-ai's packages (scripts/deps.sh build hankai, see $F/hk-deps.log): $(tail -2 "$F/hk-deps.log")"; fi
cp -a /usr/lib/"$ma"/pkgconfig "$F/pkgconfig" && rm -f "$F/pkgconfig/opencv4.pc"
hide="$hide_os mount --bind $O /opt; mount --bind $F/pkgconfig /usr/lib/$ma/pkgconfig;"
for d in /usr/include/opencv4 /usr/lib/"$ma"/cmake/opencv4 /usr/include/"$ma"/openblas64-pthread /usr/lib/"$ma"/openblas64-pthread; do
    hide+=" mount --bind $F/empty $d;"
done
for l in /usr/lib/"$ma"/libopencv_*.so.4*; do [ -L "$l" ] || hide+=" mount --bind /dev/null $l;"; done
rm -rf "$H/darknet-mn" && clean_copy "$H/darknet-mn"
mkdir -p "$H/shared/third_party" && cp ../shared/third_party/darknet-hankai-*.tar.xz "$H/shared/third_party/"
HS=$(shapes_set "$H/shapes" beside) || bad "hankai: mn_shapes could not write the set"
mn_cfg "$H/y.cfg" detector max_batches=4
chown -R "$U:" "$H"

not_debian "make DARKNET=hankai" > "$F/hk-none.log" 2>&1
rc=$?
list=$(sed -n '/^deps: .*needs what is not here/,$p' "$F/hk-none.log")
if [ $rc != 0 ] && [ "$(grep -c 'needs what is not here' "$F/hk-none.log")" = 1 ] && [ "$(echo "$list" | grep -c '^  [^ ]')" = 2 ] &&
   echo "$list" | grep -q "^  OpenCV .*pkg-config finds no opencv4: load your site's OpenCV module, or name its prefix, OPENCV_ROOT=<prefix>" &&
   echo "$list" | grep -q "^  64-bit OpenBLAS .*no cblas.h and libopenblas64.so (or Spack's libopenblas.so) in Debian's layout; .*OPENBLAS64_ROOT=<prefix> (docs/hankai.md), or BLAS=0" &&
   echo "$list" | grep -q 'Spack: openblas+ilp64' && ! grep -q 'not on this system\|installing' "$F/hk-none.log" && [ ! -e "$H/darknet-mn/third_party/darknet-hankai-cpu" ]; then
    ok "hankai, not Debian, no OpenCV or 64-bit OpenBLAS found: make stops (status $rc) with one list of the two, naming OPENCV_ROOT, OPENBLAS64_ROOT and BLAS=0"
else bad "hankai, nothing found: status $rc, $F/hk-none.log: $(head -c 800 "$F/hk-none.log")"; fi

not_debian "make DARKNET=hankai OPENCV_ROOT=/opt/opencv OPENBLAS64_ROOT=/opt/openblas32" > "$F/hk-b32.log" 2>&1
rc=$?
list=$(sed -n '/^deps: .*needs what is not here/,$p' "$F/hk-b32.log")
if [ $rc != 0 ] && [ "$(echo "$list" | grep -c '^  [^ ]')" = 1 ] &&
   echo "$list" | grep -q '^  64-bit OpenBLAS .*the OpenBLAS of OPENBLAS64_ROOT=/opt/openblas32 (/opt/openblas32/include/cblas.h, /opt/openblas32/lib/libopenblas.so) has 32-bit integers'; then
    ok "hankai, OPENBLAS64_ROOT=<a 32-bit OpenBLAS>: refused, its one line: $(echo "$list" | grep -o 'the OpenBLAS of [^;]*')"
else bad "hankai, a 32-bit OpenBLAS: status $rc, $F/hk-b32.log: $(head -c 800 "$F/hk-b32.log")"; fi

# The module's variables (LD_LIBRARY_PATH left out: the program finds the
# prefixes' libraries by its run path).
HKP=build/hankai-cpu/darknet_mn
not_debian "export OPENCV_ROOT=/opt/opencv OPENBLAS64_ROOT=/opt/openblas64; make -j2 DARKNET=hankai && ldd $HKP > ~/hk-ldd.txt &&
    mpiexec -n 2 $HKP detector train $HS ~/y.cfg -dont_show && ls ~/shapes/backup/y_final.weights" > "$F/hk-build.log" 2>&1
rc=$?
cache=$H/darknet-mn/third_party/darknet-hankai-cpu/build-mn/CMakeCache.txt
if [ $rc = 0 ] && grep -q '^4: loss' "$F/hk-build.log" && ! grep -q 'not found' "$H/hk-ldd.txt" &&
   grep -q 'libopencv_core.so.406 => /opt/opencv/lib/libopencv_core.so.406' "$H/hk-ldd.txt" &&
   grep -q 'libopenblas64.so.0 => /opt/openblas64/lib/libopenblas64.so.0' "$H/hk-ldd.txt" &&
   grep -q '^OpenCV_DIR:PATH=/opt/opencv/lib/cmake/opencv4$' "$cache" && grep -q '^BLAS_openblas64_LIBRARY:FILEPATH=/opt/openblas64/lib/libopenblas.so$' "$cache"; then
    ok "hankai, not Debian, OPENCV_ROOT and OPENBLAS64_ROOT (Spack's layout): make built, the fork and darknet_mn on /opt's OpenCV and OpenBLAS, 2 ranks trained to $(grep -o '^4: loss [0-9.]*' "$F/hk-build.log")"
else bad "hankai with OPENCV_ROOT and OPENBLAS64_ROOT: status $rc (see $F/hk-build.log, $H/hk-ldd.txt, $cache): $(grep -m3 -i 'error\|deps:\|darknet-mn:' "$F/hk-build.log")"; fi

# make again with the OpenCV module gone (deps.sh passed, and is not run again): the Makefile's one line.
not_debian "export OPENBLAS64_ROOT=/opt/openblas64; make DARKNET=hankai" > "$F/hk-gone.log" 2>&1
rc=$?
if [ $rc != 0 ] && [ "$(grep -c . "$F/hk-gone.log")" = 1 ] &&
   grep -q "^Makefile:[0-9]*: \*\*\* hank-ai's Darknet needs OpenCV 4: pkg-config finds no opencv4 (load your site's OpenCV module, which sets PKG_CONFIG_PATH, or name its prefix: OPENCV_ROOT=<prefix>)\.  Stop\.$" "$F/hk-gone.log"; then
    ok "hankai, built, then make without the OpenCV module: one line ($(grep -o 'needs OpenCV 4: pkg-config finds no opencv4' "$F/hk-gone.log"))"
else bad "hankai, make without the OpenCV module: status $rc, $F/hk-gone.log: $(head -c 600 "$F/hk-gone.log")"; fi

if [ -x /usr/local/cuda/bin/nvcc ] && [ -f /usr/local/cuda/include/cudnn.h ]; then
    mkdir -p "$O/opencv/lib/pkgconfig" "$O/cudnn/include" "$O/cudnn/lib"
    sed -e 's|^prefix=.*|prefix=/opt/opencv|' -e "s|/lib/$ma|/lib|g" /usr/lib/"$ma"/pkgconfig/opencv4.pc > "$O/opencv/lib/pkgconfig/opencv4.pc"
    cp /usr/local/cuda/include/cudnn*.h "$O/cudnn/include/" && cp -L /usr/local/cuda/lib64/libcudnn.so "$O/cudnn/lib/"
    not_debian "export PKG_CONFIG_PATH=/opt/opencv/lib/pkgconfig CPATH=/opt/cudnn/include LIBRARY_PATH=/opt/cudnn/lib;
        make DARKNET=hankai GPU=1 CUDNN=1 CUDA=/usr/local/cuda CUDA_ARCHS=90 third_party/darknet-hankai-gpu/build-mn/.configured" > "$F/hk-gpu.log" 2>&1
    rc=$?
    cache=$H/darknet-mn/third_party/darknet-hankai-gpu/build-mn/CMakeCache.txt
    if [ $rc = 0 ] && grep -q '^deps: ok' "$F/hk-gpu.log" && grep -q '^OpenCV_DIR:PATH=/opt/opencv/lib/cmake/opencv4$' "$cache" &&
       grep -q '^cudnn_include:PATH=/opt/cudnn/include$' "$cache" && grep -q '^cudnn:FILEPATH=/opt/cudnn/lib/libcudnn.so$' "$cache" &&
       ! grep -q '^BLAS_' "$cache"; then
        ok "hankai GPU=1, configured: OpenCV from PKG_CONFIG_PATH's /opt/opencv, cuDNN from CPATH's and LIBRARY_PATH's /opt/cudnn, no OpenBLAS asked for"
    else bad "hankai GPU=1 configuration: status $rc (see $F/hk-gpu.log, $cache): $(grep -m3 -i 'error\|deps:\|darknet-mn:' "$F/hk-gpu.log")"; fi
else skip "hankai GPU=1 configuration: no CUDA toolkit with cuDNN in /usr/local/cuda"; fi

[ "${KEEP:-0}" = 1 ] || rm -rf "$H" "$O" "$F/pkgconfig"
finish build-user
