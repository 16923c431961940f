"""Where the C++ core (the `torchperf` executable) is, and the environment it runs in.

An installed package carries it in torchperf/_bin/ (python/build_backend.py puts it there);
$TORCHPERF_CLI names another one (a build tree's, as the tests run); a source checkout's package
(the .venv `make` sets up puts python/ on its path) runs the checkout's build/torchperf. It runs
with this Python as its Python side (the workers, export, AOTInductor) and this environment's
torch libraries.
"""

import importlib.util
import os
import sys

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class MissingCoreError(RuntimeError):
    pass


def executable():
    named = os.environ.get("TORCHPERF_CLI")
    path = named or os.path.join(PACKAGE_DIR, "_bin", "torchperf")
    # A source checkout's package (python/torchperf, on the path through the .venv's
    # torchperf-source.pth): the core `make` built beside it.
    built = os.path.join(os.path.dirname(os.path.dirname(PACKAGE_DIR)), "build", "torchperf")
    if not named and not os.access(path, os.X_OK) and os.access(built, os.X_OK):
        path = built
    if not os.access(path, os.X_OK):
        where = f"$TORCHPERF_CLI ({named})" if named else path
        raise MissingCoreError(
            f"torchperf's C++ core is not at {where}: install the package with "
            "`pip install --no-build-isolation .` from torchperf's source folder (it builds the "
            "core against this environment's torch), run `make` in a source checkout, or set "
            "TORCHPERF_CLI to a built `torchperf`")
    return path


def environment(base=None):
    """The core's environment: this interpreter and package for its Python side, and this
    environment's torch libraries ahead of whatever the binary was linked against."""
    env = dict(os.environ if base is None else base)
    env.setdefault("TORCHPERF_PYTHON", sys.executable)
    env.setdefault("TORCHPERF_PYTHON_PATH", os.path.dirname(PACKAGE_DIR))
    spec = importlib.util.find_spec("torch")
    if spec and spec.submodule_search_locations:
        lib = os.path.join(list(spec.submodule_search_locations)[0], "lib")
        if os.path.isdir(lib):
            env["LD_LIBRARY_PATH"] = os.pathsep.join(
                p for p in (lib, env.get("LD_LIBRARY_PATH", "")) if p)
    return env
