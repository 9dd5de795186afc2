#!/usr/bin/env bash
# hank-ai's Darknet V5 (make DARKNET=hankai darknet), the fork alone:
# darknet-mn does not build on it yet (docs/hankai.md). Checks: the fork
# builds from the snapshot in ../shared/third_party (or DARKNET_SRC) with
# patches/hankai/, into libdarknet.a, its CLI and its first example; none of
# its compile or link commands holds -Ofast, -ffast-math,
# -funsafe-math-optimizations, -march=native, -mtune=native, -mavx* or -flto;
# its `darknet version` names the snapshot's version (or the clone's git
# describe); make DARKNET=hankai for darknet_mn stops with its one line; and
# the weights: cfg/yolov4-tiny-fashion.cfg trained by darknet-mn on AlexeyAB's
# base, and both forks' own `detector test` on the same images give the same
# detections (classes; boxes and confidences to rounding). Not part of
# make test: make test-hankai (2 min 13 s from nothing on 2 cores, the
# fork's build 99 s of it; 15 s once built).
# HANKAI_GPU=1 (make test-hankai-gpu, the CUDA build, longer) checks the
# GPU=1 CUDNN=1 build instead: the build, the flags, the version compiled
# in, code for sm_75, 80, 86 and 90 with PTX for 90 (no GPU run here).
# Skipped (ok) when neither source is here.
# Run by make test-hankai (env BUILD), or alone from the repository root.
. "$(dirname "$0")/lib.sh"
GPU=${HANKAI_GPU:-0}
V=$([ "$GPU" = 1 ] && echo gpu || echo cpu)
T=$T/hankai-$V
rm -rf "$T" && mkdir -p "$T"

SNAPSHOT=${HK_SNAPSHOT:-../shared/third_party/darknet-hankai-f684e1d7.tar.xz}
if [ -z "${DARKNET_SRC:-}" ] && [ ! -f "$SNAPSHOT" ]; then
    ok "hank-ai's Darknet skipped: neither DARKNET_SRC nor $SNAPSHOT is here"
    finish
fi
if [ -n "${DARKNET_SRC:-}" ]; then want=$(git -C "$DARKNET_SRC" describe --tags --dirty --long)
else want=${HK_SNAPSHOT_VERSION:-v5.1-104-gf684e1d7}; fi
DK=third_party/darknet-hankai-$V
HB=$DK/build-mn
HK=$HB/src-cli/darknet

t0=$SECONDS
if make -s -j"$(nproc)" DARKNET=hankai GPU="$GPU" CUDNN="$GPU" darknet > "$T/build.log" 2>&1 &&
   [ -x "$HK" ] && [ -x "$HB/src-examples/darknet_01_inference_images" ] && [ -s "$HB/src-lib/libdarknet.a" ]; then
    ok "make DARKNET=hankai darknet: $HK, its example and libdarknet.a ($((SECONDS - t0)) s)"
