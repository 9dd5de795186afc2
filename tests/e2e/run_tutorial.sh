#!/usr/bin/env bash
# A user's own set, with the commands the Darknet tutorials print, on every
# base built here (pjreddie's always; AlexeyAB's where run_alexeyab.sh, or
# make DARKNET=alexeyab, built it):
#  - `detector train obj.data yolo.cfg -dont_show -map -log FILE` on 2
#    ranks, with the labels beside the images (AlexeyAB's and hank-ai's
#    guides) and in an images -> labels folder (pjreddie's): both train, the
#    run says once which rule found the labels where it is not the base's,
#    -map evaluates at max_batches into the _best weights, -log holds rank
#    0's output and nothing of it is left on the terminal;
#  - labels in neither place: one error naming the file the base looked for;
#  - -map without a valid list, an unwritable -log, and the flags that
#    cannot apply under MPI (-gpus, -mjpeg_port, -http_post_host): one
#    clear message, every rank non-zero, no file.
# -map's cadence and the label rules by exact values: tests/unit/test_rules.c.
# Run by tests/run.sh (T, TEST_BIN, MPI), or alone from the repository root.
. "$(dirname "$0")/../helpers/lib.sh"
suite_folder tutorial
U=$G

if on_mpi "$U/rules.log" 60 1 -- "$TEST_BIN/test_rules" "$U"; then ok "$(grep -m1 '^test_rules:' "$U/rules.log")"
else bad "test_rules (see $U/rules.log)"; grep FAIL "$U/rules.log" | head -5; fi

set_of() { shapes_set "$U/set-$1" "$1"; }
# The tiny yolo of tests/helpers/lib.sh for 3 classes, 4 updates of 8 images.
mn_cfg "$U/yolo.cfg" detector max_batches=4

