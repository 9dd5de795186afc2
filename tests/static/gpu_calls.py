#!/usr/bin/env python3
"""The plugin's CUDA, cuDNN and NCCL calls, read from the source (no GPU
needed): fails, naming file:line, on

  - a call whose status is dropped: a cuda*/cudnn*/nccl* call standing as a
    statement of its own (its value unused), or cast to (void) for any call
    but cudaGetLastError (which clears an error on purpose);
  - a call on a literal NULL/0 stream (or cudaStreamLegacy): the stream
    argument of the calls below, the last argument of the plugin's kernel
    wrappers mn_gpu_*, a kernel launch's <<<..., stream>>>;
  - cudaMemcpy, cudaMemset and a kernel launch without a stream: the legacy
    default stream, which AlexeyAB's non-blocking stream does not wait for;
  - a device-to-host cudaMemcpyAsync into a variable's address (&x: the
    stack or static storage, pageable): CUDA then copies synchronously, so
    the host blocks inside the call until the stream gets there (behind a
    NCCL collective whose peer died: for ever, past every deadline loop);
    copy into page-locked memory (cudaMallocHost) instead.

transport's mn_device_* functions (mn_device.h: CUDA's runtime for the
layers above it, each returning CUDA's status) are read as the calls they
wrap: a dropped status, a NULL stream, a copy MN_TO_HOST into &x.

usage: gpu_calls.py [DIR...]   (default: plugin)
"""
import os
import re
import sys

# Calls that return no status.
NO_STATUS = {"cudaGetErrorString", "cudaGetErrorName", "ncclGetErrorString", "ncclGetLastError",
             "cudnnGetErrorString", "cudnnGetVersion", "cudaGetLastError", "cudaPeekAtLastError"}
