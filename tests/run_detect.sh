#!/usr/bin/env bash
# The detector workflow on real images (Fashion-MNIST items on canvases):
#  - tools/mn_fashion_det: same seed, same bytes; labels in range;
#  - partial: the same bytes as stock `darknet partial`; bad input: one
#    message, every rank non-zero;
#  - detector train from the backbone on 2 ranks with evaluation: best and
#    final weights, the chart PNG (size, drawn series) and CSV (rows, eval
#    column); chart=0 writes no chart;
#  - detector test writes a PNG of the image's size; classifier predict's
#    top-1 agrees with classifier valid on the same image.
# Run by tests/run.sh (T, D, BUILD, MPI set there); takes about a minute.
. "$(dirname "$0")/lib.sh"
X=$T/detect
rm -rf "$X" && mkdir -p "$X"
GEN=$BUILD/tools/mn_fashion_det
IDX=/usr/share/datasets/fashion-mnist
PNG="python3 tests/mn_png.py"

# mn OUT NP ARGS... (tests/lib.sh): ./darknet_mn ARGS on NP ranks; rank r's
# stdout, stderr and exit code in OUT.{out,err,rc}.r.
# expect_exit1 NAME MESSAGE ARGS...: on 2 ranks every rank exits 1, rank 0 says MESSAGE.
expect_exit1() {
    local name=$1 msg=$2; shift 2
    mn "$X/$name" 2 "$@"
    if all_rc "$X/$name" 2 $EX_USER && grep -qF -- "$msg" "$X/$name.err.0"; then ok "$name: $(grep -F -- "$msg" "$X/$name.err.0" | head -1)"
    else bad "$name: exit codes $(rcs "$X/$name" 2), stderr: $(grep -v '^ ' "$X/$name.err.0" | head -2)"; fi
}

echo "-- data generator"
"$GEN" $IDX "$X/s1" --train 16 --valid 6 --seed 7 > "$X/gen1.log" 2>&1 &&
"$GEN" $IDX "$X/s2" --train 16 --valid 6 --seed 7 > "$X/gen2.log" 2>&1 &&
"$GEN" $IDX "$X/s3" --train 16 --valid 6 --seed 8 > "$X/gen3.log" 2>&1 || bad "mn_fashion_det failed: $(cat "$X"/gen*.log | tail -2)"
if diff -r "$X/s1/images" "$X/s2/images" > /dev/null && diff -r "$X/s1/labels" "$X/s2/labels" > /dev/null &&
   [ "$(ls "$X/s1/images/train"/*.jpg | wc -l)" = 16 ] && [ "$(ls "$X/s1/labels/valid" | wc -l)" = 6 ]; then
    ok "generator: seed 7 twice gives the same 22 images and label files"
else bad "generator: two runs with seed 7 differ"; fi
if ! diff -r "$X/s1/images" "$X/s3/images" > /dev/null; then ok "generator: seed 8 gives other images"
else bad "generator: seeds 7 and 8 gave the same images"; fi
# AlexeyAB's layout too: each label file beside its image, the same bytes.
side=0
for f in "$X"/s1/labels/*/*.txt; do cmp -s "$f" "${f/\/labels\//\/images\/}" && side=$((side + 1)); done
[ "$side" = 22 ] && ok "generator: all 22 label files also beside their images" || bad "generator: $side of 22 label files beside their images"
# Every label: class 0..9, centre and size in (0, 1], the box inside the image.
bad_labels=$(cat "$X"/s1/labels/*/*.txt | awk 'NF != 5 || $1 !~ /^[0-9]$/ || $4 <= 0 || $5 <= 0 ||
    $2 - $4 / 2 < -1e-5 || $2 + $4 / 2 > 1 + 1e-5 || $3 - $5 / 2 < -1e-5 || $3 + $5 / 2 > 1 + 1e-5' | wc -l)
boxes=$(cat "$X"/s1/labels/*/*.txt | wc -l)
classes=$(cat "$X"/s1/labels/*/*.txt | cut -d' ' -f1 | sort -u | wc -l)
if [ "$bad_labels" = 0 ] && [ "$boxes" -ge 22 ] && [ "$classes" -ge 5 ]; then ok "labels: $boxes boxes of $classes classes, all in range"
else bad "labels: $bad_labels of $boxes out of range ($classes classes)"; fi
grep -q "anchors = [0-9]*,[0-9]*, " "$X/gen1.log" && ok "generator prints anchors: $(grep -o 'anchors = .*' "$X/gen1.log")" \
    || bad "generator printed no anchors"

