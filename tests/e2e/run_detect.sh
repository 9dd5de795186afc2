#!/usr/bin/env bash
# The detector workflow on real images (Fashion-MNIST items on canvases):
#  - tools/mn_fashion_det: same seed, same bytes; labels in range;
#  - partial: the same bytes as stock `darknet partial`; bad input: one
#    message, every rank non-zero;
#  - detector train from the backbone on 2 ranks with evaluation: best and
#    final weights, the chart PNG (size, drawn series) and CSV (rows, eval
#    column); chart=0 writes no chart;
#  - detector test writes a PNG of the image's size; classifier predict's
#    top-1 agrees with classifier valid on the same image;
#  - without cairo (make CAIRO=0, its own folder): no libcairo linked, info
#    says so; training writes its log but no chart and no timeline picture,
#    detector test prints the same detections but no PNG, each saying why
#    once; chart=0 says nothing.
# Run by tests/run.sh (T, D, BUILD, MPI set there); takes about a minute.
. "$(dirname "$0")/../helpers/lib.sh"
X=$T/detect
rm -rf "$X" && mkdir -p "$X"
GEN=$BUILD/tools/mn_fashion_det
IDX=/usr/share/datasets/fashion-mnist
PNG="python3 tests/helpers/mn_png.py"

# mn OUT NP ARGS... (tests/helpers/lib.sh): ./darknet_mn ARGS on NP ranks; rank r's
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
if [ "$cw $ch" = "800 480" ] && [ "${cn:-0}" -gt 500 ] && ! grep -q "no chart" "$X/det.out.0"; then
    ok "chart: ${cw}x$ch, $cn coloured pixels in the plot area"
else bad "chart: $cw $ch $cn; $(grep "no chart" "$X/det.out.0")"; fi
compgen -G "$X/backup/det_chart.png.tmp*" > /dev/null && bad "the chart's temporary file was left"
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
# A chart that cannot be written (a folder in its place): said once, naming
# it, no temporary file left, and training goes on to its weights.
C=$X/backup/detbadchart_chart.png
mkdir "$C"
sed 's/^chart=0$/chart=1/' "$X/det.cfg" > "$X/detbadchart.cfg"
mn "$X/det-badchart" 2 detector train "$X/det.data" "$X/detbadchart.cfg" "$X/bb.weights"
said=$(grep -c "^darknet-mn: rank 0 ([^)]*): cannot write $C (syncing or renaming $C\.tmp\.[^ ]*): Is a directory$" "$X/det-badchart.err.0")
if all_rc "$X/det-badchart" 2 0 && [ "$said" = 1 ] && grep -q "training goes on without the chart $C$" "$X/det-badchart.err.0" &&
   [ -s "$X/backup/detbadchart_final.weights" ] && ! compgen -G "$C.tmp*" > /dev/null; then
    ok "unwritable chart: said once ($(grep -m1 'cannot write' "$X/det-badchart.err.0")), training went on"
else bad "unwritable chart: exit codes $(rcs "$X/det-badchart" 2), said $said times: $(grep -m2 'chart' "$X/det-badchart.err.0")"; fi
rmdir "$C"

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

echo "-- without cairo (make CAIRO=0)"
# Darknet's library is the default build's; only the plugin is built again.
NC=$BUILD/cpu-nocairo/darknet_mn
t0=$SECONDS
if make -s -j"$(nproc)" BUILD="$BUILD" CAIRO=0 "$NC" > "$X/nocairo-build.log" 2>&1; then ok "make CAIRO=0 builds $NC ($((SECONDS - t0)) s)"
else bad "make CAIRO=0 (see $X/nocairo-build.log)"; tail -5 "$X/nocairo-build.log"; finish; fi
cairo=$(ldd "$PROG" | awk '/libcairo\./ {print $1}') nc_cairo=$(ldd "$NC" | awk '/libcairo/ {print $1}')
if [ -n "$cairo" ] && [ -z "$nc_cairo" ]; then ok "ldd: $NC needs no libcairo ($PROG needs $cairo)"
else bad "ldd: $PROG needs '$cairo', $NC needs '$nc_cairo'"; fi
NO_CAIRO="this darknet_mn was built without cairo (make CAIRO=1 with libcairo2-dev)"
on_ranks "$X/info" 60 2 -- "$PROG" info
on_ranks "$X/nc-info" 60 2 -- "$NC" info
if all_rc "$X/info" 2 0 && all_rc "$X/nc-info" 2 0 && grep -q '^chart: cairo [0-9.]*$' "$X/info.out.0" &&
   grep -qx 'chart: none (built without cairo: no training chart, timeline picture or predictions.png)' "$X/nc-info.out.0" &&
   [ "$(tail -1 "$X/nc-info.out.0")" = "all well" ]; then
    ok "info: '$(grep '^chart:' "$X/nc-info.out.0")' (the default build: '$(grep '^chart:' "$X/info.out.0")')"
