#!/usr/bin/env bash
# A fork's GPU speed row (docs/gpu-check.md): on one GPU, the fork's
# cfg/yolov4-tiny.cfg (416x416, batch 64, 10 classes) trained by
#   stock  the fork's own darknet: AlexeyAB's unpatched, built with the
#          flags darknet-mn builds the fork with (CUDNN_HALF=0, no OpenMP,
#          no OpenCV); hank-ai's CLI from the tree darknet-mn builds on
#          (its hooks unset), with the same OpenCV as darknet-mn's
#   mn-1   darknet-mn on the fork's base, 1 rank
#   mn-2   the same on 2 ranks sharing the GPU (the staged route: each
#          gradient copied down, averaged on the host, copied up), batch 32
#          each: the same 64 images an update
# Images/s as bench/speed.sh counts them: the images of LONG - SHORT updates
# over the time of a LONG-update run minus that of a SHORT-update run, whole
# processes, so that startup and the final save cancel (iterations 21-80 by
# default); the systems alternate within a round; the median of ROUNDS.
# Prints a table and mn-1 against stock (the goal: within 2%), and appends
# both to OUT/gpu-speed.txt as each round ends; with each darknet-mn run, the
# time its averaging hook held the GPU's stream a step (MN_GPU_PROFILE=1).
# Env: STOCK (the stock darknet), PROG (darknet-mn's), MPI, CFG (the fork's
# cfg/yolov4-tiny.cfg), DET_DATA (a folder of images/ and labels/, as
# make fashion-det-data writes), OUT, SPEED_WORK (the runs' folder),
# STOCK_FLAGS (more of the stock darknet's options: -yes for hank-ai's
# CPU CLI, which asks before training on a CPU), SPEED_SHORT (20), SPEED_LONG (80),
# SPEED_ROUNDS (2). GPU_SPEED_DRY=1: the logic on CPU builds, at 64x64,
# batch 4, 2 and 4 updates, one round (the bundle's rehearsal, tests/gpu/gpu_builds.sh).
. "$(dirname "$0")/../tests/helpers/lib.sh"
DRY=${GPU_SPEED_DRY:-0}
: "${STOCK:?STOCK must name the stock darknet}" "${PROG:?PROG must name darknet-mn}"
: "${CFG:?CFG must name cfg/yolov4-tiny.cfg of the fork}" "${DET_DATA:?DET_DATA must name the images}"
O=${OUT:-$T/gpu-speed}
# The runs' cfgs, logs and weights stay out of OUT, which a lent machine
# sends back only a few files of.
W=${SPEED_WORK:-$T/gpu-speed-runs}
rm -rf "$W" && mkdir -p "$W" "$O"
if [ "$DRY" = 1 ]; then SHORT=2 LONG=4 ROUNDS=1 SIZE=64 BATCH=4
else SHORT=${SPEED_SHORT:-20} LONG=${SPEED_LONG:-80} ROUNDS=${SPEED_ROUNDS:-2} SIZE=416 BATCH=64; fi
DET_DATA=$(cd "$DET_DATA" 2> /dev/null && pwd) || { echo "gpu-speed: DET_DATA: no such folder"; exit 1; }   # the stock runs start in $W
ls "$DET_DATA"/images/train/*.jpg 2> /dev/null | head -256 > "$W/train.list"
[ -s "$W/train.list" ] || { echo "gpu-speed: no images under $DET_DATA/images/train/"; exit 1; }

# speed_cfg NAME UPDATES BATCH: the fork's cfg at SIZE, 10 classes, UPDATES
# updates, its own backup folder.
speed_cfg() {
    sed -e "s/^batch=.*/batch=$3/" -e "s/^width=.*/width=$SIZE/" -e "s/^height=.*/height=$SIZE/" \
        -e "s/^max_batches *=.*/max_batches=$2/" -e "s/^classes=80/classes=10/" -e "s/^filters=255/filters=45/" "$CFG" > "$W/$1.cfg"
    mkdir -p "$W/$1"
    printf 'classes=10\ntrain=%s\nvalid=%s\nnames=%s\nbackup=%s\n' "$W/train.list" "$W/train.list" \
        "$(pwd)/data/fashion.names" "$W/$1" > "$W/$1.data"
}
# timed SYSTEM UPDATES: one run; prints its seconds, or "failed".
timed() {
    local s=$1 n=$2 np=1 b=$BATCH t0 t1 rc
    [ "$s" = mn-2 ] && np=2 b=$((BATCH / 2))
    speed_cfg "$s-$n" "$n" "$b"
    t0=$(date +%s.%N)
    if [ "$s" = stock ]; then
        (cd "$W" && timeout 600 "$STOCK" detector train "$s-$n.data" "$s-$n.cfg" -dont_show ${STOCK_FLAGS:-}) > "$W/$s-$n.log" 2>&1
    else MN_GPU_PROFILE=1 timeout 600 $MPI -n "$np" "$PROG" detector train "$W/$s-$n.data" "$W/$s-$n.cfg" > "$W/$s-$n.log" 2>&1; fi
    rc=$?
    t1=$(date +%s.%N)
    # The stock program's exit after its final weights (hank-ai's CLI can
    # abort there, its threads not joined) is its own, not the training's:
    # timed, and said in the table.
    if [ $rc != 0 ] && [ "$s" = stock ] && ls "$W/$s-$n"/*final.weights > /dev/null 2>&1; then
        echo "    stock ($n updates) exited $rc after writing its final weights" >> "$W/notes"
        rc=0
    fi
    if [ $rc = 0 ] && ls "$W/$s-$n"/*final.weights > /dev/null 2>&1; then awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
    else echo failed; fi
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
SYSTEMS="stock mn-1 mn-2"
gpu=$(nvidia-smi -L 2> /dev/null | head -1)
{
    echo "# scripts/gpu_speed.sh$([ "$DRY" = 1 ] && echo " (dry run: CPU builds)"), $(date -u '+%Y-%m-%d %H:%M UTC'), ${gpu:-no GPU}"
    echo "# cfg/yolov4-tiny.cfg at ${SIZE}x$SIZE, 10 classes, batch $BATCH an update; images/s over updates $((SHORT + 1))-$LONG; $ROUNDS round(s)"
    echo "# stock: $STOCK; darknet-mn: $PROG"
} | tee -a "$O/gpu-speed.txt"
bad_runs=0
for ((r = 1; r <= ROUNDS; ++r)); do
    for s in $SYSTEMS; do
        a=$(timed "$s" "$SHORT") b=$(timed "$s" "$LONG")
        if [ "$a" = failed ] || [ "$b" = failed ]; then
            bad_runs=$((bad_runs + 1))
            # The runs' folder does not come back from a lent machine: the failed log's end goes into the table.
            { echo "round $r $s: a run failed (see $W/$s-*.log):"
              tail -n 3 "$W/$s-$([ "$a" = failed ] && echo "$SHORT" || echo "$LONG").log" | sed 's/^/    /'; } | tee -a "$O/gpu-speed.txt"
            continue
        fi
        ips=$(awk -v n=$((LONG - SHORT)) -v i="$BATCH" -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", n * i / (b - a) }')
        echo "$s $ips" >> "$W/ips"
        printf 'round %d %-6s %6.1f images/s (%s s and %s s)\n' "$r" "$s" "$ips" "$a" "$b" | tee -a "$O/gpu-speed.txt"
        # darknet-mn's own share of a step, from CUDA events (MN_GPU_PROFILE=1; GPU builds only)
        grep -h '^darknet-mn: MN_GPU_PROFILE' "$W/$s-$LONG.log" | sed 's/^/    /' | tee -a "$O/gpu-speed.txt"
    done
done
[ -f "$W/notes" ] && tee -a "$O/gpu-speed.txt" < "$W/notes"
declare -A med
for s in $SYSTEMS; do
    med[$s]=$(awk -v s="$s" '$1 == s { print $2 }' "$W/ips" 2> /dev/null | median)
    printf '%-6s median %s images/s\n' "$s" "${med[$s]:-none}" | tee -a "$O/gpu-speed.txt"
done
# spread: how far apart each system's rounds are (largest minus smallest over
# their midpoint): a difference from stock smaller than that is not judged.
spread() {
    if [ "$ROUNDS" -lt 2 ]; then echo "one round: its uncertainty unmeasured, so 2% cannot be judged (SPEED_ROUNDS=3 or more)"; return; fi
    local s out=
    for s in stock mn-1; do
        out+="$s $(awk -v s="$s" '$1 == s { v[++n] = $2 } END { mn = mx = v[1]; for (i = 2; i <= n; ++i) { if (v[i] < mn) mn = v[i]; if (v[i] > mx) mx = v[i] }
                  m = (mx + mn) / 2; printf "%.1f%%", m > 0 ? 100 * (mx - mn) / m : 0 }' "$W/ips"), "
    done
    echo "rounds' spread: ${out%, } (a difference below it is noise)"
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f%%", 100 * (a - b) / b }'; }
# On a GPU a median at or below 0 (a long run no longer than a short one)
# means the machine's noise swamped the updates: no figure. The dry run's
# CPU seconds on a shared machine judge only the logic.
positive() { awk -v v="$1" 'BEGIN { exit !(v > 0) }'; }
if [ "$DRY" = 0 ] && [ -n "${med[mn-1]}" ] && { ! positive "${med[stock]}" || ! positive "${med[mn-1]}" || ! positive "${med[mn-2]}"; }; then
    bad "gpu speed: not measured: a median at or below 0 images/s (stock ${med[stock]}, mn-1 ${med[mn-1]}, mn-2 ${med[mn-2]}); more updates (SPEED_LONG) or rounds"
elif [ $bad_runs = 0 ] && [ -n "${med[stock]}" ] && [ -n "${med[mn-1]}" ] && [ -n "${med[mn-2]}" ]; then
    echo "mn-1 against stock: $(pct "${med[mn-1]}" "${med[stock]}"); mn-2 against mn-1: $(pct "${med[mn-2]}" "${med[mn-1]}"); $(spread)" | tee -a "$O/gpu-speed.txt"
    ok "gpu speed$([ "$DRY" = 1 ] && echo " (dry run: the logic, on CPU builds)"): stock ${med[stock]}, mn-1 ${med[mn-1]}, mn-2 ${med[mn-2]} images/s; mn-1 against stock $(pct "${med[mn-1]}" "${med[stock]}")"
else bad "gpu speed: $bad_runs run(s) failed (see $W)"; fi
finish gpu-speed