echo "-- classifier, partial"
sed -e 's/^batch=64/batch=8/' -e 's/^max_batches=1000/max_batches=3/' cfg/fashion.cfg > "$X/cls.cfg"
printf 'classes=10\ntrain=%s\nvalid=%s\nlabels=%s\nbackup=%s\ntop=2\n' "$D/train.list" "$D/test.list" "$D/labels.txt" "$X/backup" > "$X/cls.data"
mkdir -p "$X/backup"
mn "$X/cls" 2 classifier train "$X/cls.data" "$X/cls.cfg"
all_rc "$X/cls" 2 0 && [ -s "$X/backup/cls_final.weights" ] || bad "classifier train: exit codes $(rcs "$X/cls" 2)"
sed '/^\[distributed\]/,$d' "$X/cls.cfg" > "$X/cls-stock.cfg"
(cd "$X" && darknet partial cls-stock.cfg backup/cls_final.weights stock5.weights 5 > stock.log 2>&1)
mn "$X/partial" 2 partial "$X/cls.cfg" "$X/backup/cls_final.weights" "$X/bb.weights" 5
if all_rc "$X/partial" 2 0 && [ -s "$X/stock5.weights" ] && cmp -s "$X/stock5.weights" "$X/bb.weights" && [ ! -s "$X/partial.out.1" ]; then
    ok "partial 5 on 2 ranks: the same $(stat -c %s "$X/bb.weights") bytes as stock darknet partial; rank 1 silent"
else bad "partial: exit codes $(rcs "$X/partial" 2), $(cmp "$X/stock5.weights" "$X/bb.weights" 2>&1)"; fi
expect_exit1 partial-too-many "has 7 layers; cannot cut the first 9" partial "$X/cls.cfg" "$X/backup/cls_final.weights" "$X/x.weights" 9
expect_exit1 partial-count "the layer count 'two' must be a positive integer" partial "$X/cls.cfg" "$X/backup/cls_final.weights" "$X/x.weights" two
expect_exit1 partial-weights "cannot open weights file $X/none.weights" partial "$X/cls.cfg" "$X/none.weights" "$X/x.weights" 5
[ -e "$X/x.weights" ] && bad "a failed partial left $X/x.weights"

echo "-- detector from the backbone"
printf 'classes=10\ntrain=%s\nvalid=%s\nnames=data/fashion.names\nbackup=%s\n' "$X/s1/train.list" "$X/s1/valid.list" "$X/backup" > "$X/det.data"
sed -e 's/^batch=16/batch=2/' -e 's/^max_batches=.*/max_batches=4/' -e 's/^burn_in=.*/burn_in=1/' \
    -e 's/^eval_interval=.*/eval_interval=2/' cfg/fashion-det.cfg > "$X/det.cfg"
mn "$X/det" 2 detector train "$X/det.data" "$X/det.cfg" "$X/bb.weights"
evals=$(grep -c "eval mAP@0.5 .* on 6 images" "$X/det.out.0")
if all_rc "$X/det" 2 0 && [ "$evals" = 2 ] && grep -q "Loading weights from $X/bb.weights" "$X/det.err.0" &&
   [ -s "$X/backup/det_best.weights" ] && [ -s "$X/backup/det_final.weights" ]; then
    ok "detector train from the backbone, 2 ranks, 4 iterations: 2 evaluations, best and final weights"
else bad "detector train: exit codes $(rcs "$X/det" 2), $evals evaluations; $(grep -v '^ ' "$X/det.err.0" | tail -2)"; fi
# The chart: 800x480 with coloured series in the plot area (x 80..720, y 56..432).
read -r cw ch cn <<< "$($PNG "$X/backup/det_chart.png" 81 57 719 431 2>&1)"
if [ "$cw $ch" = "800 480" ] && [ "${cn:-0}" -gt 500 ]; then ok "chart: ${cw}x$ch, $cn coloured pixels in the plot area"
else bad "chart: $cw $ch $cn"; fi
[ -e "$X/backup/det_chart.png.tmp" ] && bad "the chart's temporary file was left"
# The log: a header and one row per iteration, the eval column filled at 2 and 4 only.
rows=$(tail -n +2 "$X/backup/det_log.csv" | wc -l)
evalrows=$(tail -n +2 "$X/backup/det_log.csv" | awk -F, '$6 != "" {printf "%s ", $1}')
if [ "$(head -1 "$X/backup/det_log.csv")" = "iteration,loss,avg_loss,rate,images_per_s,eval" ] && [ "$rows" = 4 ] && [ "$evalrows" = "2 4 " ]; then
    ok "log: 4 rows, eval at iterations $evalrows"