else bad "info's chart line: exit codes $(rcs "$X/nc-info" 2), '$(grep '^chart' "$X/nc-info.out.0")', default '$(grep '^chart' "$X/info.out.0")'"; fi
# (count LINE FILES...: how many times LINE is a whole line of the files)
count() { local l=$1; shift; cat "$@" 2> /dev/null | grep -cxF -- "$l"; }
# Training with chart=1 (the default) and a timeline: the log and the trace,
# no PNG, each said once by rank 0.
sed '/^chart=/d' "$X/det.cfg" > "$X/nc.cfg"
sed "s|^backup=.*|backup=$X/nc-backup|" "$X/det.data" > "$X/nc.data"
mkdir -p "$X/nc-backup"
on_ranks "$X/nc" 120 2 MN_TIMELINE="$X/nc.json" -- "$NC" detector train "$X/nc.data" "$X/nc.cfg" "$X/bb.weights"
chart_line="darknet-mn: no chart: $NO_CAIRO; the log is $X/nc-backup/nc_log.csv"
tl_line="darknet-mn: no picture of the timeline: $NO_CAIRO; the trace is $X/nc.json"
wrote_line="darknet-mn: wrote the timeline $X/nc.json (open it in chrome://tracing or ui.perfetto.dev)"
if all_rc "$X/nc" 2 0 && [ "$(wc -l < "$X/nc-backup/nc_log.csv")" = 5 ] && [ -s "$X/nc-backup/nc_final.weights" ] &&
   [ -z "$(ls "$X/nc-backup" | grep -i png)" ] && [ "$(count "$chart_line" "$X"/nc.out.* "$X"/nc.err.*)" = 1 ] &&
   [ "$(count "$chart_line" "$X/nc.out.0")" = 1 ]; then
    ok "CAIRO=0 detector train on 2 ranks: the log's 4 rows, no chart; once: $chart_line"
else bad "CAIRO=0 detector train: exit codes $(rcs "$X/nc" 2), $(ls "$X/nc-backup" | tr '\n' ' '), '$chart_line' $(count "$chart_line" "$X"/nc.out.* "$X"/nc.err.*) times"; fi
if python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$X/nc.json" 2> /dev/null && ! ls "$X"/nc.json.png* > /dev/null 2>&1 &&
   [ "$(count "$tl_line" "$X"/nc.out.* "$X"/nc.err.*)" = 1 ] && [ "$(count "$wrote_line" "$X/nc.out.0")" = 1 ]; then
    ok "CAIRO=0 timeline: the trace, no picture; once: $tl_line"
else bad "CAIRO=0 timeline: $(ls "$X"/nc.json* 2>&1 | tr '\n' ' '), '$tl_line' $(count "$tl_line" "$X"/nc.out.* "$X"/nc.err.*) times"; fi
on_ranks "$X/nc0" 120 2 -- "$NC" detector train "$X/nc.data" "$X/det.cfg" "$X/bb.weights"
if all_rc "$X/nc0" 2 0 && ! grep -qF "$NO_CAIRO" "$X"/nc0.out.* "$X"/nc0.err.*; then ok "CAIRO=0 with chart=0: nothing said about a chart"
else bad "CAIRO=0 with chart=0: exit codes $(rcs "$X/nc0" 2), $(grep -hF "$NO_CAIRO" "$X"/nc0.out.* "$X"/nc0.err.*)"; fi
# detector test: the default build's detections, no PNG. From the backbone's
# weights (the head as initialised: boxes above the threshold; 4 iterations'
# weights find none).
img=$(sed -n 2p "$X/s1/valid.list")
mn "$X/bb-dtest" 2 detector test "$X/det.data" "$X/det.cfg" "$X/bb.weights" "$img" -out "$X/bb-pred"
on_ranks "$X/nc-dtest" 120 2 -- "$NC" detector test "$X/det.data" "$X/det.cfg" "$X/bb.weights" "$img" -out "$X/nc-pred"
detections() { grep -v -e ': Predicted in [0-9.]* seconds\.$' -e '^darknet-mn: ' "$1"; }
pred_line="darknet-mn: $X/nc-pred.png not written: $NO_CAIRO"
found=$(detections "$X/nc-dtest.out.0" | grep -c '^[a-z]*: [0-9]*% (x ')
if all_rc "$X/bb-dtest" 2 0 && all_rc "$X/nc-dtest" 2 0 && [ "$found" -gt 0 ] && [ -s "$X/bb-pred.png" ] &&
   [ "$(detections "$X/nc-dtest.out.0")" = "$(detections "$X/bb-dtest.out.0")" ] && ! ls "$X"/nc-pred* > /dev/null 2>&1 &&
   [ "$(count "$pred_line" "$X"/nc-dtest.out.* "$X"/nc-dtest.err.*)" = 1 ]; then
    ok "CAIRO=0 detector test on 2 ranks: exit 0, the default build's $found detections, no PNG; once: $pred_line"
else bad "CAIRO=0 detector test: exit codes $(rcs "$X/nc-dtest" 2), $found detections, $(ls "$X"/nc-pred* 2>&1 | head -1), '$pred_line' $(count "$pred_line" "$X"/nc-dtest.out.* "$X"/nc-dtest.err.*) times"; fi
finish
