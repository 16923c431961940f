"""The engines (python/torchperf/engines.py): which are installed, a real model converted by
torch.onnx and OpenVINO, cached, and run on torch tensors as the worker and apply run it; and a
model no exporter converts, refused in one line."""

import os

import pytest
import torch

from torchperf import engines
from torchperf.error_kinds import ErrorKind


class TwoOutputs(torch.nn.Module):
    """Token ids of any length in, a per-token output and a pooled one out (a tuple)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embedding = torch.nn.Embedding(50, 16)
        self.linear = torch.nn.Linear(16, 8)

    def forward(self, ids, mask):
        x = self.linear(self.embedding(ids)) * mask.unsqueeze(-1)
        return x, x.sum(1)


class DataDependent(torch.nn.Module):
    """Python control flow on a tensor's value: torch.export cannot trace it."""

    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x


def samples(lengths, batch=4):
    torch.manual_seed(1)
    return [(torch.randint(0, 50, (batch, n)), torch.ones(batch, n)) for n in lengths]


def installed_or_skip(engine):
    if engine not in engines.installed():
        pytest.skip(f"{engine} is not installed in this Python")


def test_installed_names_each_engine_with_its_version_and_a_gpu_build_as_cuda():
    versions = {"onnxruntime-gpu": "1.32.0", "openvino": "2026.4.1"}
    assert engines.installed(versions.get) == {
        "onnxruntime": {"version": "1.32.0", "cuda": True},
        "openvino": {"version": "2026.4.1", "cuda": False}}
    assert engines.installed(lambda name: None) == {}


