#!/usr/bin/env bash
# The C unit tests under AddressSanitizer and UndefinedBehaviorSanitizer, on
# 1-4 ranks: `make test-sanitize` (or `make test SANITIZE=1`) builds the plugin
# and the tests with -fsanitize=address,undefined into build/cpu-asan first.
# Any sanitizer report fails the run: ASan and UBSan halt on the first error,
# and a log that holds a report fails even when the exit status is 0.
# Leaks are checked in every run but training: Open MPI's own allocations
# (kept from MPI_Init to exit) are suppressed by library in tests/sanitize/lsan.supp,
# which needs the slow, complete unwinder on malloc (fast_unwind_on_malloc=0).
# ./darknet_mn's training driver leaves what it set up to the exit on its
# error paths, so training and the user errors run without leak checks.
TEST_BIN=${TEST_BIN:-${BUILD:-build}/cpu-asan/tests}
PROG=${PROG:-$(dirname "$TEST_BIN")/darknet_mn}
. "$(dirname "$0")/../helpers/lib.sh"
DK=${DK:-third_party/darknet-cpu}
T=$(pwd)/$BUILD/test-sanitize
rm -rf "$T" && mkdir -p "$T"
ASAN=halt_on_error=1:fast_unwind_on_malloc=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:suppressions=$(pwd)/tests/sanitize/asan.supp
export ASAN_OPTIONS=$ASAN:detect_leaks=1
export LSAN_OPTIONS=suppressions=$(pwd)/tests/sanitize/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
REPORT='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|WARNING: AddressSanitizer'
skipped=0
ran=" "

# run NAME NP [ENV=V...] -- CMD...: NP 0 runs CMD without mpiexec.
run() {
    local name=$1 np=$2; shift 2
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    ran="$ran$(basename "$1") "
    if [ ! -x "$1" ]; then skipped=$((skipped + 1)); echo "SKIP $name: $1 is not built (not in TESTS)"; return; fi
    local launch=(timeout 300) t0=$SECONDS
    [ "$np" = 0 ] || launch+=($MPI -n "$np")
    if env "${envs[@]}" "${launch[@]}" "$@" > "$T/$name.log" 2>&1 && ! grep -Eq "$REPORT" "$T/$name.log"; then
        ok "$name ($((SECONDS - t0))s)"
    else
        bad "$name (see $T/$name.log)"
        grep -E -m1 -A12 "$REPORT" "$T/$name.log" || tail -5 "$T/$name.log"
    fi
}

echo "== unit tests under ASan+UBSan ($TEST_BIN)"
for n in 1 2 3 4; do
    run "comm-np$n" $n -- "$TEST_BIN/test_comm"
    run "scatter-np$n" $n -- "$TEST_BIN/test_scatter" "$T"
    run "bnavg-np$n" $n -- "$TEST_BIN/test_bnavg" "$T"
    [ "$n" = 2 ] && run "big-np2" 2 -- "$TEST_BIN/test_big"
done
run comm-forced-2x2 4 MN_RANKS_PER_NODE=2 -- "$TEST_BIN/test_comm"
run comm-forced-2+1 3 MN_RANKS_PER_NODE=2 -- "$TEST_BIN/test_comm"
for n in 1 2 3 4; do
    for s in 1 2; do
        for comm in naive flat; do
            mkdir -p "$T/eq-$comm-$n-$s"
            run "equiv-$comm-np$n-sub$s" $n -- "$TEST_BIN/test_equiv" $comm $s "$T/eq-$comm-$n-$s"
        done
        mkdir -p "$T/sb1-$n-$s"
        run "syncbn-np$n-sub$s" $n -- "$TEST_BIN/test_syncbn" 1 $s "$T/sb1-$n-$s"
    done
