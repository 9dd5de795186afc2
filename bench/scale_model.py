#!/usr/bin/python3
"""The scale model of issue 11: at how many ranks does data-parallel training
with darknet-mn fall below 90% scaling efficiency?

    bench/scale_model.py [INPUTS]        the markdown tables (INPUTS defaults to
                                         bench/results/scale-model.txt)
    bench/scale_model.py --count CFG     a cfg's gradient floats, counted from
                                         its text (for cfgs this Darknet cannot
                                         parse, e.g. AlexeyAB's yolov4-tiny)
    bench/scale_model.py --flops CFG     its layers and an image's training
                                         GFLOP as bench step -layers counts them

Weak scaling: every rank keeps its batch, so one update costs a rank its
compute time Tc plus the part of the gradient allreduce that is not hidden;
efficiency E(p) = Tc / (Tc + exposed(p)). The measured figures (gradient
floats, forward/backward/update times per pass, the overlap fraction) come
from INPUTS; the link figures below are assumptions, stated with the class of
source they come from. Standard library only.
"""
import math
import re
import sys

# name: (bandwidth achieved in bytes/s, latency per message in s, source class)
LINKS = {
    "25GbE": (2.5e9, 25e-6,
              "25 Gbit/s Ethernet line rate (3.125 GB/s); ~2.5 GB/s achieved (80%, assumed for MPI "
              "over kernel TCP); ~25 us per message (TCP stack class)"),
    "IB100": (11e9, 3e-6,
              "100 Gbit/s InfiniBand EDR line rate (12.5 GB/s); ~11 GB/s achieved (88%, the share of line "
              "rate nccl-tests reached across HDR nodes: 85-96 of 100 GB/s, NVIDIA/nccl-tests#119); "
              "~3 us per message (osu_latency class ~1 us, plus the collective's step)"),
    "NVLink": (200e9, 3e-6,
               "NVLink class (NVLink 3 on A100 SXM: 300 GB/s per direction per GPU); ~200 GB/s achieved "
               "(nccl-tests all_reduce busbw on 8x A100 SXM: ~200 GB/s in NVIDIA/nccl-tests#149, 208 "
               "GB/s in #178); ~3 us per step"),
}
INTRA = "NVLink"   # the intra-node link of the hierarchical algorithm
THRESHOLD = 0.9
MAX_RANKS = 1 << 20


def ring_time(nbytes, p, bw, lat):
    """Ring allreduce (reduce-scatter then allgather) of nbytes over p ranks:
    2(p-1) steps, each moving nbytes/p over the slowest link."""
    if p <= 1:
        return 0.0
    return 2 * (p - 1) * lat + 2 * (p - 1) / p * nbytes / bw


def halving_time(nbytes, q, m, inter, intra):
    """One MPI_Allreduce of nbytes as Open MPI runs a large one (Rabenseifner:
    reduce-scatter by recursive halving from distance 1, then allgather by
    recursive doubling) over m nodes of q ranks placed node by node: the
    first log2 q steps stay inside a node and move nbytes (1 - 1/q) a rank;
    the last log2 m cross nodes, where each rank holds nbytes/q and moves
    nbytes/q (1 - 1/m), so each node's NIC carries nbytes (1 - 1/m) each way,
    whatever q. Twice over (the allgather mirrors the reduce-scatter)."""
    t = 0.0
    for k, (bw, lat) in ((q, intra), (m, inter)):
        if k > 1:
            t += 2 * math.ceil(math.log2(k)) * lat + 2 * (1 - 1 / k) * nbytes / bw
    return t


def allreduce_time(algo, nbytes, p, per_node, inter, intra):
    """Seconds for one allreduce. inter, intra: (bandwidth, latency).
    flat: one MPI_Allreduce over all p ranks, per_node of them on each node
    (halving_time). hierarchical: reduce to the node leader (reduce-scatter
    + gather) and broadcast back (scatter + allgather) inside the node, each
    costing one intra-node ring allreduce, around one MPI_Allreduce among
    the node leaders. (A ring over all p ranks, this model's first form, paid
    2(p-1) latencies and read 1.31-1.81x SimGrid's MPI_Allreduce: Open MPI
    runs no ring there; docs/benchmarks.md, Simulated clusters.)"""
    q, nodes = min(p, per_node), math.ceil(p / per_node)
    if algo == "flat":
        return halving_time(nbytes, q, nodes, inter, intra)
    if algo == "hierarchical":
        return 2 * ring_time(nbytes, q, *intra) + halving_time(nbytes, 1, nodes, inter, intra)
    raise ValueError("unknown algorithm " + algo)


def efficiency(tc, t_overlap, t_comm, overlap):
    """Tc / step time; overlap hides that fraction of the allreduce, but no
    more than the compute that runs after the first bucket (t_overlap)."""
    hidden = min(overlap * t_comm, t_overlap)
    return tc / (tc + t_comm - hidden)


