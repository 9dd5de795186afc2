#!/usr/bin/env python3
"""The model zoo: every cfg a base ships, adapted as a user would for a small
data set, trained a few iterations on N ranks with darknet-mn.

Each cfg ends as one of:
  trained  finite loss, weights written, and the base's own ./darknet loads
           them (detector test / classifier predict on one image);
  refused  darknet-mn stopped before training with one `darknet-mn:` line
           naming the cfg (on hank-ai's base also: the fork's own fatal error,
           which its own CLI gives on the same cfg and data too);
  skipped  not trainable by `detector train` or `classifier train` (the
           reason is in the table);
  FAILED   anything else (a crash, a NaN, a hang, a weights file the base
           cannot load). A NaN is re-run with the base's own binary to say
           whether it shows the same on the same cfg and data.

--equiv NAME,...: instead, the equivalence contract on those cfgs: N ranks
x b images against 1 rank x N*b from the same weights, deterministic data,
sync_bn, random=0: their updates (weights minus the start, mn_wcmp) must
agree to --tol, or to 3 times what merely reordering one rank's batch changes
(Darknet sums batch-norm statistics in float32).

On hank-ai's base (--base hankai) classifier cfgs end as refused: the fork
has no classifier loader, and darknet-mn's message says which bases train them.

Usage: mn_zoo.py --base pjreddie|alexeyab|hankai --mn BIN --darknet BIN --cfgs DIR
                 --det DIR --cls DIR --wcmp BIN --out DIR [--np 2]
                 [--only a.cfg,b.cfg] [--table FILE] [--equiv a.cfg,...]
"""
import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import time

CLASSES = 10
DETECTION = ("yolo", "Gaussian_yolo", "region", "detection")
RECURRENT = ("rnn", "gru", "lstm", "crnn", "conv_lstm", "history")


def parse(text):
    """[(name, [(key, value) or (None, raw line)])], the [net] first."""
    secs = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()   # Darknet's read_cfg: '#' starts a comment
        if line.startswith("["):
            secs.append([line.strip("[]"), []])
        elif secs and line and line[0] not in "#;" and "=" in line:
            k, v = line.split("=", 1)
            secs[-1][1].append((k.strip(), v.strip()))
    return secs


def get(sec, key, default=None):
    for k, v in sec[1]:
        if k == key:
            return v
    return default


def put(sec, key, value):
    for i, (k, _) in enumerate(sec[1]):
        if k == key:
            sec[1][i] = (key, str(value))
            return
    sec[1].append((key, str(value)))


def drop(sec, key):
    sec[1] = [(k, v) for k, v in sec[1] if k != key]


def dump(secs):
    return "\n".join("[%s]\n%s\n" % (n, "".join("%s=%s\n" % kv for kv in kvs)) for n, kvs in secs)


def kind(secs):
    """'detector', 'classifier', or ('skip', why)."""
    names = [s[0] for s in secs[1:]]
    rec = [n for n in names if n in RECURRENT]
    if rec:
        return ("skip", "recurrent ([%s]): trained on sequences by `darknet rnn`, not on images" % rec[0])
    if any(n in DETECTION for n in names):
        return "detector"
    if names and names[-1] in ("softmax", "soft", "cost") and ("softmax" in names or "soft" in names):
        return "classifier"
    return ("skip", "no class scores (no [softmax]; last [%s]): a feature extractor or an image-to-image net"
            % (names[-1] if names else "net"))


def strides(secs):
    """Each layer's stride against the input, following route/shortcut/upsample."""
    out = []
    for sec in secs[1:]:
        name, prev = sec[0], (out[-1] if out else 1)
        if name in ("convolutional", "conv", "maxpool", "max", "local", "reorg", "reorg3d"):
            default = get(sec, "size", "1") if name in ("maxpool", "max") else "1"
            s = int(get(sec, "stride", default))
            out.append(prev / s if get(sec, "reverse", "0") == "1" else prev * s)
        elif name == "upsample":
            out.append(prev / int(get(sec, "stride", "2")))
        elif name == "route":
            out.append(out[int(get(sec, "layers").split(",")[0])])
        else:
            out.append(prev)
    return out