done
mkdir -p "$T/sb0"
run no-syncbn-np2 2 -- "$TEST_BIN/test_syncbn" 0 1 "$T/sb0"
run map 1 -- "$TEST_BIN/test_map"
run gpu-select 0 -- "$TEST_BIN/test_gpu_select"
run gpu-logic 0 -- "$TEST_BIN/test_gpu_logic"
run rules 1 -- "$TEST_BIN/test_rules" "$T"
run queue-orders 1 -- "$TEST_BIN/test_queue"   # the GPU orders on host queues, threads and pauses
run delay-compensation 1 -- "$TEST_BIN/test_stale"
for n in 1 2 3; do run "dbuf-exchange-np$n" $n -- "$TEST_BIN/test_dbuf"; done   # double buffering's thread
# The guard ends a stalled setup by exiting every rank: a non-zero exit with
# its message is the pass here, and no sanitizer report (tests/run.sh times it;
# the exit leaves what setup made to the OS, so no leak check).
ran="${ran}test_guard "
if ASAN_OPTIONS=$ASAN:detect_leaks=0 timeout 60 $MPI -n 2 "$TEST_BIN/test_guard" guard > "$T/guard.log" 2>&1; then bad "guard: exit 0 (see $T/guard.log)"
elif grep -Eq "$REPORT" "$T/guard.log" || ! grep -q 'communicator setup before the first gradient allreduce did not complete in time' "$T/guard.log"; then
    bad "guard (see $T/guard.log)"; grep -E -m1 -A12 "$REPORT" "$T/guard.log" || tail -5 "$T/guard.log"
