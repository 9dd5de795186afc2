# Sourced by bench/*.sh. Timing runs of different sessions never overlap:
# each runs under flock on BENCH_LOCK (/work/bench.lock where /work exists;
# BENCH_LOCK= for none). Every result file gets the load average before and
# after its runs (load_line), and after them the CPU that work other than the
# benchmark's own took meanwhile: the load average counts the benchmark's own
# processes, so only that figure says whether the machine was quiet. It is the
# machine's busy CPU less that of this shell's waited-for descendants, so the
# kernel's own work counts in it: up to 0.12 cores with 4 ranks on 2 cores and
# nothing else running, hence the threshold of 0.25.
BENCH_LOCK=${BENCH_LOCK-/work/bench.lock}
# The machine a result file names: host, cores, CPU model and its widest
# vector instructions, which decide oneDNN's kernels (this VM's host moved
# from an AVX2 to an AVX-512 EPYC between sessions, and its speeds with it).
bench_host() {
    local f isa=SSE
    f=$(grep -m1 '^flags' /proc/cpuinfo)
    case " $f " in *" avx512f "*) isa=AVX-512 ;; *" avx2 "*) isa=AVX2 ;; *" avx "*) isa=AVX ;; esac
    echo "$(uname -n), $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1) ($isa)"
}
locked() {   # locked CMD...: CMD under the lock
    if [ -n "$BENCH_LOCK" ] && [ -d "$(dirname "$BENCH_LOCK")" ]; then flock "$BENCH_LOCK" "$@"; else "$@"; fi
}
# Busy and stolen CPU ticks of the machine (/proc/stat), this shell's and its
# waited-for descendants' ticks (/proc/PID/stat), and the time.
cpu_mark() {   # cpu_mark PID
    local pid=$1
    echo "$(awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8, $9 }' /proc/stat)" \
         "$(sed 's/^.*) //' "/proc/$pid/stat" | awk '{ print $12 + $13 + $14 + $15 }')" "$(date +%s.%N)"
}
load_line() {   # load_line before|after: the load average; after: also other work's CPU since before
    echo "# load average $1: $(cut -d' ' -f1-3 /proc/loadavg) ($(uptime | sed 's/^ *//'))"
    if [ "$1" = before ]; then   # this shell: not the subshell of $(...), nor of a pipe at "after"
        BENCH_PID=${BASHPID:-$$} BENCH_MARK=$(cpu_mark "${BASHPID:-$$}"); return
    fi
    [ -n "${BENCH_MARK:-}" ] || return 0
    # shellcheck disable=SC2086
    awk -v tck="$(getconf CLK_TCK)" -v cores="$(nproc)" 'NR == 1 { b0 = $1; s0 = $2; o0 = $3; t0 = $4 }
        NR == 2 { w = $4 - t0; other = ($1 - b0 - ($3 - o0)) / tck / w; if (other < 0) other = 0
                  printf "# other work meanwhile: %.2f of %d cores on average, %.2f stolen by the host, over %.0f s", other, cores, ($2 - s0) / tck / w, w
                  if (other > 0.25 || ($2 - s0) / tck / w > 0.1) printf "; not quiet: re-run"
                  printf "\n" }' <(echo "$BENCH_MARK"; cpu_mark "$BENCH_PID")
}
# demo_schedule ITERS: sed arguments that cut a cfg to ITERS iterations with
# its lr steps at 80% and 90%, as make demo (scripts/demo.sh) cuts it.
demo_schedule() {
    echo "-e s/^max_batches=.*/max_batches=$1/ -e s/^steps=.*/steps=$(($1 * 8 / 10)),$(($1 * 9 / 10))/"
}
# seed_vals FN ROW: the row's figure for each of SEEDS (FN ROW SEED prints one), on one line.
seed_vals() {
    local s
    for s in $SEEDS; do "$1" "$2" "$s"; done | tr '\n' ' '
}
# seed_header SCRIPT LOAD_BEFORE START: the first line of a seed table's result file.
seed_header() {
    echo "# $1: ITERS=$ITERS SEEDS='$SEEDS', $(date -u +%F), $(nproc) cores, load before $2, after $(cut -d' ' -f1-3 /proc/loadavg), $(( $(date +%s) - $3 )) s"
}
# seed_table FN NAME ROW...: a table of ROWS x SEEDS figures (FN ROW SEED
# prints one): per row the figure of each seed, their mean, spread (max -
# min) and the mean's difference from the first row's.
seed_table() {
    local fn=$1 name=$2 row vals stats mean base=; shift 2
    printf '%-58s %-26s %7s %7s %9s\n' row "$name per seed" mean spread "vs first"
    for row; do
        vals=$(seed_vals "$fn" "$row")
        stats=$(echo "$vals" | awk '{ s = 0; lo = 9; hi = -9; for (i = 1; i <= NF; i++) { s += $i; if ($i < lo) lo = $i; if ($i > hi) hi = $i }
                                   printf "%.4f %.4f", s / NF, hi - lo }')
        mean=${stats% *}
        [ -n "$base" ] || base=$mean
        printf '%-58s %-26s %7s %7s %+9.4f\n' "$row" "$vals" "$mean" "${stats#* }" "$(echo "$mean - $base" | bc -l)"
    done
}
# perf_kind: perf report's rows (--sort dso,symbol -n) summed by the kind of
# their function (bench/profile.sh, bench/loader.sh): first match wins.
perf_kind() {
    awk '
    function k(d, s) {
        if (d ~ /kernel/) return "kernel (page faults, scheduling, I/O)"
        if (d ~ /libdnnl/ || s ~ /^0x/ && d ~ /unknown|JIT|anon/) return "convolution: oneDNN (its jit code, reorders)"
        if (s ~ /im2col/) return "convolution: im2col"
        if (s ~ /col2im/) return "convolution: col2im"
        if (d ~ /openblas/ || s ~ /^gemm|sgemm/) return "gemm (OpenBLAS; convolution and connected)"
        if (s ~ /normalize|mean_cpu|variance|scale_bias|backward_scale|mean_delta|batchnorm|mn_bn_|plane_s/) return "batch norm"
        if (s ~ /add_bias|backward_bias/) return "bias"
        if (s ~ /activate|gradient_array|leaky|logistic|relu|linear_/) return "activation"
        if (s ~ /maxpool/) return "maxpool"
        if (s ~ /connected/) return "connected (outside gemm)"
        if (s ~ /softmax|l2_cpu|yolo|delta_yolo|box|iou|forward_region|cost/) return "loss (softmax, yolo)"
        if (s ~ /stbi|load_|image|resize|crop|rand|augment|flip|mn_cache|fill_truth|data/) return "data loading and augmentation"
        if (d ~ /mpi|pal|pmix|mca|rte/ || s ~ /mn_comm|allreduce|mn_opt|sync/) return "allreduce and MPI"
        if (s ~ /fill_cpu|copy_cpu|axpy|scal_cpu|memset|memcpy|memmove/) return "fill, copy, axpy, scal (updates, deltas)"
        return "start-up, other"
    }
    /^ *[0-9.]+%/ { d = $3; s = $5; if (d == "[JIT]") { d = "JIT"; s = "0x" }; t[k(d, s)] += $2 }
    END { for (x in t) printf "%s\t%d\n", x, t[x] }'
}
