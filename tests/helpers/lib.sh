# The shell suites' library, sourced first by tests/run.sh and every suite
# of tests/suites.txt: . "$(dirname "$0")/../helpers/lib.sh"
#  - the preamble: set -u, the repository root as the working folder, the
#    defaults of BUILD, TEST_BIN, PROG, MPI, T and D, Open MPI as root and
#    oversubscribed;
#  - the counters, ok, bad, skip and finish; run_suites, the suites of a tag;
#  - launches: a command on N ranks under a time limit keeping each rank's
#    output and exit code (rank_cmd, on_ranks, mn), their checks (all_rc,
#    rcs), a user error every rank stops on (expect_error), a command line
#    refused (refused), a job hit mid-training (bg_ranks, rank_signal,
#    wait_iter, ends_within), a C test under mpiexec (on_mpi, unit_test);
#  - the data: fashion_slice, suite_folder, fork_y4_cfg and fork_det_data (the
#    detection set in the forks' layout), shapes_set;
#  - the cfgs: one generator, mn_cfg, of the tiny classifier and detector.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
BUILD=${BUILD:-build}
TEST_BIN=${TEST_BIN:-$BUILD/cpu/tests}
PROG=${PROG:-./darknet_mn}
MPI=${MPI:-mpiexec --oversubscribe}
# tests/run.sh hands its suites T (their scratch folder) and D (its slice of
# Fashion-MNIST); run alone, a suite has tests/run.sh's folders, or makes its
# own (T_GIVEN and D_GIVEN say which were handed over).
T_GIVEN=${T:+1} D_GIVEN=${D:+1}
T=${T:-$(pwd)/$BUILD/test}
D=${D:-$T/fashion}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# darknet_mn's exit statuses (plugin/darknet_mn.h, docs/user-guide.md "Exit statuses").
EX_USAGE=64 EX_USER=65 EX_FAULT=70 EX_REFUSED=73 EX_RERUN=75

