"""The package installed as a user installs it: a fresh venv with torch, `pip install
--no-build-isolation .`, then the CLI and a five-line script from that venv alone.

The core is built once per suite: $TORCHPERF_BUILD_DIR names the suite's own build folder, which
was configured against the same torch version (python/build_backend.py checks it), so the install
reuses it instead of compiling the core a second time.
"""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest
import torch

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FIVE_LINES = textwrap.dedent("""
    import torch, torchperf
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    result = torchperf.tune(model, torch.randn(8, 64), budget="3m", space="runtime=python;batch=8;threads=1;graph=eager;precision=fp32;grad=inference")
    print("WINNER", result.winner["key"], result.speedup)
    print("APPLIED", type(result.apply(model)).__name__)
    print("FROM", torchperf.__file__)
""")


def clean_environment():
    """The user's environment: nothing that points into the source tree or the build."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "TORCHPERF_CLI", "TORCHPERF_PYTHON", "TORCHPERF_PYTHON_PATH",
                        "VIRTUAL_ENV")}
    return env


def run(command, **kwargs):
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    if not os.environ.get("TORCHPERF_BUILD_DIR"):
        pytest.skip("TORCHPERF_BUILD_DIR (the suite's build folder) is not set")
    folder = tmp_path_factory.mktemp("fresh") / "venv"
    python3 = shutil.which("python3")
    rc, out = run([python3, "-m", "venv", str(folder)])
    assert rc == 0, out
    version = torch.__version__.split("+")[0]
    rc, out = run([str(folder / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                   f"torch=={version}"], env=clean_environment())
    assert rc == 0, out
    return folder


def test_an_isolated_build_is_refused_with_the_command_that_works(venv):
    rc, out = run([str(venv / "bin" / "pip"), "install", "--disable-pip-version-check", SOURCE],
                  env=clean_environment())
    assert rc != 0
    assert "cannot import torch" in out and "pip install --no-build-isolation ." in out


def test_pip_install_builds_beside_the_venvs_torch_and_puts_the_cli_on_path(venv):
    rc, out = run([str(venv / "bin" / "pip"), "install", "--disable-pip-version-check",
                   "--no-build-isolation", SOURCE], env=clean_environment())
    assert rc == 0, out
    core = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / \
        "site-packages" / "torchperf" / "_bin" / "torchperf"
    assert os.access(core, os.X_OK)
    rc, cli = run([str(venv / "bin" / "torchperf"), "--version"], env=clean_environment())
    assert rc == 0, cli
    rc, module = run([str(venv / "bin" / "python"), "-m", "torchperf", "--version"],
                     env=clean_environment(), cwd="/")
    assert rc == 0, module
    assert cli.strip() == module.strip() and cli.strip()


def test_a_five_line_script_tunes_a_module_from_the_installed_package(venv, tmp_path):
    (tmp_path / "five.py").write_text(FIVE_LINES)
    rc, out = run([str(venv / "bin" / "python"), "five.py"], env=clean_environment(),
                  cwd=tmp_path, timeout=300)
    assert rc == 0, out
    assert "WINNER runtime=python,threads=1,batch=8,grad=inference" in out
    assert "APPLIED " in out
    assert f"FROM {venv}/lib/" in out  # the installed package, not the source tree's
    log_dir = next((tmp_path / "torchperf-runs").iterdir())
    assert (log_dir / "results.jsonl").exists() and (log_dir / "report.html").exists()


TINYNET = textwrap.dedent("""
    import torch
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3)
            self.fc = torch.nn.Linear(8, 10)
        def forward(self, x):
            return self.fc(self.conv(x).mean((2, 3)))
""")


def test_train_from_python_runs_from_the_installed_package_with_what_it_declared(venv, tmp_path):
    # The venv had torch alone: the training worker's numpy came with the package's dependencies.
    (tmp_path / "tinynet.py").write_text(TINYNET)
    rc, out = run([str(venv / "bin" / "torchperf"), "train", "--from-python", "tinynet:Net",
                   "--image-size", "16", "--batch", "4", "--steps", "2", "--warmup", "1",
                   "--device", "cpu", "--json", "--quiet"],
                  env=clean_environment(), cwd=tmp_path, timeout=300)
    assert rc == 0, out
    assert '"model": "python:tinynet:Net"' in out
    rc, out = run([str(venv / "bin" / "python"), "-c", "import torchperf, numpy; "
                   "print(torchperf.__version__)"], env=clean_environment(), cwd=tmp_path)
    assert rc == 0 and out.strip(), out


def test_the_checkouts_venv_imports_the_source_trees_package_without_pythonpath():
    # Issue 63: a new user needed PYTHONPATH and TORCHPERF_CLI, found by reading the source.
    venv_python = os.path.join(SOURCE, ".venv", "bin", "python")
    if not os.access(venv_python, os.X_OK):
        pytest.skip("no .venv in this checkout (make venv makes it)")
    code, out = run([venv_python, "-c", "import torchperf; print(torchperf.__file__)"],
                    env=clean_environment(), cwd="/")
    assert code == 0, out
    assert out.strip() == os.path.join(SOURCE, "python", "torchperf", "__init__.py")


def test_the_checkouts_venv_has_a_torchperf_command_and_imports_torchao_quietly():
    """Issue 84: .venv/bin had Ray's `serve` and `tune` and no `torchperf`; every import of
    transformers printed torchao's failed loads of extensions this torch cannot load."""
    venv_python = os.path.join(SOURCE, ".venv", "bin", "python")
    if not os.access(venv_python, os.X_OK):
        pytest.skip("no .venv in this checkout (make venv makes it)")
    code, out = run([os.path.join(SOURCE, ".venv", "bin", "torchperf"), "knobs"],
                    env=clean_environment(), cwd="/")
    assert code == 0 and "threads" in out, out
    quiet = subprocess.run([venv_python, "-c", "import torchao"], capture_output=True, text=True,
                           env=clean_environment(), cwd="/", timeout=300)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
