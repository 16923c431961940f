#!/usr/bin/env python3
"""Compiles every torchperf source (-fsyntax-only) against another LibTorch's headers, with the
flags of an existing build's compile_commands.json: shows that the code compiles against a torch
this machine cannot link (the GPU machine's CUDA build, say) without building it.

usage: check_headers_compat.py BUILD_DIR OTHER_TORCH_DIR [--all] [-jN]
  OTHER_TORCH_DIR holds include/ (a site-packages/torch folder or an unpacked LibTorch).
  Sources under tests/ and bench/ are skipped unless --all is given."""
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys


def main(argv):
    args = [a for a in argv if not a.startswith("-")]
    jobs = next((int(a[2:]) for a in argv if a.startswith("-j")), os.cpu_count() or 1)
    if len(args) != 2:
        sys.exit(__doc__)
    build, other = args
    other_include = os.path.join(os.path.abspath(other), "include")
    if not os.path.isdir(os.path.join(other_include, "torch")):
        sys.exit(f"check_headers_compat: {other_include} holds no torch headers")
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = json.load(f)
    todo = []
    for c in commands:
        source = c["file"]
        if "/generated/" in source or (("/tests/" in source or "/bench/" in source) and "--all" not in argv):
            continue
        words, out, skip = shlex.split(c["command"]), [], False
        for w in words:
            if skip:
                skip = False
                continue
            if w in ("-include", "-o"):  # the precompiled header was built from the other torch
                skip = True
                continue
            if w == "-Winvalid-pch":
                continue
            if "/torch/include" in w:
                w = other_include + w.split("/torch/include", 1)[1]
            out.append(w)
        todo.append((source, out + ["-fsyntax-only"], c["directory"]))

    def check(item):
        source, cmd, cwd = item
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        return source, r.returncode, r.stderr

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for source, rc, err in pool.map(check, todo):
            if rc != 0:
                failed += 1
                print(f"FAILED {source}\n{err}")
    print(f"{len(todo) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