pass=0
fail=0
# ROW_DONE: a command run after each result line (scripts/gpu_check.sh
# keeps its runs' outputs there as each row ends).
ok() { pass=$((pass + 1)); echo "ok   $*"; ${ROW_DONE:-}; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; ${ROW_DONE:-}; }
# skip WHY: a check this machine cannot make, counted apart, saying why.
skip() { skipped=$((${skipped:-0} + 1)); echo "skip $*"; ${ROW_DONE:-}; }
# clean_copy DEST: the checkout as a clone has it, into DEST: the files git
# tracks and those it does not ignore; in a tree exported without its .git
# (git archive, as CI's fresh root holds it), every file but what
# .gitignore names (build outputs, fetched sources).
clean_copy() {
    mkdir -p "$1"
    if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
        git ls-files -co --exclude-standard -z | tar --null -T - -cf - 2> /dev/null | tar -C "$1" -xf -
        return
    fi
    local ex=() p
    while read -r p; do
        p=${p%/}
        [ -n "$p" ] || continue
        case $p in /*) ex+=(--exclude="./${p#/}") ;; *) ex+=(--exclude="$p") ;; esac
    done < .gitignore
    tar "${ex[@]}" -cf - . | tar -C "$1" -xf -
}
# finish [LABEL]: the suite's summary line; exits non-zero on any failure.
finish() {
    echo "== ${1:+$1: }$pass passed, $fail failed${skipped:+, $skipped skipped}"
    [ "$fail" = 0 ] && exit 0
    exit 1
}
# run_suites TAG [VAR=VALUE...]: each suite tests/suites.txt tags TAG, in
# its order, with the row's settings and these; a result line for each.
run_suites() {
    local tag=$1 tags file sets t0 n=0
    shift
    while read -r tags file sets <&3; do
        case $tags in '#'* | '') continue ;; esac
        [[ ",$tags," == *",$tag,"* ]] || continue
        n=$((n + 1))
        echo "== $file"
        t0=$SECONDS
        # shellcheck disable=SC2086  # a row's settings are words
        if env "$@" $sets bash "$file" 3<&-; then ok "$file ($((SECONDS - t0)) s)"; else bad "$file ($((SECONDS - t0)) s)"; fi
    done 3< tests/suites.txt
    [ $n -gt 0 ] || bad "no suite in tests/suites.txt is tagged '$tag'"
}

# fashion_slice DIR NTRAIN NTEST [LOG]: D becomes a new slice of Fashion-MNIST in DIR.
fashion_slice() {
    D=$1
    "$BUILD/tools/mn_fashion" /usr/share/datasets/fashion-mnist "$D" --limit-train "$2" --limit-test "$3" > "${4:-/dev/null}" 2>&1
}

# fork_det_data: the detection set (make fashion-det-data, made once) in
# the forks' layout in $T/det, each label file beside its image (AlexeyAB's
# replace_image_to_label maps only COCO's and VOC's folders), and $T/y4.data
# naming it, backups in $T/backup; non-zero when the set cannot be made.
# fork_y4_cfg OUT: cfg/yolov4-tiny-fashion.cfg for 60 iterations at half the
# full rate from the start (no burn-in), the short detector both forks'
# suites train. At the full rate, 0.01, hank-ai's run went NaN at iteration
# 50 on an AVX-512 machine (loss 2 to 49 at 46-47) and not on others; at
# 0.005 and 0.003 no loss after iteration 20 passed 2.9 there.
fork_y4_cfg() {
    sed 's/^max_batches=.*/max_batches=60/; s/^burn_in=.*/burn_in=0/; s/^learning_rate=.*/learning_rate=0.005/' \
        cfg/yolov4-tiny-fashion.cfg > "$1"
}
fork_det_data() {
    local det=$BUILD/fashion-det m=$T/det s
    if [ ! -f "$det/.stamp" ]; then make -s fashion-det-data > "$T/det-data.log" 2>&1 || return 1; fi
    for s in train valid; do
        mkdir -p "$m/$s"
        ln -s "$(pwd)/$det/images/$s"/*.jpg "$(pwd)/$det/labels/$s"/*.txt "$m/$s/"
        ls "$m/$s"/*.jpg > "$m/$s.list"
    done
    printf 'classes=10\ntrain=%s\nvalid=%s\nnames=%s\nbackup=%s\n' "$m/train.list" "$m/valid.list" "$(pwd)/data/fashion.names" \
        "$T/backup" > "$T/y4.data"
}

# suite_folder NAME: G becomes a fresh $T/NAME; run alone (no T handed
# over), T is $T-NAME first, with a 512-image slice of its own.
suite_folder() {
    if [ -z "$T_GIVEN" ]; then
        T=$T-$1
        rm -rf "$T" && mkdir -p "$T"
        fashion_slice "$T/fashion" 512 200 "$T/fashion.log"
    fi
    G=$T/$1
    rm -rf "$G" && mkdir -p "$G"
}

# rank_cmd OUT CMD...: one rank's shell command line running CMD, its
# stdout, stderr and exit code in OUT.out.<rank>, OUT.err.<rank>, OUT.rc.<rank>.
# The rank is Open MPI's OMPI_COMM_WORLD_RANK or MPICH's PMI_RANK.
rank_cmd() {
    local o=$1; shift
    echo "r=\${OMPI_COMM_WORLD_RANK:-\$PMI_RANK}; $* > $o.out.\$r 2> $o.err.\$r; echo \$? > $o.rc.\$r"
}
# on_ranks OUT SECONDS NP [ENV=VALUE...] -- CMD...: CMD on NP ranks (each
# with every ENV) within SECONDS, kept as rank_cmd keeps it; mpiexec's own
# status in OUT.rc (124: killed by the time limit).
on_ranks() {
    local o=$1 s=$2 np=$3 envs=(); shift 3
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    # env rather than Open MPI's -x: MPICH's mpiexec has none.
    timeout "$s" $MPI -n "$np" env "${envs[@]}" sh -c "$(rank_cmd "$o" "$@")"
    echo $? > "$o.rc"
}
# mn OUT NP ARGS...: $PROG ARGS on NP ranks within 120 s (on_ranks).
mn() { local o=$1 np=$2; shift 2; on_ranks "$o" 120 "$np" -- "$PROG" "$@"; }
# all_rc OUT NP WANT: every rank's exit code (on_ranks) is WANT, or not 0 for WANT 'nonzero'.
all_rc() {
    local r rc
    for ((r = 0; r < $2; ++r)); do
        rc=$(cat "$1.rc.$r" 2> /dev/null) || return 1
        if [ "$3" = nonzero ]; then [ "$rc" != 0 ] || return 1; else [ "$rc" = "$3" ] || return 1; fi
    done
}
# gpu_none OUT PROG ARGS...: a GPU build on a machine without a usable GPU
# stops at start on 2 ranks, each non-zero, rank 0 saying why (mn_gpu_place),
# for any command (Darknet's layers would abort on their first device
# buffer, -nogpu or not).
gpu_none() {
    local o=$1 prog=$2; shift 2
    on_ranks "$o" 60 2 -- "$prog" "$@"
    if all_rc "$o" 2 nonzero && grep -q "this GPU build needs a CUDA device, also with -nogpu" "$o.err.0" && [ ! -s "$o.err.1" ]; then
        ok "GPU build without a GPU: $prog $1: $(head -1 "$o.err.0")"
    else bad "GPU build without a GPU: $prog $1: $(rcs "$o" 2); $(cat "$o".err.* | head -3)"; fi
}
# ended_with OUT NP WANT: every rank that reported exited WANT, and at
# least one did. A rank's shell killed by the launcher leaves no status: Open
# MPI's mpiexec ends the others once one rank exits non-zero, also when they
# were leaving with the same status.
ended_with() {
    local r rc seen=0
    for ((r = 0; r < $2; ++r)); do
        rc=$(cat "$1.rc.$r" 2> /dev/null) || continue
        [ "$rc" = "$3" ] || return 1
        seen=1
    done
    [ $seen = 1 ]
}
# signal_rank1 SIG DATA [RANK]: SIG to rank 1's (or RANK's) `$PROG
# classifier|detector train DATA ...`, not its shell, under Open MPI or
# MPICH (found in /proc: a bare GPU machine may lack pgrep). One grep reads
# every process's command line: two commands per process can take seconds on
# a busy machine, in which a fast run of 400 updates may have ended.
signal_rank1() {
    local f p r=${3:-1}
    for f in $(grep -lsaF -- "$PROG" /proc/[0-9]*/cmdline); do
        p=${f#/proc/}; p=${p%/cmdline}
        tr '\0' ' ' 2> /dev/null < "$f" | grep -q "^$PROG \(classifier\|detector\) train $2 " &&
            tr '\0' '\n' 2> /dev/null < "/proc/$p/environ" | grep -qx "OMPI_COMM_WORLD_RANK=$r\|PMI_RANK=$r" && kill "-$1" "$p"
    done
}
# want NAME: whether a suite's section NAME runs: every one, or those
# ONLY=name[,name...] lists (a suite may define its own default set).
want() { [ -z "${ONLY:-}" ] || [[ ",$ONLY," == *",$1,"* ]]; }
# rcs OUT NP: the ranks' exit codes, "0 0 " ("none" for a rank that left none).
rcs() { local r; for ((r = 0; r < $2; ++r)); do cat "$1.rc.$r" 2> /dev/null || echo none; done | tr '\n' ' '; }