# Which argument (from 0) is the stream.
STREAM_ARG = {
    "cudaMemcpyAsync": 4, "cudaMemsetAsync": 3, "cudaMemcpy2DAsync": 6, "cudaEventRecord": 1,
    "cudaStreamWaitEvent": 0, "cudaStreamSynchronize": 0, "cudaStreamQuery": 0, "cudaLaunchKernel": 5,
    "cudaLaunchHostFunc": 0, "ncclAllReduce": 6, "ncclReduce": 7, "ncclBroadcast": 6, "ncclBcast": 5,
    "ncclReduceScatter": 6, "ncclAllGather": 5, "ncclSend": 5, "ncclRecv": 5,
    "cudnnSetStream": 1, "cublasSetStream": 1,
    "mn_device_copy": 4, "mn_device_zero": 2, "mn_device_wait": 0, "mn_device_event_record": 1,
}
# mn_device_* functions that return no status: the checks themselves.
DEVICE_CHECKS = {"mn_device_ok", "mn_device_must", "mn_device_clear"}
# A device-to-host copy: CUDA's, and mn_device_copy's.
TO_HOST = {"cudaMemcpyAsync": "cudaMemcpyDeviceToHost", "mn_device_copy": "MN_TO_HOST"}
# mn_gpu_* functions that are no kernel wrappers (GPU placement).
NOT_KERNELS = {"mn_gpu_select", "mn_gpu_placement", "mn_gpu_device", "mn_gpu_place"}
LEGACY = {"cudaMemcpy", "cudaMemset", "cudaMemcpy2D", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol"}
NULL_STREAM = re.compile(r"^\(?\s*(\(\s*(cudaStream_t|void\s*\*)\s*\)\s*)?(NULL|0|0L|nullptr|cudaStreamLegacy)\s*\)?$")
CALL = re.compile(r"\b((?:cuda|cudnn|nccl)[A-Z]\w*|mn_gpu_\w+|mn_device_\w+)\s*\(")
LAUNCH = re.compile(r"<<<(.*?)>>>", re.S)
ADDRESS_OF = re.compile(r"^&\s*\w+$")


def strip(src):
    """Comments and string/char literals blanked, newlines kept (lines stay put)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j])); i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)


def args_at(s, open_paren):
    """The top-level arguments of the call whose '(' is at open_paren, and its end."""
    depth, start, args = 0, open_paren + 1, []
    for j in range(open_paren, len(s)):
        ch = s[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append(s[start:j].strip())
                return args, j
        elif ch == "," and depth == 1:
            args.append(s[start:j].strip()); start = j + 1
    return args, len(s)


def statement_level(s, pos):
    """Whether the call at pos begins a statement (its value dropped), and
    whether it is cast to (void)."""
    before = s[:pos].rstrip()
    if before.endswith("(void)"):
        return True, True
    if not before or before[-1] in ";{}":
        return True, False
    if re.search(r"\b(else|do)$", before):
        return True, False
    if before.endswith(")"):   # if (...) call(...); or a cast
        depth, j = 0, len(before) - 1
        while j >= 0:
            depth += {")": 1, "(": -1}.get(before[j], 0)
            if depth == 0:
                break
            j -= 1
        head = before[:j].rstrip()
        if re.search(r"\b(if|while|for)$", head):
            return True, False
    return False, False


def check_file(path, problems):
    raw = open(path, encoding="utf-8", errors="replace").read()
    s = strip(raw)
    line = lambda p: s.count("\n", 0, p) + 1
    for m in CALL.finditer(s):
        name, at = m.group(1), m.start(1)
        if s[at - 1:at] in (".", ">"):   # a member, not the API
            continue
        # A declaration or definition (a type before the name) is no call.
        prev = s[:at].rstrip()
        if re.search(r"(\b(int|void|mn_status|cudaError_t|ncclResult_t|static|extern|char)\s*\**|\*)$", prev) and \
                not prev.endswith("(void)"):
            continue
        args, end = args_at(s, m.end() - 1)
        where = f"{path}:{line(at)}"
        if name in LEGACY:
            problems.append(f"{where}: {name} runs on the legacy default stream; use {name}Async on the base's stream")
        if name in DEVICE_CHECKS:
            continue
        if name in TO_HOST and len(args) > 3 and args[3] == TO_HOST[name] and ADDRESS_OF.match(args[0]):
            problems.append(f"{where}: {name} device-to-host into '{args[0]}' (pageable memory): the host "
                            "blocks in the call; copy into page-locked memory (cudaMallocHost)")
        kernel = name.startswith("mn_gpu_") and name not in NOT_KERNELS
        if name.startswith("mn_gpu_") and not kernel:
            continue
        k = STREAM_ARG.get(name, len(args) - 1 if kernel else None)
        if k is not None and k < len(args) and NULL_STREAM.match(args[k]):
            problems.append(f"{where}: {name} on a literal NULL stream ('{args[k]}'); use the base's stream (mn_base_stream)")
        if kernel:
            stmt, void = statement_level(s, at)
            if stmt:
                problems.append(f"{where}: {name}'s launch status is dropped")
            continue
        if name in NO_STATUS and name != "cudaGetLastError":
            continue
        stmt, void = statement_level(s, at)
        if name == "cudaGetLastError" and void:
            continue   # clearing a tolerated error, on purpose
        if stmt:
            problems.append(f"{where}: the status of {name} is not checked")
    for m in LAUNCH.finditer(s):
        cfg = [a.strip() for a in m.group(1).split(",")]
        where = f"{path}:{line(m.start())}"
        if len(cfg) < 4:
            problems.append(f"{where}: a kernel launch without a stream runs on the legacy default stream")
        elif NULL_STREAM.match(cfg[3]):
            problems.append(f"{where}: a kernel launch on a literal NULL stream ('{cfg[3]}')")


def main(argv):
    roots = argv[1:] or ["plugin"]
    problems, files = [], 0
    for root in roots:
        for d, _, names in sorted(os.walk(root)):
            for f in sorted(names):
                if f.endswith((".c", ".h", ".cu", ".cpp")):
                    files += 1
                    check_file(os.path.join(d, f), problems)
    for p in problems:
        print(p)
    if problems:
        print(f"gpu_calls: {len(problems)} problem(s) in {files} files")
        return 1
    print(f"gpu_calls: every CUDA/cuDNN/NCCL call of {files} files is checked and on a stream of its own")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
