#!/usr/bin/env bash
# Rank-0-only output, both bases: classifier train, detector train, map and
# valid print as many lines on 3 ranks as on 1 (Darknet's per-iteration
# "Region" lines included); MN_RANK_LOG=<dir> keeps the other ranks' output
# in <dir>/rank-<N>.log; a rank > 0 that fails still shows its message on
# the terminal.
# Run by tests/run.sh (T, D, BUILD, MPI set there), or alone after it.
. "$(dirname "$0")/../helpers/lib.sh"
X=$T/output
rm -rf "$X" && mkdir -p "$X"
AB=$BUILD/alexeyab-cpu/darknet_mn
make -s DARKNET=alexeyab "$AB" > "$X/build.log" 2>&1 || { bad "make DARKNET=alexeyab (see $X/build.log)"; finish; }

# A detection slice in both layouts: labels/ beside images/ (pjreddie) and
# each label beside its image (the fork maps only COCO's and VOC's folders).
"$BUILD/tools/mn_fashion_det" /usr/share/datasets/fashion-mnist "$X/det" --train 16 --valid 6 > "$X/gen.log" 2>&1 ||
    { bad "mn_fashion_det (see $X/gen.log)"; finish; }
mkdir -p "$X/flat"
ln -s "$X/det/images/train"/*.jpg "$X/det/labels/train"/*.txt "$X/flat/"
ls "$X/flat"/*.jpg > "$X/flat.list"
printf 'classes=10\ntrain=%s\nvalid=%s\nnames=%s/data/fashion.names\nbackup=%s\nresults=%s\n' "$X/flat.list" "$X/flat.list" "$(pwd)" "$X/backup" "$X" > "$X/det.data"
printf 'classes=10\ntrain=%s\nvalid=%s\nlabels=%s\nbackup=%s\ntop=2\n' "$D/train.list" "$D/test.list" "$D/labels.txt" "$X/backup" > "$X/cls.data"
sed 's/^max_batches=.*/max_batches=3/; s/^batch=.*/batch=8/' cfg/fashion.cfg > "$X/cls.cfg"
sed 's/^max_batches=.*/max_batches=3/; s/^batch=.*/batch=4/' cfg/fashion-det.cfg > "$X/det-pj.cfg"
sed 's/^max_batches=.*/max_batches=3/; s/^batch=.*/batch=4/' cfg/yolov4-tiny-fashion.cfg > "$X/det-ab.cfg"

