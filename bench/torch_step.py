#!/usr/bin/python3
"""The PyTorch peer of `./darknet_mn bench step <cfg> -layers` (issue 43):
the same cfg's layers built in PyTorch, one training step (forward, then
backward to every weight) timed on one thread.

    bench/torch_step.py [bench step] CFG [-iters K] [-layers] [-channels-last]

The words `bench step` and `-layers` are accepted so that bench/layers.sh can
run it as one more system. The net is read from the Darknet cfg:
convolutional (batch norm in training mode, leaky/linear/mish/logistic/relu),
maxpool (Darknet's padding: size-1 in all, the extra row and column at the
bottom and right), route (with groups/group_id), upsample (nearest),
shortcut, and yolo/region layers, whose outputs the loss reads. The loss is
half the sum of squares of those outputs: the yolo layers' own loss is not
the point (Darknet's takes ~1% of a step, bench step -layers), and this one
gives every output a gradient, as Darknet's delta does. Input: constant
images of the cfg's size, batch/subdivisions of them, as bench step uses.

Prints, like bench step -layers:
    layers forward_s=F backward_s=B gflop=G gflops=R sgemm_gflops=S fraction=X
F and B are medians of K iterations after one warm-up; G counts the
multiply-adds as bench step does (bench/scale_model.py --flops); S is one
thread of torch.mm on 1024x1024 matrices (the BLAS this torch links), median
of 5, timed in the same run.
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_model  # noqa: E402  (parse_cfg, training_flops)

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit("torch_step: PyTorch is not installed (Debian: apt-get install python3-torch)")


def activation(name):
    acts = {"leaky": lambda x: F.leaky_relu(x, 0.1, inplace=True), "linear": lambda x: x,
            "relu": lambda x: F.relu(x, inplace=True), "logistic": torch.sigmoid, "mish": F.mish}
    if name not in acts:
        raise ValueError("activation %s is not built here" % name)
    return acts[name]


class DarknetNet(torch.nn.Module):
    def __init__(self, path):
        super().__init__()
        secs = [s for s in scale_model.parse_cfg(path) if s[0] != "distributed"]
        net = secs[0][1]
        self.h, self.w, c = int(net["height"]), int(net["width"]), int(net.get("channels", 3))
        self.batch = int(net.get("batch", 1)) // int(net.get("subdivisions", 1))
        self.layers, self.mods, chans = [], torch.nn.ModuleList(), []
        for i, (kind, o) in enumerate(secs[1:]):
            g = lambda k, d: int(o.get(k, d))
            mod = None
            if kind in ("convolutional", "conv"):
                n, size, stride, groups = g("filters", 1), g("size", 1), g("stride", 1), g("groups", 1)
                pad = size // 2 if g("pad", 0) else g("padding", 0)
                bn = bool(g("batch_normalize", 0))
                conv = torch.nn.Conv2d(c, n, size, stride, pad, groups=groups, bias=not bn)
                mod = torch.nn.Sequential(conv, torch.nn.BatchNorm2d(n)) if bn else conv
                self.layers.append(("conv", activation(o.get("activation", "logistic"))))
                c = n
            elif kind in ("maxpool", "max"):
                size = g("size", 1)
                stride, pad = g("stride", 1), g("padding", size - 1)
                self.layers.append(("maxpool", (size, stride, pad // 2, pad - pad // 2)))
            elif kind == "upsample":
                self.layers.append(("upsample", g("stride", 2)))
            elif kind == "route":
                idx = [int(x) for x in o["layers"].split(",")]
                idx = [j if j >= 0 else i + j for j in idx]
                groups, gid = g("groups", 1), g("group_id", 0)
                self.layers.append(("route", (idx, groups, gid)))
                c = sum(chans[j] for j in idx) // groups
            elif kind == "shortcut":
                j = int(o["from"])
                self.layers.append(("shortcut", (j if j >= 0 else i + j, activation(o.get("activation", "linear")))))
            elif kind in ("yolo", "region"):
                self.layers.append(("out", None))
            else:
                raise ValueError("%s: layer %d [%s] is not built here" % (path, i, kind))
            self.mods.append(mod if mod is not None else torch.nn.Identity())
            chans.append(c)

    def forward(self, x):
        outs, heads = [], []
        for (kind, a), mod in zip(self.layers, self.mods):
            if kind == "conv":
                x = a(mod(x))
            elif kind == "maxpool":
                size, stride, left, right = a
                if left or right:
                    x = F.pad(x, (left, right, left, right), value=float("-inf"))
                x = F.max_pool2d(x, size, stride)
            elif kind == "upsample":
                x = F.interpolate(x, scale_factor=a, mode="nearest")
            elif kind == "route":
                idx, groups, gid = a
                parts = [outs[j] for j in idx]
                if groups > 1:
                    parts = [p.chunk(groups, dim=1)[gid] for p in parts]
                x = parts[0] if len(parts) == 1 else torch.cat(parts, 1)
            elif kind == "shortcut":
                j, act = a
                x = act(x + outs[j])
            elif kind == "out":
                heads.append(x)
            outs.append(x)
        return heads or [x]


def sgemm_gflops():
    a, b = torch.rand(1024, 1024), torch.rand(1024, 1024)
    t = []
    for _ in range(6):
        t0 = time.perf_counter()
        torch.mm(a, b)
        t.append(time.perf_counter() - t0)
    return 2 * 1024 ** 3 / statistics.median(t[1:]) / 1e9


def main(argv):
    args = [a for a in argv if a not in ("bench", "step", "-layers")]
    iters, channels_last, cfg = 5, False, None
    while args:
        a = args.pop(0)
        if a == "-iters" and args:
            iters = int(args.pop(0))
        elif a == "-channels-last":
            channels_last = True
        elif cfg is None and not a.startswith("-"):
            cfg = a
        else:
            sys.exit("usage: torch_step.py [bench step] CFG [-iters K] [-layers] [-channels-last]")
    if cfg is None or iters < 1:
        sys.exit("usage: torch_step.py [bench step] CFG [-iters K] [-layers] [-channels-last]")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = DarknetNet(cfg).train()
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    net = net.to(memory_format=fmt)
    x = torch.arange(net.batch * 3 * net.h * net.w, dtype=torch.float32).remainder(255).div(255)
    x = x.reshape(net.batch, 3, net.h, net.w).contiguous(memory_format=fmt)
    fwd, bwd = [], []
    for it in range(iters + 1):
        net.zero_grad(set_to_none=False)
        t0 = time.perf_counter()
        heads = net(x)
        loss = sum(h.square().sum() for h in heads) / 2
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        if it:
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
    f, b = statistics.median(fwd), statistics.median(bwd)
    _, per_image = scale_model.training_flops(cfg)
    gflop = per_image * net.batch / 1e9
    sg = sgemm_gflops()
    print("# torch %s, %d thread, %s, batch %d, %d iterations after one warm-up, medians"
          % (torch.__version__, torch.get_num_threads(), "channels_last" if channels_last else "NCHW",
             net.batch, iters))
    print("layers forward_s=%.6f backward_s=%.6f gflop=%.3f gflops=%.1f sgemm_gflops=%.1f fraction=%.2f"
          % (f, b, gflop, gflop / (f + b), sg, gflop / (f + b) / sg))


if __name__ == "__main__":
    main(sys.argv[1:])
