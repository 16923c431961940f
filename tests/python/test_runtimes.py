"""The Python side's runtime table (python/torchperf/runtimes.py): the one place a configuration's
runtime is decided, which the worker, apply and the engines dispatch on."""

from torchperf import runtimes
from torchperf.records import parse_configuration


def kind(key):
    return runtimes.of_configuration(parse_configuration(key))


def test_each_configuration_names_its_runtime_and_the_kind_it_runs():
    assert kind("runtime=python,graph=eager") is runtimes.EAGER
    assert kind("runtime=python,graph=compile-max-autotune") is runtimes.COMPILE
    assert runtimes.COMPILE.compiles_here and not runtimes.EAGER.compiles_here
    assert kind("runtime=python,graph=aoti") is runtimes.PYTHON_AOTI
    assert kind("runtime=cpp,graph=aoti-max-autotune") is runtimes.AOTI
    assert kind("runtime=cpp,graph=frozen-opt").kind == runtimes.SCRIPT
    assert kind("threads=2") is runtimes.TORCHSCRIPT  # a key without runtime is C++'s
    assert kind("runtime=openvino,graph=openvino-static") is runtimes.ENGINES["openvino"]
    # An engine's family with its graph left at the baseline is still the engine's.
    assert kind("runtime=onnxruntime,threads=1").kind == runtimes.ENGINE


def test_a_worker_side_is_an_engine_by_its_graph_and_a_package_by_its_model():
    side = {"graph": "ort-basic", "model_kind": "program"}
    assert runtimes.of_side(side) is runtimes.ENGINES["onnxruntime"]
    assert runtimes.of_side({"graph": "aoti", "model_kind": "package"}) is runtimes.PYTHON_AOTI
    assert runtimes.of_side({"graph": "eager", "model_kind": "module"}) is runtimes.EAGER
    assert runtimes.of_side({"graph": "compile", "model_kind": "program"}) is runtimes.COMPILE


def test_on_cuda_openvino_never_runs_and_onnx_runtime_only_as_its_cuda_build():
    assert runtimes.ENGINES["openvino"].runs_on(False)
    assert not runtimes.ENGINES["openvino"].runs_on(True, {"cuda": True})
    assert not runtimes.ENGINES["onnxruntime"].runs_on(True, {"cuda": False})
    assert runtimes.ENGINES["onnxruntime"].runs_on(True, {"cuda": True})
    assert runtimes.EAGER.runs_on(True)