def adapt(secs, what, size, batch, iters):
    net = secs[0]
    scale = size / float(get(net, "width", size))
    put(net, "width", size)
    put(net, "height", size)
    put(net, "batch", batch)
    put(net, "subdivisions", 1)
    put(net, "max_batches", iters)
    drop(net, "max_epochs")
    if what == "classifier":
        # The fork crops from min_crop..max_crop pixels: scaled with the input.
        for k in ("min_crop", "max_crop"):
            if get(net, k):
                put(net, k, max(size, int(int(get(net, k)) * scale)))
        # The layer that makes the class scores: the last with outputs before the loss.
        for sec in reversed(secs):
            if sec[0] in ("convolutional", "conv"):
                put(sec, "filters", CLASSES)
                break
            if sec[0] in ("connected", "conn"):
                put(sec, "output", CLASSES)
                break
    for i, sec in enumerate(secs):
        for k in ("tree", "map", "counters_per_class"):
            drop(sec, k)
        if "classes" in dict(sec[1]) and sec[0] not in DETECTION:
            put(sec, "classes", CLASSES)
        if sec[0] not in DETECTION:
            continue
        put(sec, "classes", CLASSES)
        num = int(get(sec, "num", "1"))
        if sec[0] in ("yolo", "Gaussian_yolo"):
            mask = get(sec, "mask")
            m = len(mask.split(",")) if mask else num
            per = CLASSES + (9 if sec[0] == "Gaussian_yolo" else 5)
            want, key, kinds = m * per, "filters", ("convolutional", "conv")
        elif sec[0] == "region":
            want = num * (CLASSES + int(get(sec, "coords", "4")) + 1)
            key, kinds = "filters", ("convolutional", "conv")
        else:
            side = int(get(sec, "side", "7"))
            want = side * side * ((1 + int(get(sec, "coords", "4"))) * num + CLASSES)
            key, kinds = "output", ("connected", "conn")
        for j in range(i - 1, 0, -1):
            if secs[j][0] in kinds:
                put(secs[j], key, want)
                break
    return secs


def run(cmd, log, timeout, cwd=None, env=None):
    t0 = time.time()
    with open(log, "w") as f:
        try:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout, cwd=cwd, env=env).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    return rc, time.time() - t0, open(log, errors="replace").read()


def mpi(n):
    return ["mpiexec", "--oversubscribe", "-n", str(n)]


def make_data(a):
    """Symlinked slices of both sets, each label beside its image (both bases find it there)."""
    d = os.path.join(a.out, "data")
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    det = os.path.join(d, "det")
    os.makedirs(det)
    imgs = sorted(f for f in os.listdir(os.path.join(a.det, "images", "train")) if f.endswith(".jpg"))[:64]
    with open(os.path.join(d, "det.list"), "w") as f:
        for im in imgs:
            src = os.path.join(a.det, "images", "train", im)
            lab = os.path.join(a.det, "labels", "train", im.rsplit(".", 1)[0] + ".txt")
            os.symlink(os.path.abspath(src), os.path.join(det, im))
            os.symlink(os.path.abspath(lab), os.path.join(det, os.path.basename(lab)))
            f.write(os.path.join(det, im) + "\n")
    names = os.path.join(d, "names")
    with open(os.path.join(a.cls, "labels.txt")) as f:
        labels = f.read().split()
    open(names, "w").write("\n".join(labels) + "\n")
    backup = os.path.join(d, "backup")
    os.makedirs(backup)
    # The list may hold paths relative to where it was made (here); the base's binary runs elsewhere.
    paths = [os.path.abspath(p) for p in open(os.path.join(a.cls, "train.list")).read().split()[:256]]
    open(os.path.join(d, "cls.list"), "w").write("\n".join(paths) + "\n")
    open(os.path.join(d, "det.data"), "w").write(
        "classes=%d\ntrain=%s/det.list\nvalid=%s/det.list\nnames=%s\nbackup=%s\n" % (CLASSES, d, d, names, backup))
    open(os.path.join(d, "cls.data"), "w").write(
        "classes=%d\ntrain=%s/cls.list\nvalid=%s/cls.list\nlabels=%s\nnames=%s\nbackup=%s\ntop=1\n"
        % (CLASSES, d, d, os.path.join(a.cls, "labels.txt"), os.path.join(a.cls, "labels.txt"), backup))
    return d, os.path.join(det, imgs[0]), paths[0]


def final_loss(log, iters):
    m = re.search(r"^%d: loss (\S+)," % iters, log, re.M)
    return float(m.group(1)) if m else None


