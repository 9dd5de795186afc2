#!/usr/bin/env python3
"""Nothing outside plugin/base/ reads Darknet's network or layers, nor calls Darknet.

usage: boundary.py [--src DIR] LAYERS [FILE...] [--link DARKNET_LIB PLUGIN...]...
  LAYERS  the layer folders of plugin/ from the bottom, comma-separated (the
          Makefile's PLUGIN_LAYERS); every .c, .h and .cu file of every layer but
          base is checked
  FILE    more files to check (main.c)
  --link  a build's check (make print-link prints its arguments): Darknet's
          own library the build links (libdarknet.a), then the build's
          libdarknet_mn.a, whose members compiled from a file outside base are
          checked, and objects checked whole (main.o)

The sources: what the plugin needs of a network and its layers goes through
mn_base.h's mn_net_* and mn_layer_* accessors (docs/design.md, "Where
darknet-mn meets Darknet"), so that a base whose network is no C struct
(hank-ai's C++ Darknet, whose layer types are an enum class) needs only its
adapter. A file fails, named with its line, where, outside comments and
strings, it dereferences a variable it declares as network * (net->,
r->net->, (*out)->), reads a field of one it holds by value (net.batch), or
indexes a layers array (->layers[, .layers[); where it dereferences a layer
(a variable declared layer * or layer, mn_net_layer(...)->,
mn_net_last(...)->); or where it names Darknet's LAYER_TYPE or one of its
values (YOLO; mn_layer_kind is the plugin's own); or where it names one of
Darknet's value types whose layout no base need share (box_label, matrix,
a variable or cast of type data or image: a batch is an mn_batch, a truth
box an mn_truth, an image an mn_image). A layer * handed on (to mn_layer_move) is no read.

The objects (--link): what the plugin calls of Darknet goes through
mn_base.h's mn_base_* functions, so that a C++ base's adapter is the one
place that calls it. nm lists each checked object's undefined symbols; one
that Darknet's library defines (a function, or a variable such as
gpu_index) fails, named with the object, the symbol and the Darknet member
that defines it. Macros and inline functions leave no symbol and headers
are not read: this sees what the build links, which no grep of the sources
can be fooled about.

Prints one ok line per check, or a FAIL line per problem, and exits
non-zero on any.
"""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers import members   # noqa: E402  nm's defined and undefined symbols of each member

# Comments and literals become spaces, newlines kept, so lines still count.
TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
DECL = re.compile(r'\bnetwork\s*\*+\s*(?:const\s+)?(\w+)')
VALUE = re.compile(r'\bnetwork\s+(\w+)\s*[;,)=]')
LAYERS = re.compile(r'(?:->|\.)\s*layers\s*\[')
LDECL = re.compile(r'\blayer\s*\*+\s*(?:const\s+)?(\w+)')
LVALUE = re.compile(r'\blayer\s+(\w+)\s*[;,)=]')
# mn_net_layer(net, i)->type, (*mn_net_last(net)).classes: one level of parentheses inside the call.
CALL = r'mn_net_(?:layer|last)\s*\((?:[^()]|\([^()]*\))*\)'
LCALL = re.compile(r'\b%s\s*->\s*\w+|\(\s*\*\s*%s\s*\)\s*\.\s*\w+' % (CALL, CALL))
# Darknet's LAYER_TYPE and its values on both C bases (pjreddie's, then those only the fork has).
TYPES = re.compile(r'\b(?:LAYER_TYPE|CONVOLUTIONAL|DECONVOLUTIONAL|CONNECTED|MAXPOOL|SOFTMAX|DETECTION|DROPOUT|CROP|'
                   r'ROUTE|COST|NORMALIZATION|AVGPOOL|LOCAL|SHORTCUT|ACTIVE|RNN|GRU|LSTM|CRNN|BATCHNORM|NETWORK|'
                   r'XNOR|REGION|YOLO|ISEG|REORG|UPSAMPLE|LOGXENT|L2NORM|BLANK|LOCAL_AVGPOOL|SCALE_CHANNELS|SAM|'
                   r'CONV_LSTM|HISTORY|GAUSSIAN_YOLO|REORG_OLD|EMPTY|CONTRASTIVE|IMPLICIT)\b')
# Darknet's value types whose layout no longer crosses mn_base.h: box_label, matrix, and data or image
# declared (data d, image *out, (data *)p); a field or parameter named so (im.data, const char *image) is
# no declaration.
VALUES = re.compile(r'\b(?:box_label|matrix)\b|\b(?:data|image)\s+\**\s*[A-Za-z_]\w*\s*[;,)=\[(]|'
                    r'\b(?:data|image)\s*\*+\s*[A-Za-z_)]')


def blank(src):
    return TOKENS.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), src)


def layer_reads(code):
    """The pattern of a layer read in code (blanked), over the layers it declares."""
    pats = [LCALL.pattern]
    names = set(LDECL.findall(code))
    if names:
        name = "|".join(sorted(map(re.escape, names)))
        pats.append(r'(?:\b(?:%s)|\(\s*\*\s*(?:%s)\s*\))\s*->\s*\w+' % (name, name))
    values = set(LVALUE.findall(code))
    if values:   # a layer copied by value (layer last = *mn_net_last(net)): its fields after a dot
        pats.append(r'\b(?:%s)\s*\.\s*\w+' % "|".join(sorted(map(re.escape, values))))
    return re.compile("|".join(pats))


