"""The package's build backend (python/build_backend.py): the parts that decide before any build,
and the wheel it writes, without compiling the core (test_install.py builds and installs it)."""

import importlib.util
import os
import re
import zipfile

import pytest
import torch

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("build_backend",
                                              os.path.join(SOURCE, "python", "build_backend.py"))
backend = importlib.util.module_from_spec(spec)
spec.loader.exec_module(backend)


def configured_folder(root, version):
    """A build folder as CMake leaves it, configured against a torch of `version`."""
    torch_dir = root / "site-packages" / "torch"
    (torch_dir / "share" / "cmake" / "Torch").mkdir(parents=True)
    (torch_dir / "version.py").write_text(f"__version__ = '{version}'\n")
    build = root / "build"
    build.mkdir()
    (build / "CMakeCache.txt").write_text(
        f"Torch_DIR:PATH={torch_dir / 'share' / 'cmake' / 'Torch'}\n")
    return build


def test_a_build_folder_is_read_for_the_torch_it_was_configured_against(tmp_path):
    assert backend._configured_torch(str(configured_folder(tmp_path, "2.12.1+cpu"))) == "2.12.1+cpu"
    assert backend._configured_torch(str(tmp_path / "nothing")) is None


def test_a_build_folder_of_another_torch_is_refused_naming_both(tmp_path, monkeypatch):
    build = configured_folder(tmp_path, "2.12.1+cpu")
    monkeypatch.setenv("TORCHPERF_BUILD_DIR", str(build))
    with pytest.raises(backend.BuildError, match=rf"configured against torch 2.12.1\+cpu and this "
                                                 rf"environment has torch {re.escape(torch.__version__)}"):
        backend.build_core()


def test_the_version_comes_from_cmake_and_the_rest_from_pyproject():
    project = backend._project()
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
        assert f"project(torchperf VERSION {project['version']}" in f.read()
    assert project["name"] == "torchperf"
    assert project["scripts"]["torchperf"] == "torchperf.__main__:main"


def test_the_wheel_holds_the_package_the_core_and_a_record_of_each(tmp_path, monkeypatch):
    core = tmp_path / "torchperf"
    core.write_bytes(b"\x7fELF not really")
    monkeypatch.setattr(backend, "build_core", lambda: str(core))
    name = backend.build_wheel(str(tmp_path))
    with zipfile.ZipFile(tmp_path / name) as wheel:
        names = wheel.namelist()
        assert "torchperf/_bin/torchperf" in names and "torchperf/api.py" in names
        assert (wheel.getinfo("torchperf/_bin/torchperf").external_attr >> 16) & 0o111
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/RECORD"))
        record = wheel.read(f"{dist_info}/RECORD").decode()
        assert all(n in record for n in names)
        assert "torchperf = torchperf.__main__:main" in wheel.read(f"{dist_info}/entry_points.txt").decode()
        metadata = wheel.read(f"{dist_info}/METADATA").decode()
        assert "Requires-Dist: tqdm" in metadata
        assert "Requires-Dist: numpy>=1.24\n" in metadata  # what the Python side imports


def test_the_cores_build_says_each_tenth_of_its_progress_and_keeps_the_whole_log(tmp_path, capfd):
    log = str(tmp_path / "pip-build.log")
    script = "; ".join(f"print('[{p:3d}%] Building CXX object x{p}.o')" for p in (1, 5, 12, 40, 100))
    backend._run(["python3", "-c", script], log, progress=True)
    said = [line for line in capfd.readouterr().err.splitlines() if "building the core" in line]
    assert [re.search(r"core: (\d+)%", line).group(1) for line in said] == ["0", "10", "40", "100"]
    assert all(f"(log: {log})" in line for line in said)
    assert sum(line.startswith("[") for line in open(log)) == 5


def test_a_failed_build_step_names_its_command_and_shows_the_logs_tail(tmp_path):
    log = str(tmp_path / "pip-build.log")
    with pytest.raises(backend.BuildError, match=r"(?s)failed \(exit 3\); the last lines of .*\nbroken\n"):
        backend._run(["sh", "-c", "echo broken; exit 3"], log)
