#!/usr/bin/env python3
"""Nothing above plugin/base/ reads Darknet's network: checks the sources.

usage: boundary.py [--src DIR] LAYERS [FILE...]
  LAYERS  the layer folders of plugin/ from the bottom, comma-separated (the
          Makefile's PLUGIN_LAYERS); every .c, .h and .cu file of the layers
          above base is checked
  FILE    more files to check (main.c)

What the plugin needs of a network goes through mn_base.h's mn_net_*
accessors (docs/design.md, "Where darknet-mn meets Darknet"), so that a base
whose network is no C struct (hank-ai's C++ Darknet) needs only its adapter.
A file fails, named with its line, where, outside comments and strings, it
dereferences a variable it declares as network * (net->, r->net->, (*out)->),
reads a field of one it holds by value (net.batch), or indexes a layers array (->layers[, .layers[). Layer fields (l->type) are
not checked yet. Prints one ok line, or a FAIL line per read, and exits
non-zero on any.
"""
import glob
import os
import re
import sys

# Comments and literals become spaces, newlines kept, so lines still count.
TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
DECL = re.compile(r'\bnetwork\s*\*+\s*(?:const\s+)?(\w+)')
VALUE = re.compile(r'\bnetwork\s+(\w+)\s*[;,)=]')
LAYERS = re.compile(r'(?:->|\.)\s*layers\s*\[')


def blank(src):
    return TOKENS.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), src)


def reads(path):
    """[(line, what)] of each network read in the file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        code = blank(f.read())
    names = {"net"} | set(DECL.findall(code))
    name = "|".join(sorted(map(re.escape, names)))
    deref = r'(?:\b(?:%s)|\(\s*\*\s*(?:%s)\s*\))\s*->\s*\w+' % (name, name)
    values = set(VALUE.findall(code))
    if values:   # a network held by value (the fork's style): its fields after a dot
        deref += r'|\b(?:%s)\s*\.\s*\w+' % "|".join(sorted(map(re.escape, values)))
    deref = re.compile(deref)
    out = []
    for no, line in enumerate(code.split("\n"), 1):
        found = list(deref.finditer(line))
        found += [m for m in LAYERS.finditer(line) if not any(d.start() <= m.start() < d.end() for d in found)]
        for m in sorted(found, key=lambda m: m.start()):
            out.append((no, re.sub(r'\s+', '', m.group(0))))
    return out


def main():
    args = sys.argv[1:]
    src = "plugin"
    if args[:1] == ["--src"] and len(args) > 1:
        src, args = args[1], args[2:]
    if not args:
        sys.exit(__doc__)
    layers = args[0].split(",")
    if "base" not in layers:
        sys.exit(f"boundary.py: no base among the layers {args[0]}")
    above = layers[layers.index("base") + 1:]
    files = []
    for l in above:
        for ext in ("c", "h", "cu"):
            files += sorted(glob.glob(os.path.join(src, l, "*." + ext)))
    files += args[1:]
    problems = 0
    for path in files:
        for no, what in reads(path):
            print(f"FAIL boundary: {path}:{no}: reads the network ({what}); "
                  f"above base/ use mn_base.h's mn_net_* (docs/design.md)")
            problems += 1
    if problems:
        sys.exit(1)
    print(f"ok   boundary: {len(files)} files above base/ ({', '.join(above)}{', ' if args[1:] else ''}"
          f"{', '.join(args[1:])}) read no network field: they go through mn_base.h's mn_net_*")


if __name__ == "__main__":
    main()
