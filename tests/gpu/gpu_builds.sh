#!/usr/bin/env bash
# make test-gpu: the GPU builds of pjreddie's and AlexeyAB's bases (GPU=1
# CUDNN=1 NCCL=1: compile and link; nothing runs a kernel here), then what
# make test checks of every build on theirs: the plugin's calls go one way
# (tests/static/layers.py) and nothing outside base/ calls Darknet
# (tests/static/boundary.py); where no GPU is usable, each GPU build stops at
# start, saying why, on every rank; and the bundle a lent GPU machine gets
# (scripts/gpu_bundle.sh, hank-ai's base in it too, where its snapshot is)
# holds what its programs load. Apart from make test, whose 15 minutes its
# building (3 minutes, and 5 more for the bundle's static OpenCV) would
# pass; .ci/run runs it. hank-ai's own GPU build: make test-hankai-gpu.
# Env: BUILD, TEST_BIN (make sets them), or alone from the repository root.
. "$(dirname "$0")/../helpers/lib.sh"
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
else skip "AlexeyAB's GPU build: neither ALEXEYAB_SRC nor its snapshot is here"; fi

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
    skip "the bundle: no MPICH (scripts/deps.sh installs mpich and libmpich-dev)"
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

# The bundle rehearsed as it travels (GPU_REHEARSAL=1 bash BUNDLE/run.sh
# OUT): unpacked outside build/, beside a copy of what a lent machine gets
# of the repository (tracked files and untracked ones git does not ignore;
# no build/), the whole plan on the bundle's CPU builds. As is: every base's
# rows answered, PASS, exit 0; its comparator (bin/mn_wcmp) replaced by one
# that always says "differ": FAIL and non-zero; phases too short: non-zero,
# the rows not run counted. Every time, nothing of the bundle left running.
echo "== The bundle rehearsed (GPU_REHEARSAL=1 bash BUNDLE/run.sh OUT, a clean copy of the repository beside it)"
# bundle_procs DIR: the processes whose program or command line is under DIR.
bundle_procs() {
    local p
    for p in /proc/[0-9]*; do
        case $(readlink "$p/exe" 2> /dev/null) in "$1"/*) echo "${p#/proc/}"; continue ;; esac
        { tr '\0' ' ' < "$p/cmdline"; } 2> /dev/null | grep -qF "$1/" && echo "${p#/proc/}"
    done
}
# rehearse NAME PREP [ENV=V...]: the tarball unpacked in REHEARSAL/NAME
# (outside the repository: /tmp/darknet-mn-rehearsal), PREP run on the
# unpacked bundle, then run.sh from the copy; R is the folder. Its time
# limits are three times the GPU window's (ROOMY): the CPU builds on a
# machine other jobs share are slower than a GPU, and the cuts have a row
# of their own (ENV after ROOMY overrides it).
ROOMY=(PROBE_S=90 PHASE_S=285 SPEED_S=120 RUN_S=1260)
rehearse() {
    local name=$1 prep=$2; shift 2
    R=${REHEARSAL:-/tmp/darknet-mn-rehearsal}/$name
    rm -rf "$R" && mkdir -p "$R" && tar -C "$R" -xzf "$T/bundle.tar.gz"
    clean_copy "$R/repo"
    $prep "$R/bundle"
    (cd "$R/repo" && env "${ROOMY[@]}" "$@" GPU_REHEARSAL=1 timeout 1500 bash ../bundle/run.sh "$R/out") > "$R/run.out" 2>&1
    echo $? > "$R/rc"
    left=$(bundle_procs "$R" | paste -sd' ')
    [ -z "$left" ] || kill -9 $left 2> /dev/null
}
tally() { grep "^== $1: [0-9]* of [0-9]* rows ok" "$R/run.out"; }
planted_wcmp() { printf '#!/bin/sh\necho "mn_wcmp: differ (a planted comparator)"\nexit 1\n' > "$1/bin/mn_wcmp"; rm -f "$1"/bin/cpu/darknet_mn-*; }
if [ -f "$T/bundle.tar.gz" ]; then
    rehearse as-is true
    bases_ok=1
    for b in pjreddie alexeyab hankai; do tally "$b" | grep -q "rows ok, 0 FAIL, [0-9]* skipped, 0 not run" || bases_ok=0; done
    if [ "$(cat "$R/rc")" = 0 ] && [ "$(tail -1 "$R/run.out")" = "== gpu-check: PASS" ] && [ $bases_ok = 1 ] && [ -z "$left" ] &&
       [ -s "$R/out/pjreddie/runs.tgz" ] && [ -s "$R/out/run.log" ]; then
        ok "rehearsal as is: $(tally pjreddie | cut -c4-); $(tally alexeyab | cut -c4-); $(tally hankai | cut -c4-); PASS, exit 0, nothing left running"
    else bad "rehearsal as is: exit $(cat "$R/rc"), left running: '${left}'; $(grep '^FAIL\|^== [a-z]*: [0-9]* of\|^== gpu-check' "$R/run.out" | head -6 | paste -sd' ') (see $R/run.out)"; fi
    rehearse differ planted_wcmp
    if [ "$(cat "$R/rc")" != 0 ] && tally pjreddie | grep -q ", [1-9][0-9]* FAIL," && grep -q "^== gpu-check: FAIL (pjreddie: [0-9]* FAIL" "$R/run.out" && [ -z "$left" ]; then
        ok "rehearsal with a comparator that says differ: exit $(cat "$R/rc"), $(tally pjreddie | cut -c4-), '$(tail -1 "$R/run.out")'"
    else bad "rehearsal with a comparator that says differ: exit $(cat "$R/rc"), left running: '${left}'; $(tally pjreddie); $(tail -1 "$R/run.out") (see $R/run.out)"; fi
    rehearse short true PHASE_S=6 SPEED_S=6
    cut=$(grep -c "^== [a-z ]*: cut at 6 s" "$R/run.out")
    if [ "$(cat "$R/rc")" != 0 ] && [ "$cut" -ge 3 ] && grep -q "^== gpu-check: FAIL (.*not run" "$R/run.out" && [ -z "$left" ]; then
        ok "rehearsal with phases of 6 s: exit $(cat "$R/rc"), $cut phases cut, nothing left running; '$(tail -1 "$R/run.out")'"
    else bad "rehearsal with phases of 6 s: exit $(cat "$R/rc"), $cut phases cut, left running: '${left}'; $(tail -1 "$R/run.out") (see $R/run.out)"; fi
fi

echo "== The plugin's layers and Darknet's boundary in the GPU builds (tests/static/layers.py, tests/static/boundary.py)"
LAYERS=$(make -s --no-print-directory print-layers)
links=()
for f in "${flags[@]}"; do
    set -- $(make -s --no-print-directory BUILD="$BUILD" $f print-link)   # Darknet's library, the plugin's, main.o
    [ -f "$2" ] || continue   # that build failed above
    if python3 tests/static/layers.py "$LAYERS" "$2" > "$T/layers.out" 2>&1; then cat "$T/layers.out"; pass=$((pass + 1))
    else sed 's/^/     /' "$T/layers.out" | cut -c1-600; bad "layers: $2"; fi
    links+=(--link "$@")
done
if [ ${#links[@]} -gt 0 ]; then
    if python3 tests/static/boundary.py "$LAYERS" main.c "${links[@]}" > "$T/boundary.out" 2>&1; then cat "$T/boundary.out"; pass=$((pass + 1))
    else sed 's/^/     /' "$T/boundary.out" | head -20 | cut -c1-300; bad "boundary: $(grep -c FAIL "$T/boundary.out") network or layer reads or Darknet calls outside base/ in the GPU builds"; fi
fi
finish gpu
