#!/usr/bin/env python3
"""The plugin's calls go one way: checks a build's object files with nm.

usage: layers.py [--src DIR] LAYERS LIBRARY...
  LAYERS   the layer folders of plugin/ from the bottom, comma-separated (the
           Makefile's PLUGIN_LAYERS: core,base,transport,coll,train,cmd)
  LIBRARY  a build's libdarknet_mn.a (build/cpu, build/gpu, ...); each member
           belongs to the layer whose folder holds its source

A file uses another when it has an undefined symbol that the other defines
(nm: U against T/D/B/R/...). Each build must have no cycle of such uses
among its files (every cycle is named with its files and the symbols that
close it), no use of a file in a higher layer, and no object outside a
layer folder. Prints one ok line per build, or a FAIL line per problem,
and exits non-zero on any.
"""
import glob
import os
import subprocess
import sys

DEFINED = set("TDBRVWGSC")


def members(lib):
    """{member: (defined symbols, used symbols)} of an archive, from nm -A."""
    out = subprocess.run(["nm", "-A", lib], capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        where, _, rest = line.rpartition(":")
        member = where.split(":")[-1]
        defined, used = syms.setdefault(member, (set(), set()))
        f = rest.split()
        if len(f) == 2 and f[0] == "U":
            used.add(f[1])
        elif len(f) == 3 and f[1] in DEFINED:
            defined.add(f[2])
    return syms


def cycles(files, uses):
    """Strongly connected components of more than one file (Tarjan), iteratively."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], 0
    for root in files:
        if root in index:
            continue
        work = [(root, iter(sorted(uses[root])))]
        index[root] = low[root] = n; n += 1
        stack.append(root); on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = n; n += 1
                    stack.append(w); on.add(w)
                    work.append((w, iter(sorted(uses[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def check(src, layers, lib):
    problems = []
    rank = {l: i for i, l in enumerate(layers)}
    source = {}
    for l in layers:
        for path in [p for e in ("*.c", "*.cpp", "*.cu") for p in glob.glob(os.path.join(src, l, e))]:
            source[os.path.splitext(os.path.basename(path))[0]] = l
    if not os.path.exists(lib):
        return [f"{lib} does not exist (build it first)"], 0, 0
    files, defs, used = [], {}, {}
    for member, (d, u) in sorted(members(lib).items()):
        stem = os.path.splitext(member)[0]
        if stem not in source:
            problems.append(f"{lib}: {member} has no source in a layer folder ({src}/{{{','.join(layers)}}}/)")
            continue
        name = f"{source[stem]}/{stem}"
        files.append(name)
        defs[name], used[name] = d, u
    owner = {}
    for f in files:
        for s in defs[f]:
            owner.setdefault(s, f)
    uses = {f: {} for f in files}   # file -> {used file: [symbols]}
    for f in files:
        for s in sorted(used[f]):
            g = owner.get(s)
            if g and g != f:
                uses[f].setdefault(g, []).append(s)
    calls = sum(len(u) for u in uses.values())
    for f in files:
        for g, syms in sorted(uses[f].items()):
            if rank[g.split("/")[0]] > rank[f.split("/")[0]]:
                problems.append(f"{lib}: {f} calls up into {g} ({' '.join(syms[:4])})")
    for comp in cycles(files, {f: set(uses[f]) for f in files}):
        inside = [f"{f} -> {g} ({' '.join(uses[f][g][:3])})" for f in comp for g in sorted(uses[f]) if g in comp]
        problems.append(f"{lib}: a cycle of calls among {len(comp)} files: {', '.join(comp)}; "
                        f"calls: {'; '.join(inside)}")
    return problems, len(files), calls


def main():
    args = sys.argv[1:]
    src = "plugin"
    if args[:1] == ["--src"] and len(args) > 1:
        src, args = args[1], args[2:]
    if len(args) < 2:
        sys.exit(__doc__)
    layers = args[0].split(",")
    fail = False
    for lib in args[1:]:
        problems, n, calls = check(src, layers, lib)
        for p in problems:
            print("FAIL layers: " + p)
        if problems:
            fail = True
        else:
            print(f"ok   layers: {lib}: {n} plugin objects, {calls} uses between files, "
                  f"no cycle, none into a higher layer ({' < '.join(layers)})")
    sys.exit(1 if fail else 0)


if __name__ == "__main__":
    main()
