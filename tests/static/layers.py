#!/usr/bin/env python3
"""The plugin's calls go one way: checks a build's object files with nm.

usage: layers.py [--src DIR] LAYERS LIBRARY...
       layers.py [--src DIR] --includes LAYERS
  LAYERS   the layer folders of plugin/ from the bottom, comma-separated (the
           Makefile's PLUGIN_LAYERS: core,engine,...,train,train/observe,...,cmd;
           a part of a layer, such as train/input, is a layer of its own)
  LIBRARY  a build's libdarknet_mn.a (build/cpu, build/gpu, ...); each member
           belongs to the layer whose folder holds its source

A file uses another when it has an undefined symbol that the other defines
(nm: U against T/D/B/R/...). Each build must have no cycle of such uses
among its files (every cycle is named with its files and the symbols that
close it), no use of a file in a higher layer, and no object outside a
layer folder. Prints one ok line per build, or a FAIL line per problem,
and exits non-zero on any.

--includes checks the sources' #include "..." lines the same way: each
names the header's folder under DIR ("transport/mn_shm.h"); a file of a
layer folder may include the headers of its own layer and of those below
it, never one of a higher layer nor the public header DIR/darknet_mn.h
(the API's facade, above every layer: main.c and programs include it). A
part's folder (train/input) offers itself to the others through one header
named after it (mn_input.h); its other headers only its own files include,
as only a folder's own files include its *_impl.h headers (base/'s
mn_base_impl.h: what the adapters define for base/ alone). The
public header may reach, through its includes, only plugin headers outside
base/: a program built against it needs no Darknet header. And no file of
train/ (nor of its parts) names a cuda*, cudnn* or nccl* call: the device's
streams, events, memory and copies are transport's (mn_device.h). Nor does
a file outside coll/ reach the communicator's algorithm state (`->coll`,
struct mn_coll's fields): what others need of it, coll's functions give.
"""
import glob
import os
import re
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
            if rank[g.rsplit("/", 1)[0]] > rank[f.rsplit("/", 1)[0]]:
                problems.append(f"{lib}: {f} calls up into {g} ({' '.join(syms[:4])})")
    for comp in cycles(files, {f: set(uses[f]) for f in files}):
        inside = [f"{f} -> {g} ({' '.join(uses[f][g][:3])})" for f in comp for g in sorted(uses[f]) if g in comp]
        problems.append(f"{lib}: a cycle of calls among {len(comp)} files: {', '.join(comp)}; "
                        f"calls: {'; '.join(inside)}")
    return problems, len(files), calls


PUBLIC = "darknet_mn.h"


def quoted_includes(path):
    """The names of a file's #include "..." lines."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            t = line.strip()
            if t.startswith("#") and t[1:].lstrip().startswith("include"):
                rest = t[1:].lstrip()[len("include"):].strip()
                if rest.startswith('"'):
                    out.append(rest[1:].split('"')[0])
    return out


def part_header(layer):
    """The header a part of a layer offers the others through (train/input:
    mn_input.h); its other headers are its own."""
    return f"mn_{layer.rsplit('/', 1)[1]}.h"


def check_includes(src, layers):
    """Problems of the sources' includes, the files read, their includes of
    plugin headers, and how many headers the public header reaches."""
    rank = {l: i for i, l in enumerate(layers)}
    where = {PUBLIC: ""}   # header path under src -> its layer ("": the public header at src/)
    byname = {}            # a header's name alone -> its path
    files = []
    for l in layers:
        for e in ("*.c", "*.cpp", "*.cu", "*.h", "*.hpp"):
            for path in sorted(glob.glob(os.path.join(src, l, e))):
                files.append((l, path))
                if path.endswith((".h", ".hpp")):
                    where[os.path.relpath(path, src)] = l
                    byname[os.path.basename(path)] = os.path.relpath(path, src)

    def resolve(h):
        """An include's header path, and whether it names its folder."""
        if h in where:
            return h, True
        return byname.get(h), False

    problems, n = [], 0
    for l, path in files:
        for inc in quoted_includes(path):
            h, named = resolve(inc)
            if h is None:
                continue   # Darknet's or a library's
            n += 1
            name, hl, hn = os.path.relpath(path, src), where[h], os.path.basename(h)
            if not named:
                problems.append(f"{name} includes {inc} by its name alone: a plugin include names its layer ({h})")
            if hl == "":
                problems.append(f"{name} includes the public header {h} (the API's facade, above every layer)")
            elif rank[hl] > rank[l]:
                problems.append(f"{name} includes {h}, a header of a higher layer")
            elif hl != l and hn.endswith("_impl.h"):
                problems.append(f"{name} includes {h}, private to its folder (a *_impl.h header)")
            elif "/" in hl and hl != l and hn != part_header(hl):
                problems.append(f"{name} includes {h}, private to its folder (what {hl}/ offers is in {part_header(hl)})")
    seen, todo = set(), [PUBLIC]
    while todo:
        inc = todo.pop()
        h, _ = resolve(inc)
        if (h or inc) in seen:
            continue
        seen.add(h or inc)
        if h is None:
            problems.append(f"{PUBLIC} reaches {inc}, which is no plugin header (Darknet's or a library's)")
            continue
        if where[h] == "base":
            problems.append(f"{PUBLIC} reaches {h}")
        path = os.path.join(src, h)
        if os.path.exists(path):
            todo.extend(quoted_includes(path))
        else:
            problems.append(f"{PUBLIC} is missing from {src}/")
    return problems, len(files), n, len(seen) - 1