def reads(path):
    """[(line, kind, what)] of each network read, layer read and layer type named in the file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        code = blank(f.read())
    names = {"net"} | set(DECL.findall(code))
    name = "|".join(sorted(map(re.escape, names)))
    deref = r'(?:\b(?:%s)|\(\s*\*\s*(?:%s)\s*\))\s*->\s*\w+' % (name, name)
    values = set(VALUE.findall(code))
    if values:   # a network held by value (the fork's style): its fields after a dot
        deref += r'|\b(?:%s)\s*\.\s*\w+' % "|".join(sorted(map(re.escape, values)))
    deref = re.compile(deref)
    lderef = layer_reads(code)
    out = []
    for no, line in enumerate(code.split("\n"), 1):
        found = [("network", m) for m in deref.finditer(line)]
        found += [("network", m) for m in LAYERS.finditer(line)]
        found += [("layer", m) for m in lderef.finditer(line)]
        found += [("type", m) for m in TYPES.finditer(line)]
        found += [("value", m) for m in VALUES.finditer(line)]
        kept = []
        for kind, m in sorted(found, key=lambda f: (f[1].start(), -f[1].end())):
            if not any(k.start() <= m.start() < k.end() for _, k in kept):   # one read, named once
                kept.append((kind, m))
        for kind, m in kept:
            out.append((no, kind, re.sub(r'\s+', ' ' if kind == "value" else '', m.group(0)).strip()))
    return out


WHY = {
    "network": "reads the network ({}); outside base/ use mn_base.h's mn_net_*",
    "layer": "reads a layer ({}); outside base/ use mn_base.h's mn_layer_get",
    "type": "names Darknet's layer type ({}); outside base/ use mn_base.h's mn_layer_kind",
    "value": "names a Darknet value type ({}); outside base/ use mn_base.h's mn_batch and mn_image, mn_base_util.h's mn_truth",
}


def link_check(src, above, darknet, plugins):
    """FAIL lines, and how many objects were checked, of one build: each undefined
    symbol of an object outside base/ that Darknet's library defines."""
    layer_of = {}
    for l in above:
        for path in glob.glob(os.path.join(src, l, "*.c")) + glob.glob(os.path.join(src, l, "*.cu")):
            layer_of[os.path.splitext(os.path.basename(path))[0]] = l
    problems, checked = [], 0
    for p in [darknet] + plugins:
        if not os.path.exists(p):
            return [f"{p} does not exist (build it first)"], 0
    owner = {}
    for member, (defined, _) in sorted(members(darknet).items()):
        for sym in defined:
            owner.setdefault(sym, member)
    for p in plugins:
        whole = not p.endswith(".a")   # an object given alone (main.o) is outside base/ whatever its name
        for member, (_, used) in sorted(members(p).items()):
            stem = os.path.splitext(member)[0]
            if not whole and stem not in layer_of:
                continue   # base/ (layers.py names a member of no layer)
            checked += 1
            where = f"{p}({member})" if not whole else p
            what = f"{layer_of[stem]}/{stem}" if not whole else "outside base/"
            for sym in sorted(used):
                if sym in owner:
                    problems.append(f"{where} [{what}] calls Darknet's {sym} (defined in {darknet}({owner[sym]})); "
                                    f"outside base/ call mn_base.h's mn_base_* (docs/design.md)")
    return problems, checked


def main():
    args = sys.argv[1:]
    src = "plugin"
    if args[:1] == ["--src"] and len(args) > 1:
        src, args = args[1], args[2:]
    links = []
    while "--link" in args:
        i = len(args) - 1 - args[::-1].index("--link")
        if len(args) - i < 3:
            sys.exit(__doc__)
        links.insert(0, args[i + 1:])
        args = args[:i]
    if not args:
        sys.exit(__doc__)
    layers = args[0].split(",")
    if "base" not in layers:
        sys.exit(f"boundary.py: no base among the layers {args[0]}")
    above = [l for l in layers if l != "base"]   # the engine below base/ as well as the layers above
    files = []
    for l in above:
        for ext in ("c", "h", "cu"):
            files += sorted(glob.glob(os.path.join(src, l, "*." + ext)))
    files += args[1:]
    problems = 0
    for path in files:
        for no, kind, what in reads(path):
            print(f"FAIL boundary: {path}:{no}: {WHY[kind].format(what)} (docs/design.md)")
            problems += 1
    if not problems:
        print(f"ok   boundary: {len(files)} files outside base/ ({', '.join(above)}{', ' if args[1:] else ''}"
              f"{', '.join(args[1:])}) read no network or layer field and name no layer type nor Darknet value type: "
              f"they go through mn_base.h's mn_net_* and mn_layer_*")
    for darknet, *plugins in links:
        found, checked = link_check(src, above, darknet, plugins)
        for p in found:
            print("FAIL boundary: " + p)
        problems += len(found)
        if not found:
            print(f"ok   boundary: {checked} objects outside base/ of {' '.join(plugins)} call nothing "
                  f"{darknet} defines: they go through mn_base.h")
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