def refusal(log, cfg):
    # hank-ai's fork ends its own lines with a colour reset, which then heads darknet-mn's next line.
    lines = [l for l in re.sub(r"\x1b\[[0-9;]*m", "", log).splitlines() if l.startswith("darknet-mn:") and cfg in l]
    return lines[0] if lines else None


def trial(a, data, name, secs, what, iters):
    """Train the adapted cfg; returns (outcome, detail)."""
    base = name[:-4].replace(".", "_")   # Darknet names the weights after the cfg up to its first '.'
    cfg = os.path.join(a.out, base + ".cfg")
    open(cfg, "w").write(dump(secs))
    w = os.path.join(data, "backup", base + "_final.weights")
    if os.path.exists(w):
        os.remove(w)
    task = "detector" if what == "detector" else "classifier"
    dfile = os.path.join(data, "det.data" if what == "detector" else "cls.data")
    rc, took, log = run(mpi(a.np) + [a.mn, task, "train", dfile, cfg], os.path.join(a.out, base + ".log"), a.timeout)
    loss = final_loss(log, iters)
    if rc == 0 and loss is not None and math.isfinite(loss) and os.path.exists(w):
        return "trained", "loss %.4g, %.0f s" % (loss, took), cfg, w, dfile
    if rc not in (0, "timeout"):
        r = refusal(log, cfg)
        crash = re.search(r"fatal: SIG|Segmentation|Assertion|backtrace|double free", log)
        if r and not crash and "iteration" not in r:
            return "refused", r.split(": ", 2)[-1] if r.count(": ") >= 2 else r, cfg, None, dfile
        if "NaN or Inf" in log:
            return "nan", "NaN", cfg, None, dfile
    tail = [l for l in log.splitlines() if l.strip()][-2:]
    return "FAILED", "exit %s: %s" % (rc, " / ".join(tail)[:300]), cfg, None, dfile


def base_loads(a, what, cfg, w, dfile, det_img, cls_img):
    """The base's own binary loads the weights and runs one image through them."""
    if a.base == "hankai":
        # The fork prints no "Predicted in"; its -out JSON is written only after the image went through.
        js = os.path.join(a.out, os.path.basename(cfg)[:-4] + ".own.json")
        if os.path.exists(js):
            os.remove(js)
        cmd = [a.darknet, "detector", "test", "-nocolor", dfile, cfg, w, det_img, "-dont_show", "-out", js]
        rc, _, log = run(cmd, os.path.join(a.out, os.path.basename(cfg)[:-4] + ".own.log"), a.timeout, cwd=a.out)
        return rc == 0 and os.path.exists(js) and "frame_id" in open(js).read(), rc
    if what == "detector":
        cmd = [a.darknet, "detector", "test", dfile, cfg, w, det_img]
        if a.base == "alexeyab":
            cmd += ["-dont_show"]
    else:
        cmd = [a.darknet, "classifier", "predict", dfile, cfg, w, cls_img]
    rc, _, log = run(cmd, os.path.join(a.out, os.path.basename(cfg)[:-4] + ".own.log"), a.timeout, cwd=a.out)
    return rc == 0 and "Predicted in" in log, rc


def nan_verdict(a, what, cfg, dfile):
    """A NaN is nan-too when the base's own binary also shows NaN on this cfg
    and data, else FAILED; returns the outcome and its detail."""
    task = "detector" if what == "detector" else "classifier"
    cmd = [a.darknet, task, "train", dfile, cfg]
    if a.base == "alexeyab":
        cmd += ["-dont_show"]
    elif a.base == "hankai":
        # The fork's CPU training asks before it starts; -yes answers (patch 0016).
        cmd[3:3] = ["-nocolor", "-dont_show", "-yes"]
    rc, _, log = run(cmd, os.path.join(a.out, os.path.basename(cfg)[:-4] + ".own-train.log"), a.timeout, cwd=a.out)
    also = bool(re.search(r"\b-?(nan|inf)\b", log, re.I))
    return ("nan-too" if also else "FAILED",
            "NaN; the base's own ./darknet on the same cfg and data: %s" % ("NaN or Inf too" if also else "no NaN (exit %s)" % rc))