def first_rank_below(tc, t_overlap, nbytes, algo, per_node, inter, intra, overlap,
                     threshold=THRESHOLD, max_ranks=MAX_RANKS):
    """Smallest rank count p with efficiency < threshold, None if none up to
    max_ranks. The step time never falls as p grows, so bisect."""
    def below(p):
        t = allreduce_time(algo, nbytes, p, per_node, inter, intra)
        return efficiency(tc, t_overlap, t, overlap) < threshold
    if not below(max_ranks):
        return None
    lo, hi = 1, max_ranks   # below(lo) is false: one rank has no allreduce
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if below(mid):
            hi = mid
        else:
            lo = mid
    return hi


# --- gradient floats from a cfg's text: the plugin's rule (mn_layer_params),
# trained arrays only: biases, batch-norm scales, weights ---------------------

def parse_cfg(path):
    sections = []
    with open(path) as f:
        for line in f:
            line = line.split("#")[0].split(";")[0].strip()
            if not line:
                continue
            if line.startswith("["):
                sections.append((line.strip("[]").strip(), {}))
            elif "=" in line and sections:
                k, v = line.split("=", 1)
                sections[-1][1][k.strip()] = v.strip()
    return sections


def walk_layers(path):
    """A cfg's layers: (gradient floats, forward FLOP of an image) each, the
    FLOP of convolutional and connected layers (2 per multiply-add)."""
    secs = parse_cfg(path)
    if not secs or secs[0][0] not in ("net", "network"):
        raise ValueError("%s: the first section is not [net]" % path)
    opt = secs[0][1]
    h, w, c = int(opt.get("height", 0)), int(opt.get("width", 0)), int(opt.get("channels", 0))
    if not h * w * c:
        h, w, c = 1, 1, int(opt.get("inputs", 0))
    shapes, layers = [], []
    for kind, o in secs[1:]:
        if kind == "distributed":
            continue   # darknet-mn's options, not a layer
        i = len(shapes)   # this layer's index, as route counts
        g = lambda k, d: int(o.get(k, d))
        floats, flops = 0, 0
        if kind in ("convolutional", "conv"):
            n, size, stride, groups = g("filters", 1), g("size", 1), g("stride", 1), g("groups", 1)
            pad = size // 2 if g("pad", 0) else g("padding", 0)
            floats = n + (n if g("batch_normalize", 0) else 0) + n * (c // groups) * size * size
            h, w = (h + 2 * pad - size) // stride + 1, (w + 2 * pad - size) // stride + 1
            flops = 2 * n * size * size * (c // groups) * h * w
            c = n
        elif kind in ("connected", "conn"):
            n, inputs = g("output", 1), h * w * c
            floats = n + n * inputs + (n if g("batch_normalize", 0) else 0)
            flops = 2 * inputs * n
            h, w, c = 1, 1, n
        elif kind in ("maxpool", "max"):
            size = g("size", 1)
            stride, pad = g("stride", 1), g("padding", size - 1)
            h, w = (h + pad - size) // stride + 1, (w + pad - size) // stride + 1
        elif kind in ("avgpool", "avg"):
            h, w = 1, 1
        elif kind == "upsample":
            s = g("stride", 2)
            h, w = h * s, w * s
        elif kind == "route":
            idx = [int(x) for x in o["layers"].split(",")]
            idx = [j if j >= 0 else i + j for j in idx]
            h, w = shapes[idx[0]][0], shapes[idx[0]][1]
            c = sum(shapes[j][2] for j in idx) // g("groups", 1)
        elif kind in ("shortcut", "yolo", "region", "softmax", "soft", "dropout", "cost",
                      "batchnorm", "logistic", "l2norm"):
            pass   # no trained arrays (darknet-mn never updates [batchnorm]'s scales)
        else:
            raise ValueError("%s: layer %d [%s] is not counted by this model" % (path, i, kind))
        shapes.append((h, w, c))
        layers.append((floats, flops))
    return layers


def count_grad_floats(path):
    return sum(f for f, _ in walk_layers(path))


def training_flops(path):
    """(layers, an image's forward + backward FLOP): a layer's backward is
    twice its forward (input and weight gradients), layer 0's once (no
    input gradient), as bench step -layers counts."""
    layers = walk_layers(path)
    return len(layers), sum(f * (3 if i else 2) for i, (_, f) in enumerate(layers))


# --- inputs ------------------------------------------------------------------

def read_inputs(path):
    """step/count lines (key=value words) and key=value settings; '#' starts a
    comment."""
    cfgs, settings = [], {}
    with open(path) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if not line:
                continue
            words = line.split()
            if words[0] in ("step", "count"):
                d = dict(x.split("=", 1) for x in words[1:])
                d["kind"] = words[0]
                cfgs.append(d)
            elif re.match(r"^\w+=", line):
                k, v = line.split("=", 1)
                settings[k] = v
            else:
                raise ValueError("%s: cannot read line: %s" % (path, line))
    return cfgs, settings


def name_of(d):
    return re.sub(r"\.cfg$", "", d["cfg"].split("/")[-1])


def pass_times(d):
    """Forward, backward, update seconds of one pass: the CPU times where bench
    step gave them (other jobs on a shared core inflate the wall times)."""
    cpu = "_cpu" if "forward_cpu_s" in d else ""
    return tuple(float(d[k + cpu + "_s"]) for k in ("forward", "backward", "update"))


def cpu_step(d):
    """One update on this CPU: the cfg's batch x subdivisions images, timed per
    pass of `batch` images; what can overlap is the last pass's backward."""
    b, images = int(d["batch"]), int(d["cfg_batch"]) * int(d["subdivisions"])
    fwd, bwd, upd = pass_times(d)
    tc = images / b * (fwd + bwd) + upd
    return tc, int(d["cfg_batch"]) / b * bwd


def backward_share(d, default):
    if d["kind"] != "step":
        return default
    fwd, bwd, upd = pass_times(d)
    return bwd / (fwd + bwd + upd)


def setups(links, algos):
    return [(link, algo, ov, half) for link in links for algo in algos for ov in (0, 1) for half in (0, 1)]


GPU_SETUPS = setups(LINKS, ("flat", "hierarchical"))
CPU_SETUPS = setups(("25GbE", "IB100"), ("flat",))


def fmt(p):
    return "> %d" % MAX_RANKS if p is None else str(p)


def table(columns, rows, per_node, settings):
    """columns: (title, grad bytes, Tc, t_overlap at full overlap); rows: setups."""
    ov = float(settings["overlap_fraction"])
    out = ["| link | algorithm | overlap | allreduce dtype | " + " | ".join(c[0] for c in columns) + " |",
           "|---|---|---|---|" + "---:|" * len(columns)]
    for link, algo, o, half in rows:
        inter, intra = LINKS[link][:2], LINKS[INTRA][:2]
        cells = [fmt(first_rank_below(tc, tov, nbytes / (2 if half else 1), algo, per_node, inter, intra,
                                      ov if o else 0.0)) for _, nbytes, tc, tov in columns]
        name = algo if algo == "flat" else "hierarchical (%s in node)" % INTRA
        out.append("| %s | %s | %s | %s | %s |" % (link, name, "%.2f" % ov if o else "no",
                                                   "float16" if half else "float32", " | ".join(cells)))
    return "\n".join(out)


def report(path):
    cfgs, settings = read_inputs(path)
    share = float(settings["backward_share_default"])
    gpu_steps = [float(x) for x in settings["gpu_step_s"].split(",")]
    ov = float(settings["overlap_fraction"])
    lines = ["Rank count at which scaling efficiency first falls below %d%% (weak scaling; "
             "%s ranks per node; overlap fraction %.2f%s)." % (THRESHOLD * 100, settings["ranks_per_node"], ov,
                                                              ", " + settings["overlap_source"]
                                                              if "overlap_source" in settings else ""), ""]
    cols = []
    for d in cfgs:
        for t in gpu_steps:
            cols.append(("%s %.0f MiB, %g ms" % (name_of(d), int(d["grad_floats"]) * 4 / 2**20, t * 1e3),
                         int(d["grad_floats"]) * 4, t, t * backward_share(d, share)))
    gpu = [c for c in cols if not c[0].startswith(("fashion ", "fashion-det "))]
    lines += ["**GPU, per assumed step time** (no GPU measured here: the step time per update is the "
              "column's; backward share of it as measured on this CPU, %.2f where not measured):" % share, "",
              table(gpu, GPU_SETUPS, int(settings["ranks_per_node"]), settings), ""]
    cpu = []
    for d in cfgs:
        if d["kind"] == "step":
            tc, tov = cpu_step(d)
            cpu.append(("%s %.2f MiB, %.3g s" % (name_of(d), int(d["grad_floats"]) * 4 / 2**20, tc),
                        int(d["grad_floats"]) * 4, tc, tov))
    lines += ["**This CPU, measured step times** (one core per rank, one rank per node, one update = "
              "the cfg's batch):", "", table(cpu, CPU_SETUPS, 1, settings), "",
              "Links assumed:", ""]
    lines += ["- %s: %s." % (k, v[2]) for k, v in LINKS.items()]
    return "\n".join(lines)


def main(argv):
    if len(argv) == 3 and argv[1] == "--count":
        print("count cfg=%s grad_floats=%d" % (argv[2], count_grad_floats(argv[2])))
        return 0
    if len(argv) == 3 and argv[1] == "--flops":
        n, flops = training_flops(argv[2])
        print("flops cfg=%s layers=%d train_flop_per_image=%d" % (argv[2], n, flops))
        return 0
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        sys.stderr.write("usage: bench/scale_model.py [INPUTS] | --count CFG | --flops CFG\n")
        return 2
    print(report(argv[1] if len(argv) == 2 else "bench/results/scale-model.txt"))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (OSError, ValueError) as e:
        sys.stderr.write("scale_model: %s\n" % e)
        sys.exit(1)
    except KeyError as e:
        sys.stderr.write("scale_model: the inputs lack %s\n" % e)
        sys.exit(1)