def test_the_cache_is_torchperfs_own_folder_as_the_core_finds_it():
    assert engines.cache_dir({"TORCHPERF_CACHE_DIR": "/c"}) == "/c/engines"
    assert engines.cache_dir({"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == "/x/torchperf/engines"
    assert engines.cache_dir({"HOME": "/h"}) == "/h/.cache/torchperf/engines"


def test_the_dimensions_that_vary_across_the_samples_and_the_batch_are_the_dynamic_axes():
    s = samples([7, 12])
    assert engines.varying_dims(s) == [{0, 1}, {0, 1}]
    assert engines.signature(s) == "int64[?,?];float32[?,?]"
    assert engines.signature(samples([7])) == "int64[?,7];float32[?,7]"


@pytest.mark.parametrize("graph", ["ort", "openvino", "openvino-static"])
def test_a_converted_model_runs_every_length_like_eager_and_is_read_back_from_the_cache(graph, tmp_path):
    """openvino-static compiles the IR again for each shape it meets: five here."""
    installed_or_skip("onnxruntime" if graph == "ort" else "openvino")
    model = TwoOutputs().eval()
    stream = samples([7, 12, 30])
    call, convert_s, cached = engines.prepared(graph, "builtin", "two-outputs@0", lambda: model,
                                               stream, 2, torch.device("cpu"), str(tmp_path))
    assert convert_s > 0 and not cached
    for inputs in stream + samples([3, 41], batch=2):
        got, want = call(*inputs), model(*inputs)
        assert isinstance(got, tuple) and len(got) == 2, "the model's own output structure"
        for g, w in zip(got, want):
            assert g.shape == w.shape
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
    again, convert_s, cached = engines.prepared(graph, "builtin", "two-outputs@0",
                                                lambda: pytest.fail("converted again"), stream, 2,
                                                torch.device("cpu"), str(tmp_path))
    assert cached and convert_s == 0
    torch.testing.assert_close(again(*stream[0])[1], model(*stream[0])[1], rtol=1e-4, atol=1e-5)


def test_a_model_torch_export_cannot_trace_fails_in_one_line_as_a_compile_error(tmp_path):
    installed_or_skip("onnxruntime")
    with pytest.raises(engines.EngineError) as e:
        engines.prepared("ort", "builtin", "data-dependent@0", lambda: DataDependent(),
                         [(torch.randn(2, 3),)], 1, torch.device("cpu"), str(tmp_path))
    assert e.value.kind == ErrorKind.COMPILE
    assert "ONNX Runtime: torch.export could not export the model" in str(e.value)
    assert "\n" not in str(e.value)
    assert not os.listdir(tmp_path), "nothing half-written is cached"


def test_a_graph_of_no_engine_is_refused_naming_the_engines_graphs(tmp_path):
    with pytest.raises(engines.EngineError) as e:
        engines.prepared("compile", "builtin", "x@0", lambda: None, [(torch.ones(1),)], 1,
                         torch.device("cpu"), str(tmp_path))
    assert e.value.kind == ErrorKind.CONFIG and "ort, ort-extended" in str(e.value)


class Int16MatMul(torch.nn.Module):
    """Exports and converts, but ONNX Runtime has no MatMul kernel for int16."""

    def forward(self, x):
        y = (x * 8).to(torch.int16)
        return (y @ y.T).float()


def test_an_operator_the_engine_has_no_kernel_for_fails_in_one_line_naming_the_engine(tmp_path):
    installed_or_skip("onnxruntime")
    with pytest.raises(engines.EngineError) as e:
        engines.prepared("ort", "builtin", "int16@0", lambda: Int16MatMul(),
                         [(torch.randn(4, 5),)], 1, torch.device("cpu"), str(tmp_path))
    assert e.value.kind == ErrorKind.COMPILE
    assert str(e.value).startswith("ONNX Runtime could not load the converted model")
    assert "MatMul" in str(e.value) and "\n" not in str(e.value)


class Eigenvalues(torch.nn.Module):
    """Exports, but torch.onnx has no function for linalg_eig."""

    def forward(self, x):
        return torch.linalg.eigvals(x).real


def test_a_conversion_that_fails_names_the_operator_without_terminal_colours(tmp_path):
    # Issue 84's probe: torch.onnx's generic advice, in colour codes, cut before the operator.
    installed_or_skip("onnxruntime")
    with pytest.raises(engines.EngineError) as e:
        engines.prepared("ort", "builtin", "eig@0", lambda: Eigenvalues(),
                         [(torch.randn(2, 4, 4),)], 1, torch.device("cpu"), str(tmp_path))
    message = str(e.value)
    assert e.value.kind == ErrorKind.COMPILE
    assert message.startswith("ONNX Runtime: converting the program failed (DispatchError: No "
                              "ONNX function found for <OpOverload(op='aten.linalg_eig'"), message
    assert "\x1b" not in message and "\n" not in message, message


def test_on_cuda_an_engine_without_a_cuda_provider_is_refused_before_it_loads_anything(tmp_path):
    # The CPU wheel of onnxruntime has no CUDAExecutionProvider (onnxruntime-gpu has); OpenVINO
    # runs on CPUs here. Refused before the file is opened: the file need not exist.
    installed_or_skip("onnxruntime")
    installed_or_skip("openvino")
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime has a CUDA provider")
    missing = str(tmp_path / "never-written.onnx")
    with pytest.raises(engines.EngineError) as e:
        engines.ort_call("ort", missing, 1, torch.device("cuda"))
    assert e.value.kind == ErrorKind.CONFIG and "has no CUDAExecutionProvider" in str(e.value)
    with pytest.raises(engines.EngineError) as e:
        engines.openvino_call("openvino", missing, 1, torch.device("cuda"))
    assert e.value.kind == ErrorKind.CONFIG and "OpenVINO runs on CPUs here" in str(e.value)


class SmallCnn(torch.nn.Module):
    """Convolutions carrying the work, then a classifier: what ONNX Runtime's static int8 is for."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10))

    def forward(self, x):
        return self.body(x)


def cosine(a, b):
    return torch.nn.functional.cosine_similarity(a.flatten(), b.flatten(), dim=0).item()


def test_onnx_runtimes_static_int8_is_calibrated_on_the_samples_close_to_fp32_and_cached(tmp_path):
    installed_or_skip("onnxruntime")
    model = SmallCnn().eval()
    torch.manual_seed(2)
    calibration = [(torch.rand(4, 3, 16, 16),), (torch.rand(4, 3, 16, 16),)]
    call, convert_s, cached = engines.prepared("ort", "builtin", "small-cnn@0", lambda: model,
                                               calibration, 1, torch.device("cpu"), str(tmp_path),
                                               precision="int8-static")
    assert convert_s > 0 and not cached
    quantized = [f for f in os.listdir(tmp_path) if f.endswith(".int8-static.onnx")]
    assert len(quantized) == 1, os.listdir(tmp_path)
    import onnx

    ops = {n.op_type for n in onnx.load(os.path.join(tmp_path, quantized[0])).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops, ops
    x = torch.rand(2, 3, 16, 16)  # another batch than calibrated
    with torch.no_grad():
        assert cosine(call(x), model(x)) > 0.99
    _, convert_s, cached = engines.prepared("ort", "builtin", "small-cnn@0",
                                            lambda: pytest.fail("converted again"), calibration, 1,
                                            torch.device("cpu"), str(tmp_path),
                                            precision="int8-static")
    assert cached and convert_s == 0
    # Other calibration data is another quantization: never a file calibrated on other samples.
    engines.prepared("ort", "builtin", "small-cnn@0", lambda: model, calibration[:1], 1,
                     torch.device("cpu"), str(tmp_path), precision="int8-static")
    assert len([f for f in os.listdir(tmp_path) if f.endswith(".int8-static.onnx")]) == 2


def test_onnx_runtimes_dynamic_int8_quantizes_the_linear_weights_of_a_token_model(tmp_path):
    installed_or_skip("onnxruntime")
    model = TwoOutputs().eval()
    stream = samples([7, 12])
    call, _, _ = engines.prepared("ort", "builtin", "two-outputs@0", lambda: model, stream, 1,
                                  torch.device("cpu"), str(tmp_path), precision="int8-dynamic")
    for inputs in stream:
        with torch.no_grad():
            assert cosine(call(*inputs)[0], model(*inputs)[0]) > 0.99


def test_openvino_runs_onnx_runtimes_qdq_file_in_int8_and_refuses_another_int8(tmp_path):
    installed_or_skip("onnxruntime")
    installed_or_skip("openvino")
    model = SmallCnn().eval()
    torch.manual_seed(2)
    calibration = [(torch.rand(4, 3, 16, 16),)]
    call, convert_s, cached = engines.prepared("openvino", "builtin", "small-cnn@0", lambda: model,
                                               calibration, 1, torch.device("cpu"), str(tmp_path),
                                               precision="int8-static")
    assert convert_s > 0 and not cached
    assert any(f.endswith(".int8-static.onnx") for f in os.listdir(tmp_path)), os.listdir(tmp_path)
    x = torch.rand(2, 3, 16, 16)
    with torch.no_grad():
        assert cosine(call(x), model(x)) > 0.99
    with pytest.raises(engines.EngineError) as e:
        engines.prepared("openvino", "builtin", "small-cnn@0", lambda: model, calibration, 1,
                         torch.device("cpu"), str(tmp_path), precision="int8-dynamic")
    assert e.value.kind == ErrorKind.CONFIG
    assert "OpenVINO's int8 here is int8-static" in str(e.value)


def test_an_unknown_precision_is_refused_by_name(tmp_path):
    installed_or_skip("onnxruntime")
    with pytest.raises(engines.EngineError) as e:
        engines.prepared("ort", "builtin", "small-cnn@0", lambda: SmallCnn().eval(),
                         [(torch.rand(2, 3, 8, 8),)], 1, torch.device("cpu"), str(tmp_path),
                         precision="int4")
    assert e.value.kind == ErrorKind.CONFIG and "precision=int4" in str(e.value)