def fork_too(a, what, cfg, dfile, log):
    """hank-ai's fork ships cfgs its own parser or loader stops on (a duplicate
    key, a key it no longer reads, letter_box with mosaic): darknet-mn's run
    ended in the fork's fatal error, caught on every rank. The same message from
    the fork's own CLI on the same cfg and data makes it the fork's refusal, not
    darknet-mn's failure; returns its detail, or None."""
    m = re.search(r"^darknet-mn: rank \d+ \([^)]*\): fatal: (.*); aborting all ranks$",
                  re.sub(r"\x1b\[[0-9;]*m", "", log), re.M)
    if a.base != "hankai" or what != "detector" or not m or m.group(1).startswith("SIG"):
        return None
    cmd = [a.darknet, "detector", "train", "-nocolor", "-dont_show", "-yes", dfile, cfg]
    _, _, own = run(cmd, os.path.join(a.out, os.path.basename(cfg)[:-4] + ".own-train.log"), a.timeout, cwd=a.out)
    msg = m.group(1).replace(cfg, os.path.basename(cfg))
    return "the fork itself stops on it (its own CLI too): %s" % msg if m.group(1) in own else None


def size_for(secs, what):
    st = max([s for s in strides(secs) if s >= 1] + [1])
    want = 64 if what == "classifier" else 96
    st = int(st)
    return max(st, (want + st - 1) // st * st)


def zoo(a):
    data, det_img, cls_img = make_data(a)
    names = sorted(f for f in os.listdir(a.cfgs) if f.endswith(".cfg"))
    if a.only:
        only = a.only.split(",")
        missing = [n for n in only if n not in names]
        if missing:
            sys.exit("mn_zoo: %s not in %s" % (", ".join(missing), a.cfgs))
        names = only
    rows, bad = [], 0
    for name in names:
        text = open(os.path.join(a.cfgs, name), errors="replace").read()
        secs = parse(text)
        if not secs or secs[0][0] not in ("net", "network"):
            rows.append((name, "-", "skipped", "no [net] section"))
            continue
        what = kind(secs)
        if name == "go.cfg":
            what = ("skip", "Go move predictor: `darknet go` trains it on game records")
        if name.endswith(".test.cfg"):
            what = ("skip", "test-time cfg (batch=1; its training twin is in the folder)")
        if isinstance(what, tuple):
            rows.append((name, "-", "skipped", what[1]))
            print("skip     %s: %s" % (name, what[1]), flush=True)
            continue
        size = size_for(secs, what)
        secs = adapt(secs, what, size, a.batch, a.iters)
        outcome, detail, cfg, w, dfile = trial(a, data, name, secs, what, a.iters)
        if outcome == "refused" and "set mosaic=0" in detail:
            # What the message tells the user to do: the rest of the cfg must then train.
            put(secs[0], "mosaic", 0)
            o2, d2, cfg, w, dfile = trial(a, data, name, secs, what, a.iters)
            if o2 == "trained":
                ok, rc = base_loads(a, what, cfg, w, dfile, det_img, cls_img)
                if not ok:
                    o2, d2 = "FAILED", d2 + "; the base's own ./darknet did not load the weights (exit %s)" % rc
            if o2 == "nan":
                o2, d2 = nan_verdict(a, what, cfg, dfile)
            detail += "; with mosaic=0: %s (%s)" % (o2, d2)
            if o2 != "trained":
                outcome = "nan-too" if o2 == "nan-too" else "FAILED"
        if outcome == "trained":
            ok, rc = base_loads(a, what, cfg, w, dfile, det_img, cls_img)
            if not ok:
                outcome, detail = "FAILED", detail + "; the base's own ./darknet did not load the weights (exit %s)" % rc
        elif outcome == "nan":
            outcome, detail = nan_verdict(a, what, cfg, dfile)
        elif outcome == "FAILED":
            own = fork_too(a, what, cfg, dfile, open(cfg[:-4] + ".log", errors="replace").read())
            if own:
                outcome, detail = "refused", own
        rows.append((name, "%s %dpx" % (what, size), outcome, detail))
        bad += outcome == "FAILED"
        print("%-8s %s (%s %dpx): %s" % (outcome, name, what, size, detail), flush=True)
    if a.table:
        with open(a.table, "w") as f:
            f.write("| cfg | trained as | outcome | detail |\n|---|---|---|---|\n")
            for r in rows:
                f.write("| %s | %s | %s | %s |\n" % tuple(x.replace("|", "/") for x in r))
    counts = {}
    for r in rows:
        counts[r[2]] = counts.get(r[2], 0) + 1
    print("mn_zoo %s: %s" % (a.base, ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items()))))
    return 1 if bad else 0


