"""The torch versions torchperf supports: one definition, read by the package's build
(python/build_backend.py), by CMake (cmake/FindTorchperfLibTorch.cmake reads MIN_TORCH) and at
import. Deliberately free of imports: the build reads it before anything is installed.
"""

MIN_TORCH = (2, 11)    # the oldest torch whose AOTInductor and torch.export APIs torchperf uses
BELOW_TORCH = (2, 14)  # the first torch not tested: its C++ API may have moved


def supported_range():
    return f">={MIN_TORCH[0]}.{MIN_TORCH[1]},<{BELOW_TORCH[0]}.{BELOW_TORCH[1]}"


def problem_with(version):
    """Why torch `version` (e.g. "2.13.0+cpu") is outside the range, or None when it is inside."""
    try:
        major, minor = (int(p) for p in version.split("+")[0].split(".")[:2])
    except ValueError:
        return f"torch {version!r}: not a version torchperf can read (expected MAJOR.MINOR.PATCH)"
    if MIN_TORCH <= (major, minor) < BELOW_TORCH:
        return None
    return (f"torchperf supports torch {supported_range()}; this environment has torch {version}: "
            f"install a torch in that range (pip install torch==2.13.0) and reinstall torchperf")