else bad "make DARKNET=hankai darknet (see $T/build.log)"; tail -5 "$T/build.log"; finish; fi
# Every patch applied: each leaves its darknet-mn comment in the tree.
for p in patches/hankai/*.patch; do
    f=$(grep -m1 '^+++ b/' "$p" | cut -c7-)
    if grep -q 'darknet-mn' "$DK/$f"; then ok "hankai $(basename "$p") applied ($f)"
    else bad "hankai $(basename "$p"): $DK/$f lacks its change"; fi
done

# The flags (patch 0002 and the Makefile's cache variables): the compile
# commands CMake wrote, and its link commands, hold none of the host's or
# fast-math flags, and every compile is -O3.
CC_JSON=$HB/compile_commands.json
n=$(grep -c '"command"' "$CC_JSON" 2> /dev/null)
found=$( { cat "$CC_JSON"; find "$HB" -name link.txt -exec cat {} +; } 2> /dev/null |
    grep -oE -- '-(Ofast|ffast-math|funsafe-math-optimizations|march=native|mtune=native|mavx[0-9a-z]*|flto[=a-z]*)' | sort -u | tr '\n' ' ')
o3=$(grep -c '"command": ".* -O3 ' "$CC_JSON" 2> /dev/null)
if [ "${n:-0}" -ge 60 ] && [ -z "$found" ] && [ "$o3" = "$n" ]; then
    ok "hankai flags: $n compile commands, all -O3, none with -Ofast, -ffast-math, unsafe math, -march/-mtune=native, -mavx or -flto"
else bad "hankai flags: ${n:-no} compile commands ($o3 with -O3), found: ${found:-none}"; fi

if [ "$GPU" = 1 ]; then
    # Without a driver the CUDA build does not load (libcuda.so.1): the
    # version is the string compiled in.
    if grep -aq "^$want\$" <(strings "$HK"); then ok "hankai GPU build: $HK holds the version $want"
    else bad "hankai GPU build: $HK lacks the version $want"; fi
    # The code in libdarknet.a, read from its fat binaries (CUDA 13 here
    # has no cuobjdump): each entry's kind (1 PTX, 2 ELF) and architecture.
    code=$(python3 - "$HB/src-lib/libdarknet.a" << 'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
seen, magic = set(), struct.pack("<I", 0xBA55ED50)
i = d.find(magic)
while i >= 0:
    hsz, fsz = struct.unpack_from("<HQ", d, i + 6)
    o, end = i + hsz, i + hsz + fsz
    while o < end:
        kind, ehsz, size = struct.unpack_from("<H2xIQ", d, o)
        seen.add("%s_%d" % ({1: "ptx", 2: "sm"}.get(kind, "?"), struct.unpack_from("<I", d, o + 28)[0]))
        o += ehsz + size
    i = d.find(magic, end)
print(" ".join(sorted(seen)))
EOF
)
    if [ "$code" = "ptx_90 sm_75 sm_80 sm_86 sm_90" ]; then ok "hankai GPU build: libdarknet.a holds $code"
    else bad "hankai GPU build: libdarknet.a holds '$code', not ptx_90 sm_75 sm_80 sm_86 sm_90"; fi
    if ldd "$HK" | grep -q libcudnn; then ok "hankai GPU build: $HK links cuDNN"; else bad "hankai GPU build: no cuDNN in ldd $HK"; fi
    finish
fi

# The version, given to CMake (patch 0001), not asked of git.
"$HK" version -nocolor > "$T/version.out" 2>&1
if grep -q "^Darknet V5 .* $want " "$T/version.out"; then ok "hankai darknet version: $(head -1 "$T/version.out")"
else bad "hankai darknet version: want $want, got: $(head -1 "$T/version.out")"; fi

# darknet-mn itself does not build on this base: one line, nothing built.
make DARKNET=hankai > "$T/mn.log" 2>&1
rc=$?
if [ $rc != 0 ] && [ "$(grep -c "darknet-mn does not build on hank-ai's Darknet yet" "$T/mn.log")" = 1 ] &&
   grep -q 'make DARKNET=hankai darknet builds the fork' "$T/mn.log" && [ ! -e "$BUILD/hankai-cpu" ]; then
    ok "make DARKNET=hankai stops (exit $rc): $(grep -o "darknet-mn does not build.*" "$T/mn.log" | cut -c1-90)..."
else bad "make DARKNET=hankai: exit $rc, $(tail -2 "$T/mn.log")"; fi

# Weights: yolov4-tiny-fashion trained by darknet-mn on AlexeyAB's base (2
# ranks, 60 iterations, as tests/run_alexeyab.sh trains it), then each
# fork's own detector test on three validation images.
AB=$BUILD/alexeyab-cpu
ABDK=third_party/darknet-alexeyab-cpu
AB_SNAPSHOT=${AB_SNAPSHOT:-../shared/third_party/darknet-alexeyab-59596d78.tar.xz}
if [ ! -f "$AB_SNAPSHOT" ]; then bad "the weights check needs AlexeyAB's snapshot $AB_SNAPSHOT"; finish; fi
# AlexeyAB's base from its snapshot: DARKNET_SRC names hank-ai's clone here.
if ! env -u DARKNET_SRC make -s -j"$(nproc)" DARKNET=alexeyab "$AB/darknet_mn" "$BUILD/tools/mn_fashion_det" > "$T/ab-build.log" 2>&1; then
    bad "make DARKNET=alexeyab (see $T/ab-build.log)"; finish
fi
fork_det_data || { bad "make fashion-det-data (see $T/det-data.log)"; finish; }
fork_y4_cfg "$T/y4.cfg"
# hank-ai's cfg reader stops on a section it does not know: both forks
# test with the cfg as it was before its [distributed] section.
cp "$T/y4.cfg" "$T/y4-plain.cfg"
printf '\n[distributed]\ndeterministic=1\n' >> "$T/y4.cfg"
W=$T/backup/y4_final.weights
t0=$SECONDS
if timeout 300 $MPI -n 2 "$AB/darknet_mn" detector train "$T/y4.data" "$T/y4.cfg" > "$T/y4-train.log" 2>&1 && [ -f "$W" ]; then
    ok "yolov4-tiny-fashion trained 60 iterations on 2 ranks on AlexeyAB's base ($((SECONDS - t0)) s)"
else bad "yolov4-tiny-fashion training (see $T/y4-train.log)"; tail -3 "$T/y4-train.log"; finish; fi

# same_dets AB.json HK.json: the forks' -out files list the same objects,
# matched one to one (the order of two boxes of one class with near-equal
# scores may differ): the same class, the box within 0.005 of the image
# (under a pixel) and the confidence within 0.005. The images are JPEGs,
# which AlexeyAB's fork decodes with stb_image and hank-ai's with OpenCV's
# libjpeg: a pixel may differ by a level, and confidences by up to 0.0013
# (seen). An object without a match may only be one that close to the
# threshold. Prints the count and the largest differences.
same_dets() {
    python3 - "$1" "$2" "$TH" << 'EOF'
import json, sys
tol, th = 0.005, float(sys.argv[3])
def objs(path):
    try:
        return [(o["class_id"], o["confidence"], [o["relative_coordinates"][k] for k in ("center_x", "center_y", "width", "height")])
                for f in json.load(open(path)) for o in f["objects"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit("%s: %s" % (path, e))
a, h = objs(sys.argv[1]), objs(sys.argv[2])
if not a: sys.exit("AlexeyAB's fork found nothing")
def dist(p, q): return max(abs(x - y) for x, y in zip(p[2], q[2]))
dbox = dconf = 0.0
left = []
for p in a:
    m = [q for q in h if q[0] == p[0] and abs(q[1] - p[1]) <= tol and dist(p, q) <= tol]
    if not m:
        left.append(p)
        continue
    q = min(m, key=lambda q: dist(p, q))
    h.remove(q)
    dbox, dconf = max(dbox, dist(p, q)), max(dconf, abs(p[1] - q[1]))
left += h
far = [p for p in left if p[1] > th + tol]
if far: sys.exit("%d of %d objects unmatched, e.g. class %d at %.4f %s" % (len(far), len(a), far[0][0], far[0][1], far[0][2]))
print("%d objects (%d near the threshold unmatched), classes %s, boxes within %.6f, confidences within %.6f"
      % (len(a), len(left), sorted(set(o[0] for o in a)), dbox, dconf))
EOF
}
ROOT=$(pwd)
TH=0.02
for i in 000000 000001 000002 000003 000004 000005; do
    img=$T/det/valid/$i.jpg
    # From $T: each writes predictions.jpg where it runs.
    (cd "$T" && timeout 60 "$ROOT/$ABDK/darknet" detector test y4.data y4-plain.cfg "$W" "$img" \
        -thresh $TH -dont_show -ext_output -out "ab-$i.json" > "ab-$i.log" 2>&1)
    (cd "$T" && timeout 60 "$ROOT/$HK" detector test -nocolor y4.data y4-plain.cfg "$W" "$img" \
        -thresh $TH -dont_show -ext_output -out "hk-$i.json" > "hk-$i.log" 2>&1)
    if r=$(same_dets "$T/ab-$i.json" "$T/hk-$i.json" 2>&1); then ok "hankai detector test on valid/$i.jpg = AlexeyAB's: $r"
    else bad "hankai detector test on valid/$i.jpg against AlexeyAB's: $r (see $T/ab-$i.log, $T/hk-$i.log)"; fi
done

finish
