#!/usr/bin/env bash
# How much of a real 2-rank detector training goes to loading and augmenting
# images (issue 43): each rank under perf (cpu-clock, every thread, the
# loader's included), its samples sorted by kind (perf_kind, as
# bench/profile.sh sorts them), and rank 0's split of a step (compute, the
# wait for the loader's batch, communication, waiting for the slowest
# rank), summed over the run's windows of 20 iterations. Runs:
#   demo         make demo's detector: cfg/fashion-det.cfg on
#                data/fashion-det.data, LOADER_ITERS_DEMO (200) iterations
#   yolov3-tiny  pjreddie's stock yolov3-tiny.cfg for those 10 classes at
#                256x256 (random=1 as stock: 192 to 374 px), batch 8 a rank,
#                LOADER_ITERS_Y3T (40) iterations
# Writes bench/results/loader-share.txt (LOADER_OUT). Needs make,
# make fashion-det-data and perf; holds the benchmarks' lock.
set -eu
cd "$(dirname "$0")/.."
. bench/common.sh
W=build/bench-loader
out=${LOADER_OUT:-bench/results/loader-share.txt}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
rm -rf "$W" && mkdir -p "$W/backup"
sed "s|^backup=.*|backup=$W/backup|" data/fashion-det.data > "$W/det.data"
sed -e "s/^max_batches=.*/max_batches=${LOADER_ITERS_DEMO:-200}/" -e '/^eval_interval=/d' cfg/fashion-det.cfg > "$W/demo.cfg"
printf 'eval_interval=0\n' >> "$W/demo.cfg"
# yolov3-tiny for 10 classes: each [yolo]'s classes, the convolution before it 3 x (10 + 5) filters.
awk -v iters="${LOADER_ITERS_Y3T:-40}" '
    /^width=|^height=/ { sub(/=.*/, "=256") } /^batch=/ { $0 = "batch=8" } /^subdivisions=/ { $0 = "subdivisions=1" }
    /^max_batches *=/ { $0 = "max_batches=" iters } /^steps *=/ { $0 = "steps=" int(iters * .8) "," int(iters * .9) }
    /^classes=/ { $0 = "classes=10" } { line[NR] = $0 } /^\[yolo\]/ { yolo[NR] = 1 }
    END { last = 0; for (i = 1; i <= NR; i++) { if (line[i] ~ /^\[convolutional\]/) conv = i
                                                   if (yolo[i]) for (j = conv; j < i; j++) if (line[j] ~ /^filters=/) line[j] = "filters=45" }
          for (i = 1; i <= NR; i++) print line[i] }' third_party/darknet-cpu/cfg/yolov3-tiny.cfg > "$W/yolov3-tiny.cfg"
printf '\n[distributed]\neval_interval=0\n' >> "$W/yolov3-tiny.cfg"

{
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $(bench_host); darknet-mn $(git describe --always --dirty 2>/dev/null)"
    load_line before
    echo "# command: bench/loader.sh; each run: mpiexec -n 2 perf record -e cpu-clock -F 499 -- ./darknet_mn detector train $W/det.data <cfg>"
} > "$W/head.txt"
for name in demo yolov3-tiny; do
    locked mpiexec -n 2 bash -c 'exec perf record -q -e cpu-clock -F 499 -o "$0.$OMPI_COMM_WORLD_RANK.perf" -- "${@}"' \
        "$W/$name" ./darknet_mn detector train "$W/det.data" "$W/$name.cfg" > "$W/$name.out" 2> "$W/$name.err" ||
        echo "bench: $name failed (see $W/$name.err)" >&2
done
{
    cat "$W/head.txt"
    load_line after
    for name in demo yolov3-tiny; do
        echo
        echo "## $name ($W/$name.cfg), 2 ranks"
        echo "# rank 0's split of a step, the mean over the run's windows of 20 iterations, ms:"
        grep -a 'per step (mean of 2 ranks)' "$W/$name.out" "$W/$name.err" 2> /dev/null | sed 's/.*: \([0-9.]*\) ms = compute \([0-9.]*\) + data \([0-9.]*\) + communication not hidden \([0-9.]*\) + waiting for the slowest rank \([0-9.]*\)/\1 \2 \3 \4 \5/' |
            awk '{ for (i = 1; i <= 5; i++) s[i] += $i; n++ }
                 END { if (!n) { print "no split lines"; exit }
                       printf "step %.1f = compute %.1f + data %.1f + communication %.1f + waiting for the slowest rank %.1f (%d windows)\n", s[1] / n, s[2] / n, s[3] / n, s[4] / n, s[5] / n, n
                       printf "the wait for the loader batch: %.1f%% of a step\n", 100 * s[3] / s[1] }'
        echo "# CPU by kind over the whole run (start-up included), share of each rank's samples:"
        for r in 0 1; do
            perf report -i "$W/$name.$r.perf" -n --no-children --sort dso,symbol --stdio 2> /dev/null | perf_kind |
                awk -F'\t' -v r="$r" '{ t[$1] = $2; all += $2 } END { for (k in t) printf "rank %s  %-48s %6.1f%%\n", r, k, 100 * t[k] / all }' | sort
        done | grep -a 'data loading\|convolution\|batch norm\|kernel\|allreduce'
    done
} > "$out"
cat "$out"
