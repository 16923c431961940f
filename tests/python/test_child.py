"""What every Python child shares (torchperf._child): a damaged torch.export archive is refused
with its real cause in one line, and the exit code is the error table's."""

import json
import os
import subprocess
import sys
import zipfile

import pytest
import torch

from torchperf.error_kinds import ErrorKind

PYTHON_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "python")


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    path = tmp_path_factory.mktemp("child") / "linear.pt2"
    torch.export.save(torch.export.export(torch.nn.Linear(4, 2).eval(), (torch.randn(2, 4),)), path)
    return path


def damaged(program, tmp_path, name, change):
    """A copy of the program with each member (name, bytes) passed through change (None: drop)."""
    out = tmp_path / name
    with zipfile.ZipFile(program) as src, zipfile.ZipFile(out, "w") as dst:
        for member in src.namelist():
            data = change(member, src.read(member))
            if data is not None:
                dst.writestr(member, data)
    return out


def compile_child(path, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR))
    return subprocess.run([sys.executable, "-m", "torchperf.aoti_compile", str(path),
                           str(tmp_path / "package.pt2")], capture_output=True, text=True, env=env)


def last_line(text):
    return text.strip().splitlines()[-1]


def test_a_program_without_its_weights_names_the_missing_file_not_the_warnings_above(program, tmp_path):
    def drop_weights(member, data):
        return None if "/data/weights/weight_" in member else data

    r = compile_child(damaged(program, tmp_path, "noweights.pt2", drop_weights), tmp_path)
    assert r.returncode == ErrorKind.MODEL.exit_code, r.stderr
    line = last_line(r.stderr)
    assert "failed locating file data/weights/weight_0: file not found" in line, line
    assert "warnings above" not in line and "internal miniz error" not in line, line


def test_a_program_of_a_newer_schema_says_which_version_it_has(program, tmp_path):
    def newer(member, data):
        if member.endswith("models/model.json"):
            record = json.loads(data)
            record["schema_version"] = {"major": 99, "minor": 0}
            return json.dumps(record).encode()
        return data

    r = compile_child(damaged(program, tmp_path, "newer.pt2", newer), tmp_path)
    assert r.returncode == ErrorKind.MODEL.exit_code, r.stderr
    line = last_line(r.stderr)
    assert "schema version" in line and "99" in line, line
    assert "warnings above" not in line, line


def test_a_program_calling_an_operator_this_process_lacks_names_the_operator_in_one_line(tmp_path):
    # Issue 84's probe: a torch.library op registered only where the program was exported failed
    # torchperf's own load with a SerializeError dump of the whole node.
    exporter = tmp_path / "export_with_op.py"
    exporter.write_text(
        "import sys, torch\n"
        "@torch.library.custom_op('probe84::twice', mutates_args=())\n"
        "def twice(x: torch.Tensor) -> torch.Tensor:\n"
        "    return x * 2\n"
        "@twice.register_fake\n"
        "def _(x):\n"
        "    return torch.empty_like(x)\n"
        "class M(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return twice(x)\n"
        "torch.export.save(torch.export.export(M(), (torch.randn(2, 4),)), sys.argv[1])\n")
    program = tmp_path / "with_op.pt2"
    subprocess.run([sys.executable, str(exporter), str(program)], check=True, capture_output=True)
    r = compile_child(program, tmp_path)
    assert r.returncode == ErrorKind.MODEL.exit_code, r.stderr
    line = last_line(r.stderr)
    assert "it calls the operator probe84::twice, which this process does not have" in line, line
    assert "Node(" not in line and len(line) < 600, line