def equiv(a):
    """N x b against 1 x N*b on real cfgs, from the same weights."""
    data, _, _ = make_data(a)
    bad = 0
    for name in a.equiv.split(","):
        secs = parse(open(os.path.join(a.cfgs, name), errors="replace").read())
        what = kind(secs)
        size = size_for(secs, what)
        base = name[:-4].replace(".", "_")
        runs = {}
        # One update: Darknet sums batch-norm statistics in float32, so the two
        # splits differ in rounding (~1e-5), and later steps grow that without
        # bound (a yolo layer's thresholds flip; at a classifier's rate of 0.1
        # reordering one rank's batch changes the second update by 1%).
        steps = 1
        # "perm": one rank again, each global batch's images in reverse order.
        # Only the order of Darknet's float sums changes, so its distance from
        # "one" is the rounding floor the rank split is held to as well.
        nb = a.np * a.batch
        lst = os.path.join(data, "det.list" if what == "detector" else "cls.list")
        paths = open(lst).read().split()
        perm = [p for k in range(0, len(paths), nb) for p in reversed(paths[k:k + nb])]
        open(lst + ".perm", "w").write("\n".join(perm) + "\n")
        dfile = os.path.join(data, "det.data" if what == "detector" else "cls.data")
        open(dfile + ".perm", "w").write(open(dfile).read().replace("train=" + lst, "train=" + lst + ".perm"))
        for tag, n, b, iters in (("init", 1, a.batch, 1), ("one", 1, nb, steps), ("many", a.np, a.batch, steps),
                                 ("perm", 1, nb, steps)):
            s = adapt(parse(dump(secs)), what, size, b, iters)
            put(s[0], "burn_in", 0)   # updates at the cfg's full rate, not a warm-up's near-zero one
            for sec in s:
                if sec[0] in DETECTION:
                    put(sec, "random", 0)
                    put(sec, "jitter", 0)
            s.append(["distributed", [("deterministic", "1"), ("sync_bn", "1"), ("shuffle", "0")]])
            cfg = os.path.join(a.out, "%s-eq-%s.cfg" % (base, tag))
            open(cfg, "w").write(dump(s))
            task = "detector" if what == "detector" else "classifier"
            cmd = mpi(n) + [a.mn, task, "train", dfile + (".perm" if tag == "perm" else ""), cfg]
            if tag != "init":
                cmd += [runs["init"], "-clear"]
            rc, _, log = run(cmd, cfg[:-4] + ".log", a.timeout)
            w = os.path.join(data, "backup", "%s-eq-%s_final.weights" % (base, tag))
            if rc != 0 or not os.path.exists(w):
                print("FAIL     %s: %s run exit %s (see %s)" % (name, tag, rc, cfg[:-4] + ".log"))
                bad += 1
                break
            runs[tag] = w
        else:
            def rel(x):
                out = subprocess.run([a.wcmp, runs[x], runs["one"], "1", runs["init"]], capture_output=True, text=True).stdout
                m = re.search(r"relative difference (\S+)", out)
                return float(m.group(1)) if m else float("inf")
            split, floor = rel("many"), rel("perm")
            good = split <= max(a.tol, 3 * floor)
            bad += not good
            print("%s     %s: %d x %d = 1 x %d after %d update(s) at %dpx: the updates differ by %.3g "
                  "(1 x %d in another order: %.3g; limit max(%g, 3 times that))" % (
                      "ok  " if good else "FAIL", name, a.np, a.batch, nb, steps, size, split, nb, floor, a.tol), flush=True)
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for k in ("base", "mn", "darknet", "cfgs", "det", "cls", "out", "wcmp"):
        p.add_argument("--" + k, required=k not in ("wcmp",), choices=("pjreddie", "alexeyab", "hankai") if k == "base" else None)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--iters", type=int, default=3)
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--only")
    p.add_argument("--table")
    p.add_argument("--equiv")
    a = p.parse_args()
    a.out = os.path.abspath(a.out)
    os.makedirs(a.out, exist_ok=True)
    for k in ("mn", "darknet", "wcmp", "det", "cls", "cfgs"):
        if getattr(a, k):
            setattr(a, k, os.path.abspath(getattr(a, k)))
    return equiv(a) if a.equiv else zoo(a)


if __name__ == "__main__":
    sys.exit(main())