bases="pjreddie:$PROG"
AB_PROG=$BUILD/alexeyab-cpu/darknet_mn
[ -x "$AB_PROG" ] && bases="$bases alexeyab:$AB_PROG"
[ -x "$AB_PROG" ] || echo "note: $AB_PROG not built (make DARKNET=alexeyab): AlexeyAB's rows not run"
for base_prog in $bases; do
    base=${base_prog%%:*} prog=${base_prog#*:}
    for layout in beside folder; do
        name=$base-$layout
        data=$(set_of "$layout") || { bad "$name: mn_shapes could not write the set"; continue; }
        s=$(dirname "$data")
        log=$U/$name.log
        rm -f "$s"/backup/yolo_*.weights   # the other base's training of the set: beside it a run from scratch is refused
        on_ranks "$U/$name" 180 2 -- "$prog" detector train "$data" "$U/yolo.cfg" -dont_show -map -log "$log"
        # Which rule the base itself follows: pjreddie's the folder, the fork's beside.
        own=folder; [ "$base" = alexeyab ] && own=beside
        want_rule="no 'labels:' line"
        if [ "$layout" != "$own" ]; then
            where="beside the image"; [ "$layout" = folder ] && where="in Darknet's images -> labels folder"
            want_rule="darknet-mn: labels: 8 of 8 training images have no label file where .* Darknet looks and use the one $where"
        fi
        rule_ok=0
        if [ "$layout" = "$own" ]; then ! grep -q '^darknet-mn: labels:' "$log" && rule_ok=1
        else [ "$(grep -c "^$want_rule" "$log")" = 1 ] && rule_ok=1; fi
        if ! all_rc "$U/$name" 2 0; then bad "$name: exit codes $(rcs "$U/$name" 2): $(cat "$U/$name".err.* | head -3)"
        elif [ $rule_ok != 1 ]; then bad "$name: want $want_rule: $(grep 'labels' "$log" | head -2)"
        elif ! grep -q '^darknet-mn: -map: evaluating mAP@0.5 every 100 iterations (4 epochs of 8 images, at least 100), not before iteration 10 (burn_in), and at 4 (max_batches)' "$log"; then
            bad "$name: no -map start line in $log"
        elif [ "$(grep -c '^[0-9]*: eval mAP@0.5' "$log")" != 1 ] || ! grep -q '^4: eval mAP@0.5 [0-9.]* on 4 images' "$log"; then
            bad "$name: want one evaluation, at 4: $(grep ': eval' "$log")"
        elif [ ! -s "$s/backup/yolo_best.weights" ] || [ ! -s "$s/backup/yolo_final.weights" ]; then bad "$name: no _best or _final weights"
        elif grep -q "Can't open label file" "$log"; then bad "$name: the fork's loader found no labels: $(grep -m1 "Can't open" "$log")"
        elif grep -q 'loss' "$U/$name.out.0" "$U/$name.err.0"; then bad "$name: rank 0's output reached the terminal despite -log"
        elif [ ! -s "$log" ] || ! grep -q '^4: loss' "$log"; then bad "$name: $log lacks the training lines"
        else
            rule=$(grep -m1 '^darknet-mn: labels:' "$log" | cut -c13-120)
            ok "$name: detector train ... -dont_show -map -log: ${rule:-labels where the base looks}; $(grep '^4: eval' "$log" | cut -d, -f1)"
        fi
    done
    # Labels in neither place: the error names the file the base looked for.
    s=$U/set-none-$base
    "$TEST_BIN/mn_shapes" "$s" train 8 1 jpg > /dev/null && rm "$s"/labels/train0003.txt
    [ "$base" = alexeyab ] && mv "$s"/labels/*.txt "$s/images/"
    printf 'classes=3\ntrain=%s/train.list\nnames=%s/names.txt\nbackup=%s\n' "$s" "$s" "$U/$base-nolabels" > "$s/obj.data"
    looked=$s/labels/train0003.txt; [ "$base" = alexeyab ] && looked=$s/images/train0003.txt
    expect_error "$U/$base-nolabels" 2 "cannot read the labels of $s/images/train0003.jpg: $looked: No such file" -- \
        "$prog" detector train "$s/obj.data" "$U/yolo.cfg" -dont_show -map
    # -map with nothing to evaluate.
    printf 'classes=3\ntrain=%s/set-folder/train.list\nnames=%s/set-folder/names.txt\nbackup=%s\n' "$U" "$U" "$U/$base-novalid" > "$U/novalid.data"
    expect_error "$U/$base-novalid" 2 "-map but there is nothing to evaluate: give 'valid' in the data cfg$" -- \
        "$prog" detector train "$U/novalid.data" "$U/yolo.cfg" -map
done

# Refused before anything starts, on every base alike (main.c): the reason
# and what to do instead, every rank exit EX_USAGE (64), no file.
refuse() { local name=$1 pat=$2; shift 2; refused "$U/$name" "$pat" "$PROG" "$@"; }   # refuse NAME PATTERN ARGS (of $PROG)
d=$U/set-folder/obj.data
refuse gpus "^darknet-mn: -gpus is not used: darknet-mn runs one MPI rank per GPU; launch mpiexec -n 2 ./darknet_mn detector train $d $U/yolo.cfg -dont_show -map" \
    detector train "$d" "$U/yolo.cfg" -dont_show -map -gpus 0,1
refuse mjpeg "^darknet-mn: -mjpeg_port is not used: it streams Darknet's chart window over HTTP, and darknet-mn opens no window: rank 0 keeps the chart in <backup>/<cfg>_chart.png" \
    detector train "$d" "$U/yolo.cfg" -map -mjpeg_port 8090
refuse http-post "^darknet-mn: -http_post_host is not used: it posts detections of Darknet's video demo" \
    detector train "$d" "$U/yolo.cfg" -http_post_host localhost:8070
refuse map-epochs-alone "^darknet-mn: -mAP_epochs 2 sets how often -map evaluates: add -map$" detector train "$d" "$U/yolo.cfg" -mAP_epochs 2
refuse map-epochs-bad "^darknet-mn: -mAP_epochs '0' is not a whole number of epochs from 1 to 1000000$" detector train "$d" "$U/yolo.cfg" -map -mAP_epochs 0
refuse unknown "^darknet-mn: unknown flag '-show_imgs' for 'detector train'; valid flags: -clear -map -mAP_epochs -nogpu -log -dont_show$" \
    detector train "$d" "$U/yolo.cfg" -show_imgs
# -log into a folder that is not there: every rank stops, rank 0 names the file.
mkdir -p "$U/badlog"
on_ranks "$U/badlog" 60 2 -- "$PROG" detector train "$d" "$U/yolo.cfg" -log "$U/nope/train.log"
if all_rc "$U/badlog" 2 $EX_USAGE && grep -q "^darknet-mn: rank 0: -log: cannot write $U/nope/train.log: No such file or directory$" "$U/badlog.err.0"; then
    ok "an unwritable -log: $(head -1 "$U/badlog.err.0")"
else bad "an unwritable -log: exit $(rcs "$U/badlog" 2): $(cat "$U"/badlog.err.* | head -2)"; fi
finish tutorial