# lines BASE NAME NP ARGS...: the terminal's lines (stdout and stderr) of
# the command on NP ranks, but for rank 0's word that batch norm is per
# rank, which only a run of several ranks has (tests/e2e/run_eval.sh checks it).
lines() {
    local base=$1 name=$2 np=$3; shift 3
    local prog=./darknet_mn
    [ "$base" = alexeyab ] && prog=$AB
    timeout 120 $MPI -n "$np" "$prog" "$@" > "$X/$base-$name-$np.log" 2>&1
    echo "$? $(grep -avc "^darknet-mn: .*batch norm (layer [0-9]* on) normalizes over each rank's" "$X/$base-$name-$np.log") $(grep -ac 'Region\|v3 (' "$X/$base-$name-$np.log")"
}
for base in pjreddie alexeyab; do
    c=$X/det-pj.cfg
    [ $base = alexeyab ] && c=$X/det-ab.cfg
    for cmd in "classifier-train classifier train $X/cls.data $X/cls.cfg" \
               "detector-train detector train $X/det.data $c" \
               "detector-map detector map $X/det.data $c $X/backup/$(basename "$c" .cfg)_final.weights" \
               "detector-valid detector valid $X/det.data $c $X/backup/$(basename "$c" .cfg)_final.weights -out $base-valid-" \
               "classifier-valid classifier valid $X/cls.data $X/cls.cfg $X/backup/cls_final.weights"; do
        set -- $cmd
        name=$1; shift
        # the 3-rank run last, so the weights the next command reads are the ones both counts saw;
        # each training from scratch once the last one's weights are gone (beside them it is refused)
        [ "$2" = train ] && rm -f "$X/backup/$(basename "$4" .cfg)"_*.weights
        one=$(lines $base "$name" 1 "$@")
        [ "$2" = train ] && rm -f "$X/backup/$(basename "$4" .cfg)"_*.weights
        three=$(lines $base "$name" 3 "$@")
        if [ "${one%% *}" = 0 ] && [ "${three%% *}" = 0 ] && [ "${one#* }" = "${three#* }" ]; then
            ok "$base $name: 1 rank and 3 ranks print the same lines (exit, lines, Region lines: $one)"
        else bad "$base $name: 1 rank '$one', 3 ranks '$three' (exit, lines, Region lines; see $X/$base-$name-3.log)"; fi
    done
done

# MN_RANK_LOG: ranks 1 and 2 write their own Darknet output into the folder;
# the terminal still has rank 0's alone.
mkdir -p "$X/ranklog"
rm -f "$X/backup/det-pj"_*.weights
timeout 120 $MPI -x MN_RANK_LOG="$X/ranklog" -n 3 ./darknet_mn detector train "$X/det.data" "$X/det-pj.cfg" > "$X/ranklog.out" 2>&1
r0=$(grep -c Region "$X/ranklog.out"); r1=$(grep -c Region "$X/ranklog/rank-1.log" 2>/dev/null); r2=$(grep -c Region "$X/ranklog/rank-2.log" 2>/dev/null)
if [ "$r0" -gt 0 ] && [ "$r1" = "$r0" ] && [ "$r2" = "$r0" ] && [ ! -e "$X/ranklog/rank-0.log" ]; then
    ok "MN_RANK_LOG: $r0 Region lines on the terminal, $r1 and $r2 in rank-1.log and rank-2.log"
else bad "MN_RANK_LOG: terminal $r0, rank-1.log '$r1', rank-2.log '$r2' Region lines"; fi
timeout 60 $MPI -x MN_RANK_LOG=/nonexistent/dir -n 2 ./darknet_mn detector train "$X/det.data" "$X/det-pj.cfg" > "$X/ranklog-bad.out" 2>&1
rc=$?
if [ $rc != 0 ] && grep -q "^darknet-mn: rank 1: MN_RANK_LOG: cannot write /nonexistent/dir/rank-1.log: No such file or directory" "$X/ranklog-bad.out"; then
    ok "MN_RANK_LOG to a missing folder: exit $rc, $(grep -a '^darknet-mn' "$X/ranklog-bad.out" | head -1)"
else bad "MN_RANK_LOG to a missing folder: exit $rc, $(head -3 "$X/ranklog-bad.out")"; fi

# A rank > 0 fails while training (an image that is not an image, which
# deterministic unshuffled batches give to rank 2): its message reaches the
# terminal although its output does not.
echo "not an image" > "$X/flat/bad.jpg"; : > "$X/flat/bad.txt"
{ head -8 "$X/flat.list"; echo "$X/flat/bad.jpg"; tail -n +9 "$X/flat.list"; } > "$X/die.list"
sed "s#^train=.*#train=$X/die.list#" "$X/det.data" > "$X/die.data"
sed 's/^\[distributed\]/[distributed]\ndeterministic=1\nshuffle=0/' "$X/det-pj.cfg" > "$X/die.cfg"
timeout 60 $MPI -n 3 ./darknet_mn detector train "$X/die.data" "$X/die.cfg" > "$X/die.out" 2>&1
rc=$?
if [ $rc != 0 ] && grep -aq "^darknet-mn: rank 2 (.*): image $X/flat/bad.jpg is not a JPEG/PNG/BMP/TGA image" "$X/die.out"; then
    ok "rank 2 fails: exit $rc; the terminal has its message: $(grep -a '^darknet-mn: rank 2' "$X/die.out" | head -1 | cut -c1-100)"
else bad "rank 2 fails: exit $rc (see $X/die.out)"; fi

finish