DEVICE_CALL = re.compile(r"\b((?:cuda|cudnn|nccl)\w*)\s*\(")
NO_DEVICE = "train"
COLL_STATE = re.compile(r"->\s*coll\b")


def code_only(text):
    """A source with its comments and string and char literals blanked, lines kept."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', blank, text, flags=re.S)


def scan(src, layers, pattern, says):
    """Every match of pattern in the code (not comments nor strings) of the
    given layers' files, as "file:line " + says(match); and the files read."""
    problems, n = [], 0
    for l in layers:
        for e in ("*.c", "*.cpp", "*.cu", "*.h", "*.hpp"):
            for path in sorted(glob.glob(os.path.join(src, l, e))):
                n += 1
                with open(path, errors="replace") as f:
                    code = code_only(f.read())
                for m in pattern.finditer(code):
                    problems.append(f"{os.path.relpath(path, src)}:{code.count(chr(10), 0, m.start()) + 1} {says(m)}")
    return problems, n


def check_device(src, layers):
    """The device rule: no CUDA, cuDNN or NCCL call in train/ or its parts."""
    mine = [l for l in layers if l == NO_DEVICE or l.startswith(NO_DEVICE + "/")]
    return scan(src, mine, DEVICE_CALL, lambda m: f"calls {m.group(1)}: {NO_DEVICE}/ makes no CUDA, cuDNN or NCCL "
                                                  "call (transport's mn_device.h holds the device's)")


def check_coll(src, layers):
    """The coll rule: no read of c->coll outside coll/."""
    return scan(src, [l for l in layers if l != "coll"], COLL_STATE,
                lambda m: "reads the communicator's coll state: outside coll/ only coll's functions do (mn_comm.h)")


def main():
    args = sys.argv[1:]
    src = "plugin"
    if args[:1] == ["--src"] and len(args) > 1:
        src, args = args[1], args[2:]
    if args[:1] == ["--includes"] and len(args) == 2:
        problems, nfiles, n, reach = check_includes(src, args[1].split(","))
        for p in problems:
            print("FAIL includes: " + p)
        if not problems:
            print(f"ok   includes: {nfiles} files, {n} includes of plugin headers, each naming its layer, none of a higher layer's; "
                  f"{PUBLIC} reaches {reach} headers, none of base/ nor of Darknet")
        device, ndev = check_device(src, args[1].split(","))
        for p in device:
            print("FAIL device: " + p)
        if not device:
            print(f"ok   device: {ndev} files of {NO_DEVICE}/ and its parts name no CUDA, cuDNN or NCCL call")
        coll, ncoll = check_coll(src, args[1].split(","))
        for p in coll:
            print("FAIL coll: " + p)
        if not coll:
            print(f"ok   coll: {ncoll} files outside coll/ read none of the communicator's coll state")
        sys.exit(1 if problems or device or coll else 0)
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
