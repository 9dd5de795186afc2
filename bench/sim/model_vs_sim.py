#!/usr/bin/python3
"""bench/scale_model.py's allreduce times beside the simulation's, at the
same points (issue 54): every float32 row of a bench/sim/run.sh table.

    bench/sim/model_vs_sim.py [bench/results/sim-quick.txt]

flat: the model's MPI_Allreduce (Rabenseifner's, as Open MPI runs a large
one; its ring over p ranks before) against one plain MPI_Allreduce of the
gradient (Open MPI's choice by size, simulated); hierarchical: the model's
(two in-node rings around the leaders' allreduce, one pass over the whole
gradient) against the plugin's hierarchical, and the same model paid once
per piece, as the plugin runs it (each piece its own three legs). The links
are the platform's own figures, which are the model's 25GbE and IB100;
inside a node the platform's loopback. A ratio beyond 0.8-1.25 is marked.
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import scale_model  # noqa: E402

# The platforms' links (bench/sim/platforms/*.xml): (bytes/s, s per message).
INTER = {"eth25": scale_model.LINKS["25GbE"][:2], "ib100": scale_model.LINKS["IB100"][:2]}
INTRA = {"8gpu": (200e9, 3e-6), "64core": (20e9, 0.5e-6)}
PIECE = 1 << 20   # the plugin's default piece in these runs


def rows(path):
    """(platform, ranks, gradient, env, {variant: ms}) of the float32 rows."""
    names = ["allreduce", "naive", "flat", "hierarchical", "two_dimensional"]
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 11 or not cells[1].isdigit() or cells[3] != "float32":
            continue
        try:
            times = {n: float(cells[5 + i]) for i, n in enumerate(names)}
        except ValueError:
            continue
        yield cells[0], int(cells[1]), cells[2], cells[4], times


def mark(r):
    return "%.2f%s" % (r, "" if 0.8 <= r <= 1.25 else " *")


def main(argv):
    path = argv[1] if len(argv) > 1 else "bench/results/sim-quick.txt"
    mb = {"yolov4-tiny": 24e6, "yolov3-tiny": 34e6, "yolov3": 236e6}
    print("| platform | ranks | gradient | env | sim allreduce | model flat | ratio | sim hierarchical "
          "| model hierarchical | ratio | model, per piece | ratio |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for plat, p, grad, env, t in rows(path):
        net, node = plat.split("-")[0], plat.split("-")[1]
        per = 8 if node == "8gpu" else 64
        inter, intra = INTER[net], INTRA[node]
        s = mb[grad]
        piece = float(env.split("=")[1]) if env.startswith("MN_PIECE_BYTES=") else PIECE
        ring = scale_model.allreduce_time("flat", s, p, per, inter, intra) * 1e3
        hier = scale_model.allreduce_time("hierarchical", s, p, per, inter, intra) * 1e3
        n = math.ceil(s / piece)
        last = s - (n - 1) * piece
        pieces = ((n - 1) * scale_model.allreduce_time("hierarchical", piece, p, per, inter, intra)
                  + scale_model.allreduce_time("hierarchical", last, p, per, inter, intra)) * 1e3
        print("| %s | %d | %s | %s | %.2f | %.2f | %s | %.2f | %.2f | %s | %.2f | %s |" % (
            plat, p, grad, env, t["allreduce"], ring, mark(ring / t["allreduce"]), t["hierarchical"], hier,
            mark(hier / t["hierarchical"]), pieces, mark(pieces / t["hierarchical"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
