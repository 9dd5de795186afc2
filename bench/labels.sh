#!/usr/bin/env bash
# The cost of checking every label file before detector training (issue 25):
# the start of `detector train` (1 iteration, 2 ranks) on a list of N
# images (symlinks to one detection image, each with its own label file)
# against one of 1000, warm (files in the page cache) and cold (caches
# dropped first, where the kernel lets us). Writes bench/results/label-check.txt.
#   bench/labels.sh [N]   (default 100000; needs make fashion-det-data)
set -eu
cd "$(dirname "$0")/.."
. bench/common.sh
N=${1:-100000}
W=${BUILD:-build}/bench-labels
OUT=bench/results/label-check.txt
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
img=$(pwd)/build/fashion-det/images/train/000001.jpg
[ -f "$img" ] || { echo "bench/labels.sh: $img is missing: make fashion-det-data first" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W/images" "$W/labels"
python3 - "$N" "$W" "$img" build/fashion-det/labels/train/000001.txt <<'PY'
import os, sys
n, w, img, lab = int(sys.argv[1]), sys.argv[2], sys.argv[3], open(sys.argv[4]).read()
with open(w + '/big.list', 'w') as f:
    for i in range(n):
        p = '%s/images/%07d.jpg' % (os.path.abspath(w), i)
        os.symlink(img, p)
        open('%s/labels/%07d.txt' % (w, i), 'w').write(lab)
        f.write(p + '\n')
PY
head -1000 "$W/big.list" > "$W/small.list"
for l in big small; do
    printf 'classes=10\ntrain=%s/%s.list\nnames=data/fashion.names\nbackup=%s/backup\n' "$(pwd)/$W" "$l" "$W" > "$W/$l.data"
done
sed -e 's/^max_batches=.*/max_batches=1/' -e 's/^eval_interval=.*/eval_interval=0/' cfg/fashion-det.cfg > "$W/det.cfg"
start() {   # start LIST: seconds for the whole 1-iteration run
    local t0; t0=$(date +%s.%N)
    locked mpiexec --oversubscribe -n 2 ./darknet_mn detector train "$W/$1.data" "$W/det.cfg" > "$W/$1.out" 2>&1
    echo "$(date +%s.%N) - $t0" | bc
}
run() {
    echo "# bench/labels.sh $N: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    load_line before
    echo "round  list          warm_s  cold_s"
    for r in 1 2 3; do
        for l in small big; do
            start "$l" > /dev/null   # fills the page cache
            w=$(start "$l")
            c=n/a
            if sync && echo 3 > /proc/sys/vm/drop_caches 2> /dev/null; then c=$(printf '%.2f' "$(start "$l")"); fi
            printf '%-6s %-13s %-7.2f %s\n' "$r" "$([ $l = big ] && echo "$N images" || echo "1000 images")" "$w" "$c"
        done
    done
    load_line after
}
run | tee "$OUT"
rm -rf "$W"