# A job to hit mid-training (tests/e2e/run_fault.sh, tests/e2e/run_hankai.sh):
# bg_ranks OUT NP CMD...: CMD on NP ranks in the background (120 s at
# most), each rank's pid in OUT.pid.<rank>, the job's output in OUT.out and
# OUT.err, mpiexec's pid in OUT.mpiexec (that of a shell waiting for it)
# and its status, once it ended, in OUT.mrc.
bg_ranks() {
    local o=$1 np=$2; shift 2
    rm -f "$o".pid.* "$o".out "$o".err
    rm -f "$o.mrc"
    # mpiexec's status into OUT.mrc: ends_within runs in a subshell, where wait cannot reach it.
    (timeout 120 $MPI -n "$np" sh -c "echo \$\$ > $o.pid.\${OMPI_COMM_WORLD_RANK:-\$PMI_RANK}; exec $*" > "$o.out" 2> "$o.err"
     s=$?; echo $s > "$o.mrc"; exit $s) &
    echo $! > "$o.mpiexec"
}
# bg_done OUT SECONDS: until bg_ranks' job OUT has ended (its OUT.mrc is
# there), or SECONDS passed.
bg_done() {
    local i
    for ((i = 0; i < $2 * 10; ++i)); do [ -e "$1.mrc" ] && return 0; sleep 0.1; done
    return 1
}
# rank_signal SIG OUT R: signal rank R of job OUT, only while that pid is
# still one of our ranks (a pid reused by an unrelated process is left alone).
rank_signal() {
    local pid; pid=$(cat "$2.pid.$3" 2> /dev/null) || return 1
    [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q darknet_mn && kill "-$1" "$pid" 2> /dev/null
}
# wait_iter OUT K: until rank 0 reported iteration K (or 60 s); K '[0-9]*':
# any iteration (a resumed run starts past the first ones).
wait_iter() {
    local i
    for ((i = 0; i < 3000; ++i)); do
        grep -aq "^$2: loss" "$1.out" 2> /dev/null && return 0
        sleep 0.02
    done
    return 1
}
# ends_within OUT SECONDS: mpiexec and every rank gone in time, mpiexec non-zero.
ends_within() {
    local o=$1 limit=$2 t0=$SECONDS pid alive
    local mp; mp=$(cat "$o.mpiexec")
    while kill -0 "$mp" 2> /dev/null; do
        if ((SECONDS - t0 > limit)); then echo "mpiexec still running after ${limit}s"; return 1; fi
        sleep 0.1
    done
    local rc; rc=$(cat "$o.mrc" 2> /dev/null || echo none)
    for pid in $(cat "$o".pid.*); do
        # Gone, or a zombie not yet reaped (its state in /proc/PID/stat is Z).
        alive=1; for _ in 1 2 3 4 5 6 7 8 9 10; do
            if ! kill -0 "$pid" 2> /dev/null || [ "$(awk '{print $3}' "/proc/$pid/stat" 2> /dev/null)" = Z ]; then alive=0; break; fi
            sleep 0.2
        done
        [ $alive = 0 ] || { echo "rank process $pid still alive"; return 1; }
    done
    echo "$((SECONDS - t0))s, mpiexec status $rc"
    [ "$rc" != 0 ]
}
# refused DIR PATTERN PROG ARGS...: a command line refused before anything
# starts (main.c): every rank of 2 exits EX_USAGE, rank 0 alone prints a line
# matching PATTERN, DIR (the run's backup folder) stays empty.
refused() {
    local dir=$1 pat=$2; shift 2
    mkdir -p "$dir"
    on_ranks "$dir" 60 2 -- "$@"
    if all_rc "$dir" 2 $EX_USAGE && grep -q -- "$pat" "$dir.err.0" && [ ! -s "$dir.err.1" ] && [ -z "$(ls -A "$dir")" ]; then
        ok "${dir##*/}: $(head -1 "$dir.err.0" | cut -c1-150)"
    else bad "${dir##*/}: exit $(rcs "$dir" 2): $(cat "$dir".err.* | head -2)"; fi
}
# shapes_set DIR LAYOUT: a 3-class shapes set (tests/helpers/mn_shapes.c, 8 training
# and 4 validation images) in DIR with its labels beside the images (LAYOUT
# beside) or in labels/ (folder), and its obj.data; prints the data file.
shapes_set() {
    local s=$1
    "$TEST_BIN/mn_shapes" "$s" train 8 1 jpg > /dev/null && "$TEST_BIN/mn_shapes" "$s" valid 4 2 jpg > /dev/null || return 1
    if [ "$2" = beside ]; then mv "$s"/labels/*.txt "$s/images/" && rmdir "$s/labels"; fi
    printf 'classes=3\ntrain=%s/train.list\nvalid=%s/valid.list\nnames=%s/names.txt\nbackup=%s/backup\n' "$s" "$s" "$s" "$s" > "$s/obj.data"
    echo "$s/obj.data"
}

# expect_error OUT NP PATTERN [ENV=VALUE...] -- CMD...: CMD, a user error,
# on NP ranks within 120 s (on_ranks): every rank exits non-zero, none
# hangs, a line of their stderr matches PATTERN (exactly ERROR_LINES lines
# where a suite sets it), and OUT/ (the run's backup folder) holds no file.
expect_error() {
    local out=$1 np=$2 pat=$3 t0=$SECONDS n; shift 3
    on_ranks "$out" 120 "$np" "$@"
    local name=${out##*/} took=$((SECONDS - t0))
    n=$(cat "$out".err.* 2> /dev/null | grep -c -- "$pat")
    if ! all_rc "$out" "$np" nonzero; then bad "$name: not every rank exited non-zero ($(rcs "$out" "$np"); mpiexec $(cat "$out.rc"))"
    elif [ "$(cat "$out.rc")" = 124 ]; then bad "$name: hung (killed by the time limit)"
    elif [ "$n" = 0 ] || [ "$n" != "${ERROR_LINES:-$n}" ]; then
        bad "$name: $n lines match '$pat', not ${ERROR_LINES:-one or more}: $(cat "$out".err.* | grep -v '^ ' | head -3)"
    elif ls "$out"/* > /dev/null 2>&1; then bad "$name: left files in its backup folder"
    else ok "$name (${took}s): $(cat "$out".err.* | grep -m1 -- "$pat")"; fi
}

# on_mpi LOG SECONDS NP [ENV=VALUE...] -- CMD...: CMD on NP ranks (each with
# every ENV) within SECONDS, its output in LOG; CMD's status.
on_mpi() {
    local log=$1 s=$2 np=$3 envs=(); shift 3
    while [ "$1" != -- ]; do envs+=(-x "$1"); shift; done
    shift
    timeout "$s" $MPI "${envs[@]}" -n "$np" "$@" > "$log" 2>&1
}
# summary LOG: a C test's longest result line (other ranks' output may share its line).
summary() { grep -ao 'test_[a-z]*: .*' "$1" | awk 'length > length(best) { best = $0 } END { print best }'; }
# unit_test NAME NP [ENV=VALUE...] -- CMD...: a C test on NP ranks within 300 s
# (on_mpi, log $T/NAME.log): ok with its summary, or its FAIL lines. The
# limit only catches a hang: 4 ranks on 2 busy cores took 69 s for a test
# that takes 12 s on them idle (test_comm with MN_PIECE_BYTES=4004).
# SUITE_LABEL, where set, begins its name.
unit_test() {
    local name=$1 np=$2; shift 2
    local label=${SUITE_LABEL:+$SUITE_LABEL }$name sum
    if on_mpi "$T/$name.log" 300 "$np" "$@"; then sum=$(summary "$T/$name.log"); ok "$label${sum:+: $sum}"
    else bad "$label (see $T/$name.log)"; grep -ah "FAIL" "$T/$name.log" | head -5; fi
}

# limit_row TEST_REPLICA DIR: a limit of darknet-mn's own (more arrays in a
# layer than it handles; test_replica's limit mode) on the last of 2 ranks:
# the exit table's 70 for every rank, the layer named.
limit_row() {
    local rc
    mkdir -p "$2"
    timeout 60 $MPI -n 2 "$1" "$2" limit > "$2.log" 2>&1
    rc=$?
    if [ $rc = $EX_FAULT ] && ! grep -q "went on past the limit" "$2.log" &&
       grep -q "^darknet-mn: rank 1 (.*): fatal: layer 0 lists [0-9]* parameter arrays, more than darknet-mn handles (1, MN_MAX_LAYER_PARAMS in plugin/base/mn_base.h); aborting all ranks" "$2.log"; then
        ok "${SUITE_LABEL:+$SUITE_LABEL }an internal limit on rank 1 of 2: mpiexec $rc, $(grep -m1 -o 'fatal: layer 0 lists [^,]*' "$2.log")"
    else bad "${SUITE_LABEL:+$SUITE_LABEL }an internal limit: mpiexec $rc, want $EX_FAULT (see $2.log)"; fi
}

# shrink_bn_row LABEL TASK DATA CFG K M: CFG (batch norm, deterministic,
# checkpoint_interval=K) trained to M on 4 ranks, against the same cut at
# its checkpoint K and resumed on 2, where the global batch is kept in 2
# passes and each rank keeps the running statistics of the 2 ranks it
# stands for apart: the same final weights and statistics to 1e-5. $PROG
# runs TASK train on DATA, whose backup folder gets LABEL-ref and LABEL-cut.
shrink_bn_row() {
    local label=$1 task=$2 data=$3 cfg=$4 k=$5 m=$6 d=$T/shrink-$1 bk
    mkdir -p "$d"
    bk=$(sed -n 's/^backup *= *//p' "$data")
    sed "s/^max_batches=.*/max_batches=$m/" "$cfg" > "$d/$label-ref.cfg"
    sed "s/^max_batches=.*/max_batches=$k/" "$cfg" > "$d/$label-cut.cfg"
    mn "$d/ref" 4 "$task" train "$data" "$d/$label-ref.cfg"
    mn "$d/cut" 4 "$task" train "$data" "$d/$label-cut.cfg"
    sed -i "s/^max_batches=.*/max_batches=$m/" "$d/$label-cut.cfg"
    mn "$d/resumed" 2 "$task" train "$data" "$d/$label-cut.cfg"
    if all_rc "$d/ref" 4 0 && all_rc "$d/cut" 4 0 && all_rc "$d/resumed" 2 0 &&
       grep -aq "kept on 2 ranks: subdivisions 1 -> 2 .*; batch norm's running statistics kept apart for each rank a rank stands for" "$d/resumed.out.0" &&
       "$TEST_BIN/mn_wcmp" "$bk/$label-cut_final.weights" "$bk/$label-ref_final.weights" 1e-5 > "$d/cmp" 2>&1; then
        ok "${SUITE_LABEL:+$SUITE_LABEL }batch norm, 4 ranks cut at $k and resumed on 2 (global batch kept, statistics kept apart): the 4-rank run's weights at $m ($(cat "$d/cmp"))"
    else bad "${SUITE_LABEL:+$SUITE_LABEL }batch norm resumed on fewer ranks: ref $(rcs "$d/ref" 4), cut $(rcs "$d/cut" 4), resumed $(rcs "$d/resumed" 2); $(grep -ah 'global batch' "$d/resumed.out.0" | cut -c1-160); $(cat "$d/cmp" 2> /dev/null)"; fi
}

