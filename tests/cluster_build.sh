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
#    train.
# Root (it makes the user and the namespace). Run by make test-cluster.
. "$(dirname "$0")/lib.sh"
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
copy_checkout() {
    mkdir -p "$1"
    tar -C "$top" --exclude=./.git --exclude=./build --exclude=./third_party --exclude=./darknet_mn --exclude=./gpubundle -cf - . | tar -C "$1" -xf -
}
copy_checkout "$H/darknet-mn"
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
rm -rf "$H/darknet-mn" && copy_checkout "$H/darknet-mn" && chown -R "$U:" "$H/darknet-mn"

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

[ "${KEEP:-0}" = 1 ] || rm -rf "$H"
finish build-user
