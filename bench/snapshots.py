#!/usr/bin/env python3
"""snapshots.py WATCH OUTDIR CMD...: run CMD and keep a copy of every
version of the file WATCH it writes (a trainer's backup weights, rewritten
every 100 iterations) as OUTDIR/<seconds since CMD started>.weights, so that
a stock trainer, which overwrites its backup, can be scored over time after
it ends. A version is copied once its size and time are unchanged over two
polls 0.2 s apart (stock Darknet writes in place, not through a rename); it
is named by the time it was first seen. Writes CMD's wall seconds to
OUTDIR/wall and exits with CMD's status."""
import os
import shutil
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: snapshots.py WATCH OUTDIR CMD...")
    watch, out, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd)
    copied, seen, seen_at = None, None, 0.0
    while True:
        done = proc.poll() is not None
        try:
            st = os.stat(watch)
            key = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            key = None
        if key is not None and key != copied:
            if key != seen:
                seen, seen_at = key, time.monotonic() - t0
            else:   # unchanged since the last poll: complete
                dst = os.path.join(out, "%08.1f.weights" % seen_at)
                shutil.copyfile(watch, dst)
                if os.path.getsize(dst) == key[1]:
                    copied = key
                else:   # rewritten while being copied: the next poll tries again
                    os.remove(dst)
        if done:
            break
        time.sleep(0.2)
    with open(os.path.join(out, "wall"), "w") as f:
        f.write("%.1f\n" % (time.monotonic() - t0))
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