# mn_cfg FILE [classifier|detector] [EDIT...] [LAYER [EDIT...]...] [-- LINE...]
# writes a tiny network's cfg (sections one blank line apart):
#   classifier (the default): 28x28x3, batch 4, rate 0.05 with burn_in=2 and
#     steps, max_batches=2; a 3x3 convolution (8 filters, leaky), 2x2
#     maxpool, connected to 10 outputs, softmax;
#   detector: 64x64x3, batch 8, rate 0.001 with burn_in=10 and steps; three
#     3x3 convolutions with batch norm (8, 16, 32 filters) each with a 2x2
#     maxpool, to an 8x8 grid; a 1x1 convolution to 24 outputs and a yolo
#     layer of 3 anchors and 3 classes.
# EDIT, before any LAYER: KEY=VALUE sets the cfg's first KEY line (the
# first convolution's filters=, the [net] keys), a KEY it lacks goes to the
# top of [net], in order; -KEY removes the first KEY line.
# LAYER ([convolutional], [maxpool], [connected], [softmax], [yolo], ...):
# the layers are these in this order instead of the shape's, each with the
# keys the shape's layer of that kind has (none for other kinds) and the
# EDITs that follow it, KEY=VALUE or -KEY on this layer's lines (a new key
# goes after the last one set, or first).
# "-- LINE..." ends the cfg with a [distributed] section of these lines.
# hankai_cli DIR: hank-ai's own CLI in its fork folder DIR, where the
# Makefile builds it (HK_BUILD, DIR/build-mn; not "build", which its CMake
# renames).
hankai_cli() { echo "$1/build-mn/src-cli/darknet"; }

