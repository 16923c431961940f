"""The package's build (PEP 517), for `pip install --no-build-isolation .`: the C++ core built
with CMake against the torch of the environment pip runs in, and a wheel holding it with the
Python side.

Build isolation is refused on purpose: an isolated build would fetch a second torch (several GB)
and build against it, not against the user's. So this backend asks for nothing (no setuptools,
no wheel, no scikit-build-core: a fresh venv with torch has what it needs) and writes the wheel
itself: a zip with the package, the executable in torchperf/_bin/ and the dist-info files.

$TORCHPERF_BUILD_DIR: a CMake build folder to build in (and reuse), for example the source
tree's own `build` when it was configured against a torch of the same version; by default
build/pip-torch<VERSION> under the source tree.
"""

import base64
import csv
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
import zipfile

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(SOURCE, "python", "torchperf")


class BuildError(RuntimeError):
    pass


def _supported():
    namespace = {}
    with open(os.path.join(PACKAGE, "_supported.py")) as f:
        exec(f.read(), namespace)
    return namespace


def _project():
    with open(os.path.join(SOURCE, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    # The version's one definition is CMake's project().
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
        project["version"] = re.search(r"project\(torchperf VERSION ([0-9.]+)", f.read()).group(1)
    return project


def _torch():
    """(version, cmake prefix) of the torch this build runs beside, or BuildError."""
    try:
        import torch
        import torch.utils
    except ImportError as e:
        raise BuildError(f"torchperf builds against the torch of the environment it is installed "
                         f"into, and {sys.executable} cannot import torch ({e}): pip install "
                         f"torch==2.13.0 first, then pip install --no-build-isolation .")
    problem = _supported()["problem_with"](torch.__version__)
    if problem:
        raise BuildError(problem)
    if os.path.realpath(os.path.dirname(torch.__file__)).startswith("/tmp/pip-build-env"):
        raise BuildError("pip isolated this build and brought a torch of its own: install with "
                         "`pip install --no-build-isolation .` so that torchperf builds against "
                         "yours")
    return torch.__version__, torch.utils.cmake_prefix_path


def _configured_torch(build_dir):
    """The torch version a configured build folder was configured against, or None."""
    cache = os.path.join(build_dir, "CMakeCache.txt")
    if not os.path.exists(cache):
        return None
    with open(cache) as f:
        found = re.search(r"^Torch_DIR:[A-Z]+=(.*)$", f.read(), re.M)
    if not found:
        return None
    version_py = os.path.normpath(os.path.join(found.group(1), "..", "..", "..", "version.py"))
    try:
        with open(version_py) as f:
            return re.search(r"^__version__ = '([^']+)'", f.read(), re.M).group(1)
    except (OSError, AttributeError):
        return "unknown"


def _say(message):
    """A line on stderr and, where there is one, on the terminal itself: pip hides a build
    backend's output unless -v, and the core's build takes minutes."""
    line = f"torchperf: {message}\n"
    sys.stderr.write(line)
    try:
        with open("/dev/tty", "w") as tty:
            tty.write(line)
    except OSError:  # no terminal (CI, a pipe): stderr, which pip -v shows, is all there is
        pass


def _run(command, log, progress=False):
    """Runs `command` with its output in `log`; with progress, says each tenth of the build
    (CMake's "[ NN%]" lines) as it passes."""
    started = time.monotonic()
    said = -10
    with open(log, "a") as out:
        out.write("$ " + " ".join(command) + "\n")
        out.flush()
        child = subprocess.Popen(command, cwd=SOURCE, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, errors="replace")
        for line in child.stdout:
            out.write(line)
            done = re.match(r"^\[\s*(\d+)%\]", line)
            if progress and done and int(done.group(1)) >= said + 10:
                said = int(done.group(1)) // 10 * 10
                _say(f"building the core: {said}% after {time.monotonic() - started:.0f} s "
                     f"(log: {log})")
        returncode = child.wait()
    if returncode != 0:
        with open(log) as f:
            tail = "".join(f.readlines()[-25:])
        raise BuildError(f"`{' '.join(command)}` failed (exit {returncode}); the last lines "
                         f"of {log}:\n{tail}\nDebian 12's build packages: scripts/install-deps.sh")


def build_core():
    """The path of the built `torchperf` executable."""
    version, prefix = _torch()
    build_dir = os.environ.get("TORCHPERF_BUILD_DIR") or os.path.join(
        SOURCE, "build", "pip-torch" + re.sub(r"[^0-9A-Za-z.]", "-", version))
    build_dir = os.path.abspath(build_dir)
    configured = _configured_torch(build_dir)
    if configured and configured != version:
        raise BuildError(f"the build folder {build_dir} was configured against torch {configured} "
                         f"and this environment has torch {version}: choose another "
                         "TORCHPERF_BUILD_DIR (or none)")
    os.makedirs(build_dir, exist_ok=True)
    log = os.path.join(build_dir, "pip-build.log")
    _say(f"building the C++ core against torch {version} in {build_dir}: about 10-15 minutes "
         f"on 2 cores, once (log: {log})")
    if not configured:
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        _run(["cmake", "-S", SOURCE, "-B", build_dir, *generator, "-DCMAKE_BUILD_TYPE=Release",
              "-DTORCHPERF_BUILD_TESTS=OFF", "-DTORCHPERF_BUILD_BENCH=OFF",
              f"-DTORCHPERF_VENV={sys.prefix}", f"-DTORCHPERF_PYTHON={sys.executable}"], log)
    _run(["cmake", "--build", build_dir, "--target", "torchperf_cli", "-j", str(os.cpu_count() or 1)],
         log, progress=True)
    return os.path.join(build_dir, "torchperf")


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, f"sha256={digest}", str(len(data))]


def _metadata(project):
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}",
             f"Summary: {project['description']}",
             f"Requires-Python: {project['requires-python']}"]
    lines += [f"Requires-Dist: {r}" for r in project.get("dependencies", [])]
    for extra, requirements in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f"Requires-Dist: {r}; extra == \"{extra}\"" for r in requirements]
    return "\n".join(lines) + "\n"


def _tag():
    return "py3-none-" + re.sub(r"[-.]", "_", sysconfig.get_platform())


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = _project()
    core = build_core()
    name = f"torchperf-{project['version']}"
    wheel = os.path.join(wheel_directory, f"{name}-{_tag()}.whl")
    files = []
    for entry in sorted(os.listdir(PACKAGE)):
        if entry.endswith(".py"):
            with open(os.path.join(PACKAGE, entry), "rb") as f:
                files.append((f"torchperf/{entry}", f.read(), 0o644))
    with open(core, "rb") as f:
        files.append(("torchperf/_bin/torchperf", f.read(), 0o755))
    scripts = project.get("scripts", {})
    dist_info = f"{name}.dist-info"
    files += [
        (f"{dist_info}/METADATA", _metadata(project).encode(), 0o644),
        (f"{dist_info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: torchperf build_backend\n"
                                f"Root-Is-Purelib: false\nTag: {_tag()}\n").encode(), 0o644),
        (f"{dist_info}/entry_points.txt",
         ("[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())).encode(),
         0o644),
    ]
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for path, data, mode in files:
            info = zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
            writer.writerow(_record_line(path, data))
        writer.writerow([f"{dist_info}/RECORD", "", ""])
        z.writestr(f"{dist_info}/RECORD", record.getvalue())
    return os.path.basename(wheel)


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_sdist(sdist_directory, config_settings=None):
    raise BuildError("torchperf is installed from its source folder (pip install "
                     "--no-build-isolation .); it has no source distribution")
