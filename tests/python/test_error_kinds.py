"""The Python side's error table against the C++ side's (`torchperf __protocol`), and the Python
children exiting with it."""

import json
import os
import subprocess
import sys

import pytest

from torchperf.error_kinds import ErrorKind
from torchperf.errors import TorchperfError

PYTHON_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "python")


def cpp_table():
    binary = os.environ.get("TORCHPERF")
    if not binary:
        pytest.skip("TORCHPERF (the torchperf binary) is not set: run through ctest")
    schema = json.loads(subprocess.run([binary, "__protocol"], check=True, capture_output=True,
                                       text=True).stdout)
    return schema["error_kinds"]


def test_the_python_table_is_the_cpp_table_name_for_name_and_code_for_code():
    assert {kind.wire_name: kind.exit_code for kind in ErrorKind} == cpp_table()


def test_each_name_is_used_once_and_each_code_reads_back_as_a_kind_with_it():
    names = [kind.wire_name for kind in ErrorKind]
    assert len(names) == len(set(names))
    for kind in ErrorKind:
        assert ErrorKind.named(kind.wire_name) is kind
        assert ErrorKind.of_exit_code(kind.exit_code).exit_code == kind.exit_code
    assert ErrorKind.of_exit_code(77) is ErrorKind.RUNTIME


def test_the_api_error_says_its_kind_from_its_exit_code():
    assert TorchperfError("x", exit_code=6).kind is ErrorKind.RESULTS
    assert TorchperfError("x", exit_code=ErrorKind.COMPILE).exit_code == 10


def test_a_python_child_given_a_file_that_is_no_program_exits_with_the_model_kinds_code(tmp_path):
    bogus = tmp_path / "not-a-program.pt2"
    bogus.write_text("hello")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR))
    r = subprocess.run([sys.executable, "-m", "torchperf.aoti_compile", str(bogus),
                        str(tmp_path / "out.pt2")], capture_output=True, text=True, env=env)
    assert r.returncode == ErrorKind.MODEL.exit_code, r.stderr
    assert "not a torch.export archive" in r.stderr
