#!/usr/bin/env python3
"""map_near.py REF OTHER: two `detector map` outputs of the same weights,
each darknet-mn's, AlexeyAB's ./darknet's or hank-ai's darknet's (told
apart by their lines), agree as two decoders of the same JPEGs can: both
find detections and an mAP above 0, OTHER's detection count is within 0.5%
of REF's, and each class's AP within 15% of REF's + 0.1 points (at APs
of a few percent a handful of boxes moves that much: one machine read
class 0 at 4.28% on darknet-mn's decoding against 3.78% on hank-ai's, the
same weights bit for bit). Prints a
summary line, or exits non-zero saying what is off (tests/e2e/run_hankai.sh,
tests/e2e/run_hankai_build.sh)."""
import re
import sys

NAMES = {"mn": "darknet-mn's", "ab": "AlexeyAB's", "hk": "hank-ai's"}


def parse(path):
    """(kind, detections, mAP %, {class: AP %}) of one map output."""
    t = open(path, errors="replace").read()
    if "darknet-mn: " in t:
        ap = {int(c): 100 * float(a) for c, a in re.findall(r"darknet-mn: class (\d+) \S+\s+AP ([\d.]+)", t)}
        m = re.search(r"(\d+) detections, \d+ truth boxes: mAP@0.50 ([\d.]+)", t)
        return "mn", m and int(m[1]), m and 100 * float(m[2]), ap
    if "class_id = " in t:
        ap = {int(c): float(a) for c, a in re.findall(r"class_id = (\d+), name = \S+, ap = ([\d.]+)%", t)}
        n, m = re.search(r"detections_count = (\d+)", t), re.search(r"mean average precision \(mAP@0.50\) = ([\d.]+)", t)
        return "ab", n and int(n[1]), m and 100 * float(m[1]), ap
    ap = {int(c): float(a) for c, a in
          re.findall(r"(?m)^\s+(\d+) \S+\s+([\d.]+)\s+\d+\s+\d+\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+$", t)}
    n, m = re.search(r"detections_count=(\d+)", t), re.search(r"\(mAP@0.50\)=([\d.]+)%", t)
    return "hk", n and int(n[1]), m and float(m[1]), ap


def main():
    (rk, rn, rm, ra), (ok_, on, om, oa) = parse(sys.argv[1]), parse(sys.argv[2])
    r, o = NAMES[rk], NAMES[ok_]
    if None in (rn, rm, on, om) or not ra or sorted(ra) != sorted(oa):
        sys.exit("%s or %s map output lacks its lines (classes %s and %s)" % (r, o, sorted(ra), sorted(oa)))
    if not (rn > 0 and on > 0 and rm > 0 and om > 0):
        sys.exit("nothing found: %d and %d detections, mAP %.2f%% and %.2f%%" % (rn, on, rm, om))
    if abs(on - rn) > 0.005 * rn:
        sys.exit("%s %d detections against %s %d" % (o, on, r, rn))
    far = [c for c in ra if abs(oa[c] - ra[c]) > 0.15 * ra[c] + 0.1]
    if far:
        sys.exit("class %d: %s AP %.4f%% against %s %.4f%%" % (far[0], o, oa[far[0]], r, ra[far[0]]))
    w = max(ra, key=lambda c: abs(oa[c] - ra[c]))
    print("%s %d detections against %s %d, mAP %.2f%% against %.2f%%, %d classes' AP within %.3f points (class %d)"
          % (o, on, r, rn, om, rm, len(ra), abs(oa[w] - ra[w]), w))


main()
