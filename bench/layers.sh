#!/usr/bin/env bash
# Where one rank's step goes, layer by layer, against the core's limit
# (issue 43): `bench step -layers` on each cfg, for each system, rounds
# interleaved, with the single-thread OpenBLAS sgemm that every run times
# beside its passes as the reference. Writes bench/results/step-layers.txt:
# per system and cfg the median over the rounds of the step (forward +
# backward, wall), its GFLOP/s, the sgemm's and the fraction; then the last
# round's per-layer table of each system on each cfg.
#   LAYERS_CFGS     cfgs (default: stock yolov3-tiny at 256x256 and 416x416,
#                   batch 8, made from pjreddie's cfg, and cfg/fashion-det.cfg;
#                   made too: build/bench-layers/yolov4-tiny-256.cfg from
#                   AlexeyAB's)
#   LAYERS_SYSTEMS  "label=command ..." (default: oneDNN=./darknet_mn,
#                   darknet=MN_DNNL=0 ./darknet_mn, Darknet's im2col + gemm in
#                   the same binary, and where python3-torch is installed
#                   torch=bench/torch_step.py, the same layers in PyTorch on one
#                   thread); a command may start with VAR=value words
#   LAYERS_ROUNDS   rounds (3); LAYERS_ITERS iterations per run (5)
#   LAYERS_OUT      the result file
# Timing runs hold the benchmarks' lock (bench/common.sh); each rank is one
# process on one core (taskset -c 0).
set -eu
cd "$(dirname "$0")/.."
W=build/bench-layers
rounds=${LAYERS_ROUNDS:-3} iters=${LAYERS_ITERS:-5}
out=${LAYERS_OUT:-bench/results/step-layers.txt}
mkdir -p "$W" "$(dirname "$out")"
. bench/common.sh
# Stock cfgs at SIZE x SIZE, batch 8 in one pass, where their base is built:
# $W/yolov3-tiny-256.cfg and -416 (pjreddie's), $W/yolov4-tiny-256.cfg (AlexeyAB's).
at() { sed -e "s/^width=.*/width=$1/" -e "s/^height=.*/height=$1/" -e 's/^batch=.*/batch=8/' -e 's/^subdivisions=.*/subdivisions=1/' "$2"; }
for size in 256 416; do
    [ ! -f third_party/darknet-cpu/cfg/yolov3-tiny.cfg ] || at $size third_party/darknet-cpu/cfg/yolov3-tiny.cfg > "$W/yolov3-tiny-$size.cfg"
done
[ ! -f third_party/darknet-alexeyab-cpu/cfg/yolov4-tiny.cfg ] || at 256 third_party/darknet-alexeyab-cpu/cfg/yolov4-tiny.cfg > "$W/yolov4-tiny-256.cfg"
LAYERS_CFGS=${LAYERS_CFGS:-$W/yolov3-tiny-256.cfg $W/yolov3-tiny-416.cfg cfg/fashion-det.cfg}
torch=
/usr/bin/python3 -c 'import torch' 2> /dev/null && torch=' torch=/usr/bin/python3 bench/torch_step.py' ||
    echo "bench: no PyTorch peer (python3-torch is not installed)" >&2
systems=${LAYERS_SYSTEMS:-oneDNN=./darknet_mn darknet=MN_DNNL=0 ./darknet_mn$torch}
# Split "a=cmd words b=cmd" into labels and commands: a word "label=..." whose
# label has no path or '=' in it and is not an environment variable's name
# (all capitals) starts a system.
labels=() cmds=()
for w in $systems; do
    name=${w%%=*}
    if [[ $w == *=* ]] && [[ $name =~ ^[a-zA-Z][a-zA-Z0-9_.-]*$ ]] && ! [[ $name =~ ^[A-Z_0-9]+$ ]]; then
        labels+=("$name") cmds+=("${w#*=}")
    else
        cmds[${#cmds[@]}-1]+=" $w"
    fi
done

{
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $(bench_host); darknet-mn $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- plugin patches || echo -dirty)"
    load_line before
    echo "# command: LAYERS_ROUNDS=$rounds LAYERS_ITERS=$iters LAYERS_CFGS='$LAYERS_CFGS' LAYERS_SYSTEMS='$systems' bench/layers.sh"
    echo "# each run: taskset -c 0 <system> bench step <cfg> -iters $iters -layers; systems interleaved in each round"
} > "$W/head.txt"
for ((r = 1; r <= rounds; ++r)); do
    for c in $LAYERS_CFGS; do
        for k in "${!labels[@]}"; do
            read -ra words <<< "${cmds[k]}"
            vars=() && while [[ ${words[0]} == *=* ]]; do vars+=("${words[0]}") && words=("${words[@]:1}"); done
            locked env "${vars[@]}" taskset -c 0 "${words[@]}" bench step "$c" -iters "$iters" -layers \
                > "$W/${labels[k]}-$(basename "$c" .cfg)-$r.txt" 2> /dev/null || echo "bench: ${labels[k]} on $c failed" >&2
        done
    done
done
{
    cat "$W/head.txt"
    load_line after
    echo
    echo "## medians over $rounds rounds: forward + backward wall seconds of a step, GFLOP/s of its passes, the sgemm's in the"
    echo "## same runs; x_first: this system's step over the first system's (${labels[0]}), how many times as fast ${labels[0]} is"
    printf '%-24s %-16s %9s %9s %9s %12s %9s %8s\n' cfg system step_s gflop GFLOP/s sgemm_GF/s fraction x_first
    for c in $LAYERS_CFGS; do
        for k in "${!labels[@]}"; do
            cat "$W/${labels[k]}-$(basename "$c" .cfg)"-*.txt | sed -n 's/^layers forward_s=\([0-9.]*\) backward_s=\([0-9.]*\) gflop=\([0-9.]*\) gflops=\([0-9.]*\) sgemm_gflops=\([0-9.]*\) fraction=\([0-9.]*\)$/\1 \2 \3 \4 \5 \6/p' |
                awk -v c="$(basename "$c")" -v s="${labels[k]}" '{ step[NR] = $1 + $2; gf[NR] = $4; sg[NR] = $5; fr[NR] = $6; flop = $3 }
                    function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                                 return a[int((n + 1) / 2)] }
                    END { if (NR) printf "%-24s %-16s %9.3f %9.3f %9.1f %12.1f %9.2f\n", c, s, med(step, NR), flop, med(gf, NR), med(sg, NR), med(fr, NR)
                          else printf "%-24s %-16s failed\n", c, s }'
        done | awk '$3 != "failed" && !first { first = $3 } { print $0 ($3 == "failed" ? "" : sprintf(" %8.2f", $3 / first)) }'
    done
    for c in $LAYERS_CFGS; do
        for k in "${!labels[@]}"; do
            echo
            echo "## $(basename "$c"), ${labels[k]}, round $rounds"
            grep -a '^#   i\|^layer  *[0-9]' "$W/${labels[k]}-$(basename "$c" .cfg)-$rounds.txt" || true
        done
    done
} > "$out"
cat "$out"
