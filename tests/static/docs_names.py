#!/usr/bin/env python3
"""What the user pages name exists, so that the pages cannot drift from the
scripts and the Makefiles (issue 53): fails, naming page:line, on

  - a `make ...` (in backticks or a code block) whose targets the Makefiles
    do not define;
  - a scripts/, tests/, bench/, tools/, cfg/ or data/ path that is not in the
    repository (paths the user makes, such as data/obj/, are no repository
    paths and are not looked at: only those under a folder that exists);
  - a row of docs/cluster.md's table of the batch script's variables whose
    variable scripts/darknet_mn.sbatch does not read as VAR=${VAR:-...}, or
    whose default differs; and a variable the script reads that the table
    lacks;
  - a line that states one of FACTS otherwise than the pages agree on
    (the data layout, the quick start's communicator, what ran on a GPU).

usage: docs_names.py [PAGE...]   (from the repository's root; default: the README and docs/)
"""
import glob
import os
import re
import sys

PAGES = ["README.md"] + sorted(glob.glob("docs/*.md"))
MAKEFILES = ["Makefile"] + sorted(glob.glob("tests/*.mk") + glob.glob("tests/*/*.mk") + glob.glob("tools/*.mk") +
                                  glob.glob("bench/*/*.mk"))
SCRIPT = "scripts/darknet_mn.sbatch"
TREES = ("scripts/", "tests/", "bench/", "tools/", "cfg/", "patches/")
# The pages a user follows, and facts they state in several places, each
# as (what the pages agree on, a pattern of a line that says otherwise,
# the pages it applies to (None: every page checked), the code blocks
# alone?).
USER_PAGES = ["README.md"] + ["docs/%s.md" % p for p in ("cluster", "config", "user-guide", "troubleshooting",
                                                         "evaluation", "alexeyab", "hankai", "dependencies")]
FACTS = [
    ("the data cfg of the quick start's layout is data/obj.data",
     r"(?<![\w/.-])obj\.data\b", USER_PAGES, False),
    ("the quick starts leave the communicator to auto",
     r"^communicator=(?!auto\b)", ["docs/cluster.md"], True),
    ("a GPU has run darknet-mn (the check on one H200, docs/gpu-check.md)",
     r"(?i)no GPU was available|(?:darknet-mn|the GPU build|the GPU paths?) (?:has|have) never (?:been )?run on a GPU",
     None, False),
]


def targets():
    found = set()
    for mk in MAKEFILES:
        for line in open(mk, encoding="utf-8"):
            m = re.match(r"^([A-Za-z0-9_.%/$()-][^:=#\t]*?)\s*::?(?!=)", line)
            if m:
                found.update(m.group(1).split())
    return found


def make_calls(text):
    """(offset, command) of each make command a page shows."""
    for m in re.finditer(r"`(make(?: [^`]*)?)`", text):
        yield m.start(), m.group(1)
    for m in re.finditer(r"(?m)^(make(?: .*)?)$", text):
        yield m.start(), m.group(1)


def check_make(page, text, known, problems):
    for at, cmd in make_calls(text):
        words = cmd.split("#")[0].split()[1:]
        for w in words:
            if "=" in w or w.startswith("-") or w.startswith("<") or w in ("...", "&&", "|", ";"):
                continue
            if not re.match(r"^[a-z][a-z0-9_.-]*$", w):
                break   # prose after the command
            if w not in known:
                problems.append(f"{page}:{text.count(chr(10), 0, at) + 1}: '{cmd}': no target '{w}' in the Makefiles")


def check_paths(page, text, problems):
    for m in re.finditer(r"(?<![\w./-])((?:%s)[\w./-]*[\w])" % "|".join(re.escape(t) for t in TREES), text):
        path = m.group(1)
        tail = text[m.end():m.end() + 1]
        # A glob (speed-*.txt) or a file's number (patch 0001) names the files it starts.
        if tail == "*" or os.path.exists(path) or glob.glob(glob.escape(path) + "*"):
            continue
        if path in ("cfg/list", "cfg/unsupported"):
            continue   # Darknet's readers of the cfg/list files; the fork's own folder
        problems.append(f"{page}:{text.count(chr(10), 0, m.start()) + 1}: {path} is not in the repository")


def check_facts(page, text, problems):
    code = False
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            code = not code
            continue
        for fact, pattern, pages, in_code in FACTS:
            if (pages is None or page in pages) and (code or not in_code) and re.search(pattern, line):
                problems.append(f"{page}:{n}: says otherwise than the pages agree ({fact}): {line.strip()[:100]}")


def check_script_table(problems):
    page = "docs/cluster.md"
    rows = {}
    for n, line in enumerate(open(page, encoding="utf-8"), 1):
        m = re.match(r"^\| `([A-Z_]+)` \| ([^|]*) \|", line)
        if m:
            rows[m.group(1)] = (n, m.group(2).strip())
    read = {}
    for line in open(SCRIPT, encoding="utf-8"):
        m = re.match(r"^([A-Z_]+)=\$\{\1:-([^}]*)\}", line)
        if m:
            read[m.group(1)] = m.group(2)
    if not rows:
        problems.append(f"{page}: no table of the batch script's variables found")
    for var, (n, doc) in rows.items():
        if var not in read:
            problems.append(f"{page}:{n}: `{var}` is not a variable {SCRIPT} reads")
            continue
        default = read[var]
        lit = doc.strip("`")
        if default.startswith("$"):
            continue   # computed (MIN_NODES: the job's nodes); the page says it in words
        if (default == "" and doc != "empty") or (default != "" and lit != default):
            problems.append(f"{page}:{n}: `{var}`'s default is '{doc}' here, '{default}' in {SCRIPT}")
    for var in read:
        if var not in rows:
            problems.append(f"{page}: {SCRIPT} reads {var}, which the table of its variables lacks")


def main(argv):
    pages = argv[1:] or PAGES
    problems = []
    known = targets()
    for page in pages:
        text = open(page, encoding="utf-8").read()
        check_make(page, text, known, problems)
        check_paths(page, text, problems)
        check_facts(page, text, problems)
    check_script_table(problems)
    for p in problems:
        print(p)
    if problems:
        print(f"docs_names: {len(problems)} problem(s) in {len(pages)} pages")
        return 1
    print(f"docs_names: every make target, repository path and batch-script variable of {len(pages)} pages exists, "
          f"and they agree on {len(FACTS)} facts")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