else ok "guard: the stalled setup ends every rank, no sanitizer report"; fi
for n in 1 2 3; do run "replica-np$n" $n -- "$TEST_BIN/test_replica" "$T"; done
# The fork cannot load its pjreddie-style ResNets (a shortcut across each
# stride), and cspx-p7-mish.cfg has anchors past num: refused, as tests/e2e/run_alexeyab.sh checks.
run stock-cfgs-accepted 2 -- "$TEST_BIN/test_cfg" $(ls "$DK"/cfg/*.cfg | grep -Ev "alexeyab.*/(resnet50|resnet101|resnet152|resnext152-32x4d|cspx-p7-mish)\.cfg$") cfg/*.cfg
run shapes 0 -- "$TEST_BIN/mn_shapes" "$T/shapes" train 8 1 jpg

# ./darknet_mn itself (the sanitized build) on 2 ranks: short classifier and
# detector training with evaluation, then user errors, each with its message.
echo "== ./darknet_mn under ASan+UBSan ($PROG)"
S=$T/shapes
"$TEST_BIN/mn_shapes" "$S" valid 8 2 png > /dev/null 2>&1
ln -sf "$S"/labels/*.txt "$S/images/"   # AlexeyAB's fork reads each label beside its image
mkdir -p "$T/cls"
printf 'class0\nclass1\n' > "$T/cls/labels.txt"
i=0
for f in "$S"/images/*.jpg "$S"/images/*.png; do   # a classifier set from the same images: the label in the name
    ln -sf "$f" "$T/cls/$(printf %04d $i)_class$((i % 2)).${f##*.}"
    echo "$T/cls/$(printf %04d $i)_class$((i % 2)).${f##*.}"
    i=$((i + 1))
done > "$T/cls/all.list"
run cache 0 -- "$TEST_BIN/test_cache" "$T/cls/all.list"   # 8 loader threads on the image cache
run loops 1 -- "$TEST_BIN/test_loops" "$T"   # the layer engine's leaky and 2x2 maxpool loops, its batch norm
printf 'classes=2\ntrain=%s/cls/all.list\nvalid=%s/cls/all.list\nlabels=%s/cls/labels.txt\nbackup=%s/cls/backup\ntop=1\n' "$T" "$T" "$T" "$T" > "$T/cls.data"
clscfg() {   # clscfg FILE [distributed lines...]: the tiny classifier (tests/helpers/lib.sh), 32x32, batch norm, 2 classes
    local f=$1; shift
    mn_cfg "$f" batch=2 width=32 height=32 learning_rate=0.01 -burn_in -policy -steps -scales max_batches=3 \
        '[convolutional]' batch_normalize=1 filters=4 '[maxpool]' '[connected]' output=2 '[softmax]' ${1+-- "$@"}
}
clscfg "$T/cls.cfg" eval_interval=2 bn_average=1 sync_bn=1
NOLEAK=ASAN_OPTIONS=$ASAN:detect_leaks=0
run classifier-train 2 "$NOLEAK" -- "$PROG" classifier train "$T/cls.data" "$T/cls.cfg"
run classifier-valid 2 -- "$PROG" classifier valid "$T/cls.data" "$T/cls.cfg" "$T/cls/backup/cls_final.weights"
# double buffering's thread, float16 and checkpoints (which wait for the mean in flight)
clscfg "$T/clsdb.cfg" double_buffering=1 allreduce_grad_dtype=float16 checkpoint_interval=2
sed -i 's/^max_batches=3/max_batches=5/' "$T/clsdb.cfg"
run classifier-train-dbuf 2 "$NOLEAK" -- "$PROG" classifier train "$T/cls.data" "$T/clsdb.cfg"
# overlap's thread and buckets (MN_PIECE_BYTES=1024: several), float16, sync_bn, the timeline
clscfg "$T/clsov.cfg" overlap=1 bucket_mb=0.001 allreduce_grad_dtype=float16 sync_bn=1 checkpoint_interval=2 "timeline=$T/clsov.json"
sed -i 's/^max_batches=3/max_batches=5/' "$T/clsov.cfg"
run classifier-train-overlap 3 "$NOLEAK" MN_PIECE_BYTES=1024 -- "$PROG" classifier train "$T/cls.data" "$T/clsov.cfg"
# The tiny detector (tests/helpers/lib.sh) with one stage of stride 2 and two maxpools, random=1.
mn_cfg "$T/det.cfg" detector batch=2 -burn_in -policy -steps -scales max_batches=2 '[convolutional]' batch_normalize=1 stride=2 \
    '[maxpool]' '[maxpool]' '[convolutional]' size=1 filters=24 activation=linear '[yolo]' random=1 -- eval_interval=1
printf 'classes=3\ntrain=%s/valid.list\nvalid=%s/valid.list\nnames=%s/names.txt\nbackup=%s/det\nresults=%s/det\n' "$S" "$S" "$S" "$T" "$T" > "$T/det.data"
mkdir -p "$T/det"
run detector-train 2 "$NOLEAK" -- "$PROG" detector train "$T/det.data" "$T/det.cfg"
run detector-map 2 -- "$PROG" detector map "$T/det.data" "$T/det.cfg" "$T/det/det_final.weights"

# refused_clean NAME PATTERN DATA CFG: every rank fails with the message, and no sanitizer report.
refused_clean() {
    local name=$1 pat=$2
    shift 2
    if env "$NOLEAK" timeout 120 $MPI -n 2 "$PROG" classifier train "$@" > "$T/$name.log" 2>&1; then
        bad "$name: exit status 0 (see $T/$name.log)"
    elif grep -Eq "$REPORT" "$T/$name.log" || ! grep -q -- "$pat" "$T/$name.log"; then
        bad "$name (see $T/$name.log)"; grep -E -m1 -A12 "$REPORT" "$T/$name.log"
    else
        ok "$name: $(grep -m1 -- "$pat" "$T/$name.log")"
    fi
}
clscfg "$T/novalue.cfg" shuffle
refused_clean error-no-value "novalue.cfg:[0-9]*: 'shuffle' is not key=value" "$T/cls.data" "$T/novalue.cfg"
printf '%s\n\0x.png\n' "$(head -1 "$T/cls/all.list")" > "$T/nul.list"
sed "s|^train=.*|train=$T/nul.list|" "$T/cls.data" > "$T/nul.data"
refused_clean error-nul-list "nul.list: line 2 holds a NUL byte" "$T/nul.data" "$T/cls.cfg"
printf 'class0\n\nclass1\n' > "$T/cls/empty-label.txt"
sed "s|^labels=.*|labels=$T/cls/empty-label.txt|" "$T/cls.data" > "$T/empty-label.data"
refused_clean error-empty-label "empty-label.txt: line 2 is empty" "$T/empty-label.data" "$T/cls.cfg"

# A unit test added to TESTS without an invocation here is named, not silently left out.
for t in "$TEST_BIN"/test_*; do
    [ -x "$t" ] || continue
    case "$ran" in *" $(basename "$t") "*) ;; *) skipped=$((skipped + 1)); echo "SKIP $(basename "$t"): no invocation in tests/sanitize/sanitize.sh";; esac
done

finish sanitizers
