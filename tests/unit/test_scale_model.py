#!/usr/bin/python3
"""bench/scale_model.py against closed forms (values chosen exact in binary
floating point), its cfg counter against the plugin's counts, and its report
on the committed inputs. Usage: tests/unit/test_scale_model.py (from the repo root)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import scale_model as m  # noqa: E402

failures = []


def check(name, got, want):
    if got != want:
        failures.append("%s: got %r, want %r" % (name, got, want))


INF = (float("inf"), 0.0)
# Infinite bandwidth, zero latency: nothing to wait for, at any size.
check("free link efficiency", m.efficiency(2.0, 0.0, m.allreduce_time("flat", 1e9, 4096, 8, INF, INF), 0.0), 1.0)
check("free link never below", m.first_rank_below(1.0, 0.0, 1e9, "hierarchical", 8, INF, INF, 0.0), None)
# flat, bandwidth only, one rank a node: 2(1-1/p) S/B; 1 GB over 1 GB/s, 4 ranks: 1.5 s.
link = (1e9, 0.0)
check("flat 4 ranks", m.allreduce_time("flat", 1e9, 4, 1, link, link), 1.5)
# Tc 13.5 s: exactly 90% at 4 ranks (not below), 13.5/15.1 at 5.
check("flat bandwidth threshold", m.first_rank_below(13.5, 0.0, 1e9, "flat", 1, link, link, 0.0), 5)
# flat, latency only: 2 ceil(log2 p) a with a = 2^-10 s; Tc = 180 a: 90% up to 1024 ranks (20 a), below at 1025 (22 a).
lat = (float("inf"), 2.0 ** -10)
check("flat latency threshold", m.first_rank_below(180 * 2.0 ** -10, 0.0, 0.0, "flat", 1, lat, lat, 0.0), 1025)
# Inside one node it runs on the intra-node link: 2(3/4) S / 4e9.
check("flat in one node", m.allreduce_time("flat", 1e9, 4, 4, link, (4e9, 0.0)), 0.375)
# 2 nodes x 4: 2(3/4) S / 4e9 inside, then the NIC carries 2(1/2) S: 0.375 + 1.
check("flat 2x4", m.allreduce_time("flat", 1e9, 8, 4, link, (4e9, 0.0)), 1.375)
# 8 nodes x 8, latency only: 2 log2 8 steps inside (2^-12 s) and 2 log2 8 across (2^-10 s).
check("flat 8x8 latency", m.allreduce_time("flat", 0.0, 64, 8, (float("inf"), 2.0 ** -10), (float("inf"), 2.0 ** -12)),
      6 * 2.0 ** -12 + 6 * 2.0 ** -10)
# Hierarchical, 2 nodes x 4: two intra rings (2 x 1.5 S/4e9) + the leaders' allreduce of 2 (S/1e9).
check("hierarchical 2x4", m.allreduce_time("hierarchical", 1e9, 8, 4, link, (4e9, 0.0)), 1.75)
check("one rank, no allreduce", m.allreduce_time("hierarchical", 1e9, 1, 4, link, link), 0.0)
# Overlap hides its fraction of the allreduce, at most the compute after the first bucket.
check("overlap bounded by compute", m.efficiency(1.0, 0.5, 1.0, 0.75), 1.0 / 1.5)
check("overlap fraction", m.efficiency(1.0, 0.5, 1.0, 0.25), 1.0 / 1.75)
# The cfg counter against the plugin's counts (bench allreduce / bench step printouts).
for cfg, want in (("cfg/fashion.cfg", 55066), ("cfg/fashion-det.cfg", 451370),
                  ("third_party/darknet-cpu/cfg/yolov3-tiny.cfg", 8852366),
                  ("third_party/darknet-cpu/cfg/yolov3.cfg", 61949149)):
    if os.path.exists(cfg):
        check("count " + cfg, m.count_grad_floats(cfg), want)
    else:
        failures.append("missing %s (build first)" % cfg)
# The committed inputs give two tables of one row per setup (25GbE: 8 GPU, 4 CPU).
out = m.report("bench/results/scale-model.txt")
rows = [r for r in out.splitlines() if r.startswith("| 25GbE")]
check("report rows", len(rows), 8 + 4)
# docs/benchmarks.md shows the model's output for the committed inputs, word for word.
with open("docs/benchmarks.md") as f:
    check("docs/benchmarks.md holds bench/scale_model.py's output", out in f.read(), True)

for f in failures:
    print("FAIL " + f)
print("scale model: %d checks failed" % len(failures) if failures else "scale model: all checks passed")
sys.exit(1 if failures else 0)