mn_cfg() {
    local file=$1 shape=classifier; shift
    case ${1:-} in classifier|detector) shape=$1; shift ;; esac
    local lines layers=() edits=() e i start=0 cur
    if [ "$shape" = classifier ]; then
        lines=('[net]' batch=4 subdivisions=1 width=28 height=28 channels=3 learning_rate=0.05 momentum=0.9 decay=0.0005
               burn_in=2 policy=steps steps=3 scales=0.5 max_batches=2)
    else
        lines=('[net]' batch=8 subdivisions=1 width=64 height=64 channels=3 learning_rate=0.001 momentum=0.9 decay=0.0005
               burn_in=10 policy=steps steps=1000 scales=.1 max_batches=2)
    fi
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        if [[ $1 == \[*\] ]] || [ ${#layers[@]} -gt 0 ]; then layers+=("$1"); else edits+=("$1"); fi
        shift
    done
    if [ ${#layers[@]} = 0 ] && [ "$shape" = classifier ]; then layers=('[convolutional]' '[maxpool]' '[connected]' '[softmax]')
    elif [ ${#layers[@]} = 0 ]; then
        layers=('[convolutional]' batch_normalize=1 '[maxpool]' '[convolutional]' batch_normalize=1 filters=16 '[maxpool]'
                '[convolutional]' batch_normalize=1 filters=32 '[maxpool]' '[convolutional]' size=1 filters=24 activation=linear '[yolo]')
    fi
    for e in "${layers[@]}"; do
        if [[ $e == \[*\] ]]; then
            lines+=("$e"); start=${#lines[@]}; cur=$start
            case $e in
            '[convolutional]') lines+=(filters=8 size=3 stride=1 pad=1 activation=leaky) ;;
            '[maxpool]') lines+=(size=2 stride=2) ;;
            '[connected]') lines+=(output=10 activation=linear) ;;
            '[yolo]') lines+=(mask=0,1,2 'anchors=12,12, 20,20, 30,30' classes=3 num=3 jitter=.1 ignore_thresh=.5 truth_thresh=1 random=0) ;;
            esac
        else mn_cfg_edit "$e" "$start" 1 || return 1; fi
    done
    cur=1
    for e in "${edits[@]}"; do mn_cfg_edit "$e" 0 0 || return 1; done
    mkdir -p "$(dirname "$file")"
    for ((i = 0; i < ${#lines[@]}; ++i)); do
        [[ $i -gt 0 && ${lines[i]} == \[*\] ]] && echo
        printf '%s\n' "${lines[i]}"
    done > "$file"
    if [ "${1:-}" = -- ]; then shift; printf '\n[distributed]\n' >> "$file"; printf '%s\n' "$@" >> "$file"; fi
}
# mn_cfg_edit EDIT FROM FOLLOW: mn_cfg's EDIT on its lines from index FROM
# on; a new key goes to index cur, and cur moves past it (past a key set
# too, with FOLLOW 1).
mn_cfg_edit() {
    local key at
    case $1 in
    *=*) key=${1%%=*} ;;
    -?*) key=${1#-} ;;
    *) echo "mn_cfg: '$1' is neither KEY=VALUE nor -KEY" >&2; return 1 ;;
    esac
    for ((at = $2; at < ${#lines[@]}; ++at)); do [[ ${lines[at]} == "$key="* ]] && break; done
    if [[ $1 == -* && $1 != *=* ]]; then
        [ "$at" -lt ${#lines[@]} ] || return 0
        lines=("${lines[@]:0:at}" "${lines[@]:at+1}")
        [ "$at" -ge "$cur" ] || cur=$((cur - 1))
    elif [ "$at" -lt ${#lines[@]} ]; then
        lines[at]=$1
        [ "$3" = 0 ] || cur=$((at + 1))
    else
        lines=("${lines[@]:0:cur}" "$1" "${lines[@]:cur}")
        cur=$((cur + 1))
    fi
}

# reruns_count OUT ITERS: "D U" for the output OUT of a job run again after
# a failure: D iterations whose loss line two runs printed, U of the ITERS
# never printed. Counting lines against ITERS is not it: an update that
# completed on some ranks only (kept in their rescue) has no line, as its
# loss's allreduce needed the ranks lost.
reruns_count() {
    local lines; lines=$(grep -ao '^[0-9]*: loss' "$1")
    echo "$(sort <<< "$lines" | uniq -d | grep -c .) $(($2 - $(sort -u <<< "$lines" | grep -c .)))"
}
# seen_of WEIGHTS: the images seen that a weights file records (the 64-bit
# count after its 12-byte version header).
seen_of() { od -A n -t u8 -j 12 -N 8 "$1" | tr -d ' '; }
# bench_step LABEL BIN [CFG]: BIN's bench step on CFG (the forks':
# cfg/yolov4-tiny-fashion.cfg) runs its base's own CPU passes: one step
# line, every gradient float counted (bench/scale_model.py's count, exactly)
# and a forward and a backward that took time. (On the forks it read a NULL
# input buffer: SIGSEGV.) -layers: a row per layer (the forward hook of
# patch 0015 / 0021 on every layer) and the training GFLOP of the batch as
# scale_model.py counts them from the cfg's text, to the printed digit;
# with OpenBLAS, the sgemm reference and the fraction.
bench_step() {
    local c=${3:-cfg/yolov4-tiny-fashion.cfg} out got want rows sum flops layers batch
    out=$(timeout 120 "$2" bench step "$c" -iters 2 2>&1)
    got=$(sed -n 's/^step .* grad_floats=\([0-9]*\) .* forward_s=\([0-9.]*\) backward_s=\([0-9.]*\) .*/\1 \2 \3/p' <<< "$out")
    want=$(python3 bench/scale_model.py --count "$c" | sed 's/.*grad_floats=//')
    if [ -n "$got" ] && [ "${got%% *}" = "$want" ] && awk '{ exit !($2 > 0 && $3 > 0) }' <<< "$got"; then
        ok "$1 bench step $c: $want gradient floats, forward and backward $(cut -d' ' -f2,3 <<< "$got") s"
    else bad "$1 bench step $c: '$got', want $want floats: $(grep -a 'darknet-mn\|^step' <<< "$out" | head -2)"; fi
    out=$(timeout 120 "$2" bench step "$c" -iters 2 -layers 2>&1)
    read -r layers flops < <(python3 bench/scale_model.py --flops "$c" | sed 's/.*layers=\([0-9]*\) train_flop_per_image=/\1 /')
    batch=$(sed -n 's/^step .* batch=\([0-9]*\) cfg_batch.*/\1/p' <<< "$out")
    rows=$(grep -c '^layer  *[0-9]' <<< "$out")
    sum=$(grep -a '^layers ' <<< "$out")
    want=$(awk -v f="$flops" -v b="${batch:-0}" 'BEGIN { printf "%.3f", f * b / 1e9 }')
    if [ "$rows" = "$layers" ] && [[ $sum == *" gflop=$want "* ]] && [[ $sum =~ gflops=[0-9.]+\ sgemm_gflops=[0-9.]+\ fraction=[0-9.]+$ ]] &&
       ! grep -q '^layer .* convolutional .* 0\.0 ' <<< "$out"; then
        ok "$1 bench step -layers: $rows rows, ${sum#layers }"
    else bad "$1 bench step -layers: $rows rows (want $layers), '$sum' (want gflop=$want and the sgemm fraction): $(grep -a 'darknet-mn' <<< "$out" | head -2)"; fi
}
