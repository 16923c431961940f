"""`torchperf ...` and `python -m torchperf ...`: the C++ core's CLI, run with this environment's
Python and torch (see _binary.py). The process becomes the core: signals and exit codes are its.
"""

import os
import sys


def main(argv=None):
    from torchperf import _binary, _supported

    from importlib import metadata

    try:
        problem = _supported.problem_with(metadata.version("torch"))
    except metadata.PackageNotFoundError:
        problem = "torchperf needs torch in this environment (pip install torch==2.13.0)"
    if problem:
        sys.stderr.write(f"torchperf: {problem}\n")
        return 2
    try:
        path = _binary.executable()
    except _binary.MissingCoreError as e:
        sys.stderr.write(f"torchperf: {e}\n")
        return 2
    args = sys.argv[1:] if argv is None else list(argv)
    os.execve(path, [path, *args], _binary.environment())


if __name__ == "__main__":
    sys.exit(main())
