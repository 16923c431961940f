"""torchperf from Python: measure and tune a model, and get it back running its winner.

    import torchperf
    result = torchperf.tune(model, example_inputs, budget="10m")
    fast = result.apply(model)

Points are measured in worker processes by the C++ core (the `torchperf` CLI this package
carries), never in the caller's process; the model reaches them as a torch.export program.
docs/python-api.md has the whole API.

The package's other modules are torchperf's Python side, which the C++ core runs as child
processes (worker, export_source, aoti_compile, eager_reference; see _child.py).
"""

from importlib import metadata as _metadata

from torchperf import _supported

try:
    _problem = _supported.problem_with(_metadata.version("torch"))
except _metadata.PackageNotFoundError:
    _problem = "torchperf needs torch in this environment (pip install torch==2.13.0)"
if _problem:
    raise ImportError(_problem)

try:
    __version__ = _metadata.version("torchperf")
except _metadata.PackageNotFoundError:  # run from the source tree (PYTHONPATH=python)
    import re as _re
    from pathlib import Path as _Path

    _cmake = _Path(__file__).resolve().parents[2] / "CMakeLists.txt"
    _found = _re.search(r"project\(torchperf VERSION ([0-9.]+)",
                        _cmake.read_text()) if _cmake.exists() else None
    __version__ = _found.group(1) if _found else "unknown"

_API = {"bench": "api", "tune": "api", "load": "result", "TuneResult": "result",
        "BenchResult": "api", "TorchperfError": "errors", "tune_generation": "generation_api",
        "GenerationResult": "generation_api", "load_generation": "generation_api"}
__all__ = sorted(_API)


def __getattr__(name):
    # The API imports torch; the Python side's child modules (the workers) do not need it loaded
    # through the package, and `python -m torchperf` starts the CLI without it.
    if name in _API:
        import importlib

        return getattr(importlib.import_module(f"torchperf.{_API[name]}"), name)
    raise AttributeError(f"module 'torchperf' has no attribute {name!r}")