else bad "log: $rows rows, eval at '$evalrows'"; fi
sed -i 's/^eval_interval=.*/eval_interval=0\nchart=0/' "$X/det.cfg"
rm -f "$X/backup"/det_*
mn "$X/det-nochart" 2 detector train "$X/det.data" "$X/det.cfg" "$X/bb.weights"
if all_rc "$X/det-nochart" 2 0 && [ ! -e "$X/backup/det_chart.png" ] && [ "$(wc -l < "$X/backup/det_log.csv")" = 5 ]; then
    ok "chart=0: no chart, the log still written"
else bad "chart=0: exit codes $(rcs "$X/det-nochart" 2), $(ls "$X/backup")"; fi

# overlap=1 with random=1: every rank resizes to the same size, the buckets do not change.
sed -e 's/^random=0/random=1/' -e 's/^chart=0/chart=0\noverlap=1/' "$X/det.cfg" > "$X/detov.cfg"
mn "$X/detov" 2 detector train "$X/det.data" "$X/detov.cfg" "$X/bb.weights"
if all_rc "$X/detov" 2 0 && grep -q "^resizing to [0-9]*x[0-9]* on every rank" "$X/detov.out.0" &&
   grep -q "^darknet-mn: overlap=1: [0-9]* bucket" "$X/detov.out.0" && [ -s "$X/backup/detov_final.weights" ]; then
    ok "detector with random=1 and overlap=1 on 2 ranks: $(grep -m1 '^resizing' "$X/detov.out.0"), $(grep -o '[0-9]* buckets\?' "$X/detov.out.0")"
else bad "detector with random=1 and overlap=1: exit codes $(rcs "$X/detov" 2) ($(grep -v '^ ' "$X/detov.err.0" | tail -2))"; fi

echo "-- detector test, classifier predict"
img=$(sed -n 2p "$X/s1/valid.list")
mn "$X/dtest" 2 detector test "$X/det.data" "$X/det.cfg" "$X/backup/det_final.weights" "$img" -out "$X/pred"
size=$(python3 -c "
import struct, sys
d = open('$img', 'rb').read(); i = 2
while d[i + 1] not in (0xC0, 0xC2): i += 2 + struct.unpack('>H', d[i + 2:i + 4])[0]
h, w = struct.unpack('>HH', d[i + 5:i + 9]); print(w, h)")
if all_rc "$X/dtest" 2 0 && [ "$($PNG "$X/pred.png")" = "$size" ] && [ ! -s "$X/dtest.out.1" ]; then
    ok "detector test: $X/pred.png is ${size/ /x} like the image"
else bad "detector test: exit codes $(rcs "$X/dtest" 2), png $($PNG "$X/pred.png" 2>&1), image $size"; fi
expect_exit1 dtest-image "cannot read image $X/none.jpg" detector test "$X/det.data" "$X/det.cfg" "$X/backup/det_final.weights" "$X/none.jpg"
for k in 1 2 3; do
    img=$(sed -n "${k}p" "$D/test.list")
    echo "$img" > "$X/one$k.list"
    sed "s|^valid=.*|valid=$X/one$k.list|" "$X/cls.data" > "$X/one$k.data"
    mn "$X/pred$k" 2 classifier predict "$X/one$k.data" "$X/cls.cfg" "$X/backup/cls_final.weights" "$img"
    # classifier valid refuses a list shorter than the ranks: one image, one rank.
    mn "$X/valid$k" 1 classifier valid "$X/one$k.data" "$X/cls.cfg" "$X/backup/cls_final.weights"
    top=$(head -1 "$X/pred$k.out.0" | sed 's/.*: //')
    lines=$(grep -c '%: c[0-9]_' "$X/pred$k.out.0")
    case "$img" in *"$top"*) want=1.0000 ;; *) want=0.0000 ;; esac
    if all_rc "$X/pred$k" 2 0 && [ "$lines" = 2 ] && grep -q "top-1 $want" "$X/valid$k.out.0"; then
        ok "classifier predict $(basename "$img"): top-2 printed, top-1 $top agrees with classifier valid's top-1 $want"
    else bad "classifier predict $img: exit codes $(rcs "$X/pred$k" 2), $lines lines, top-1 '$top', valid: $(grep top-1 "$X/valid$k.out.0")"; fi
done
finish
