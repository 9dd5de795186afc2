#!/usr/bin/env python3
"""docs/config.md agrees with the binary's table of [distributed] keys: the
lines `./darknet_mn info` prints under "options:" (key=default | values |
what it sets, made from plugin/train/input/mn_options.c's one table) against
the page's two lists of the keys:

  - the block "The keys at a glance": every key once, `key=default` with the
    binary's default (empty where the binary's is empty);
  - the table "Every key": every key once; its default column begins with
    the binary's default ("empty" for an empty one; for a correction of a
    stale mean, "empty: <value> with double_buffering_local=0"), and its
    values column begins with the binary's values (its bounds, "or empty"
    where an empty value is taken, or the words); backticks and
    parentheses are left out before comparing.

Fails naming page:line, key and both sides; a key the binary lists and the
page lacks, or the other way round, is named too.

usage: config_doc.py INFO_OUTPUT [PAGE]   (PAGE: docs/config.md by default)
"""
import re
import sys

LINE = re.compile(r"^  (\w+)=(.*?) \| (.*?) \| (.*)$")
STALE = re.compile(r"\(empty: (\S+) with double_buffering_local=0")


def listing(path):
    """The binary's keys: name -> (default, values, what it sets), in order."""
    keys, inside = {}, False
    for line in open(path, encoding="utf-8", errors="replace"):
        if line.startswith("options:"):
            inside = True
        elif inside:
            m = LINE.match(line.rstrip("\n"))
            if not m:
                break
            keys[m.group(1)] = m.groups()[1:]
    return keys


def clean(cell):
    """A cell's text without backticks and parenthesized asides."""
    text = cell.replace("`", "")
    while True:
        shorter = re.sub(r"\s*\([^()]*\)", "", text)
        if shorter == text:
            return " ".join(text.split())
        text = shorter


def begins(text, start):
    """Whether text begins with start as whole words (1 is no prefix of 100)."""
    return re.match(re.escape(start) + r"(?![\w.])", text) is not None


def page(path):
    """The page's block (name -> (line, default)) and table rows (name -> (line, default, values))."""
    block, table, dups = {}, {}, []
    in_block = in_table = False
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if line == "[distributed]":
            in_block = True
        elif in_block and line.startswith("```"):
            in_block = False
        elif in_block:
            m = re.match(r"^(\w+)=(\S*)", line)
            if m:
                dups += [(n, m.group(1))] if m.group(1) in block else []
                block[m.group(1)] = (n, m.group(2))
        if line.startswith("| key | default | values |"):
            in_table = True
        elif in_table and not line.startswith("|"):
            in_table = False
        elif in_table and line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            name = cells[0].strip("`")
            dups += [(n, name)] if name in table else []
            table[name] = (n, cells[1] if len(cells) > 1 else "", cells[2] if len(cells) > 2 else "")
    return block, table, dups


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1])
        return 2
    doc = argv[2] if len(argv) > 2 else "docs/config.md"
    keys = listing(argv[1])
    if not keys:
        print("config_doc: FAIL no 'options:' listing in %s" % argv[1])
        return 1
    block, table, dups = page(doc)
    bad = ["%s:%d: %s is listed twice" % (doc, n, name) for n, name in dups]
    for name, (default, values, what) in keys.items():
        if name not in block:
            bad.append("%s: %s is missing from the block of the keys at a glance" % (doc, name))
        elif block[name][1] != default:
            bad.append("%s:%d: %s=%s in the block, the binary's default is '%s'" % (doc, block[name][0], name,
                                                                                 block[name][1], default))
        if name not in table:
            bad.append("%s: %s has no row in the table of every key" % (doc, name))
            continue
        n, want_default, want_values = table[name]
        said, stale = default or "empty", STALE.search(what)
        if stale:
            said = "empty: %s with double_buffering_local=0" % stale.group(1)
        if not begins(clean(want_default), said):
            bad.append("%s:%d: %s's default is '%s', the binary's '%s'" % (doc, n, name, clean(want_default), said))
        if not begins(clean(want_values), values):
            bad.append("%s:%d: %s's values are '%s', the binary's '%s'" % (doc, n, name, clean(want_values), values))
    for name, (n, _) in sorted(block.items(), key=lambda kv: kv[1][0]):
        if name not in keys:
            bad.append("%s:%d: %s in the block is no key of the binary" % (doc, n, name))
    for name, (n, _, _) in sorted(table.items(), key=lambda kv: kv[1][0]):
        if name not in keys:
            bad.append("%s:%d: %s in the table is no key of the binary" % (doc, n, name))
    for b in bad:
        print("FAIL " + b)
    if bad:
        print("config_doc: %d disagreements of %s with the binary's %d keys" % (len(bad), doc, len(keys)))
        return 1
    print("config_doc: the %d [distributed] keys of %s agree with the binary's (defaults, values)" % (len(keys), doc))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
