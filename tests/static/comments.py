#!/usr/bin/env python3
"""Comments say what and why, once: checks the repository's comments.

usage: comments.py [--root ROOT] [--max WORDS] [--per-file] [DIR...]

  history  No comment line of the code, scripts, tests, Makefile or .ci/run
           carries a date or a stop or session number: git's log keeps
           history, docs/benchmarks.md keeps figures with their commands.
  density  The C, C++ and CUDA files under each DIR (default plugin) hold
           at most WORDS comment words per line of code (default 1.6, about
           what Open MPI's coll and NCCL's src write); --per-file lists
           every file, densest first.

ROOT (default: this repository) is read as git lists it, or whole where it
is no git checkout. Prints one ok line per check, or FAIL lines naming the files, and exits
non-zero on any failure.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
C_SOURCES = (".c", ".h", ".cu", ".cpp")
HASH_SOURCES = (".sh", ".py", ".mk", ".lua", ".tcl", ".in")
C_COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
HISTORY = re.compile(r"\b20[0-9]{2}-[01][0-9]\b|\b(January|February|March|April|May|June|July|August|"
                     r"September|October|November|December) 20[0-9]{2}\b|\b[Ss](top|ession) [0-9]+\b")
WORD = re.compile(r"[A-Za-z0-9_']+")


def tracked():
    """The repository's files as git has them, or every file where there is no git."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True, check=True).stdout
        if os.path.isdir(os.path.join(ROOT, ".git")) or out:
            return [f for f in out.splitlines() if os.path.isfile(os.path.join(ROOT, f))]
    except (subprocess.CalledProcessError, FileNotFoundError):
        pass
    files = []
    for d, subs, fs in os.walk(ROOT):
        subs[:] = [x for x in subs if not x.startswith(".") and x not in ("build", "third_party")]
        files += [os.path.relpath(os.path.join(d, f), ROOT) for f in fs]
    return files


def c_split(text):
    """(comment texts, the code with its comments removed) of a C-like file."""
    comments = []

    def cut(m):
        s = m.group(0)
        if s[0] in "\"'":
            return s
        comments.append(s)
        return "\n" * s.count("\n")
    return comments, C_COMMENT.sub(cut, text)


def comment_lines(path, text):
    """The comment lines of a file: C comments, or whole lines starting with #."""
    if path.endswith(C_SOURCES):
        for c in c_split(text)[0]:
            yield from c.splitlines()
    elif path.endswith(".py"):
        for doc in re.findall(r'"""(.*?)"""', text, re.S):
            yield from doc.splitlines()
        yield from (line for line in text.splitlines() if line.lstrip().startswith("#") and not line.startswith("#!"))
    elif path.endswith(HASH_SOURCES) or os.path.basename(path) in ("Makefile", "run") or text.startswith("#!"):
        for line in text.splitlines():
            if line.lstrip().startswith("#") and not line.startswith("#!"):
                yield line


def check_history(files):
    where = ("plugin", "tests", "scripts", "tools", "bench")
    bad = []
    for f in files:
        if not (f.split("/")[0] in where or f in ("Makefile", ".ci/run", "main.c")):
            continue
        if f.startswith("bench/results/") or f.endswith((".md", ".patch", ".cfg", ".data", ".names")):
            continue
        try:
            text = open(os.path.join(ROOT, f), errors="replace").read()
        except OSError:
            continue
        for line in comment_lines(f, text):
            if HISTORY.search(line):
                bad.append(f"{f}: {line.strip()[:100]}")
    for b in bad:
        print(f"FAIL history: {b}")
    if not bad:
        print("ok   history: no comment line of the code, scripts, tests, Makefile or .ci/run carries a date or a stop number")
    return not bad


def check_density(files, dirs, most, per_file):
    rows = []
    for f in files:
        if f.endswith(C_SOURCES) and any(f == d or f.startswith(d.rstrip("/") + "/") for d in dirs):
            comments, code = c_split(open(os.path.join(ROOT, f), errors="replace").read())
            words = sum(len(WORD.findall(c)) for c in comments)
            lines = sum(1 for line in code.splitlines() if line.strip())
            rows.append((words, lines, f))
    words, lines = sum(r[0] for r in rows), sum(r[1] for r in rows)
    if per_file:
        for w, n, f in sorted(rows, key=lambda r: -r[0] / max(r[1], 1)):
            print(f"     {w / max(n, 1):5.2f} {w:6d} words {n:5d} lines  {f}")
    density = words / max(lines, 1)
    what = f"{' '.join(dirs)}: {words} comment words on {lines} lines of code, {density:.2f} a line"
    if density <= most:
        print(f"ok   density: {what} (at most {most})")
        return True
    print(f"FAIL density: {what}, more than {most}; the most words: "
          + ", ".join(f"{f} {w / max(n, 1):.1f}" for w, n, f in sorted(rows, key=lambda r: -r[0])[:5]))
    return False


def main(argv):
    global ROOT
    most, per_file, dirs = 1.6, False, []
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--root" and args:
            ROOT = os.path.abspath(args.pop(0))
        elif a == "--max" and args:
            most = float(args.pop(0))
        elif a == "--per-file":
            per_file = True
        elif a.startswith("-"):
            print(__doc__, file=sys.stderr)
            return 2
        else:
            dirs.append(a)
    files = tracked()
    good = check_history(files)
    good = check_density(files, dirs or ["plugin"], most, per_file) and good
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
