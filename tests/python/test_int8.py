"""runtime=python's int8 (python/torchperf/int8.py): PT2E static int8 of a real small CNN whose
ReLU is called twice (as ResNet's is), calibrated and close to fp32; torchao's weight configs on a
module's Linear layers; and what cannot be quantized, refused in one line with its kind."""

import pytest
import torch

from torchperf import int8
from torchperf.error_kinds import ErrorKind

torchao = pytest.importorskip("torchao", reason="torchao is not installed in this Python")


class SharedReLU(torch.nn.Module):
    """Two convolutions, each followed by the same ReLU module, and a residual add: the pattern
    X86InductorQuantizer refused before its calls were split."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.relu = torch.nn.ReLU()
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = self.relu(self.conv1(x))
        y = self.relu(self.conv2(y) + y)
        return self.head(y.mean((2, 3)))


class DataDependent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 3, 1)

    def forward(self, x):
        return self.conv(x) if x.sum() > 0 else x


def batches(count=3):
    torch.manual_seed(1)
    return [(torch.randn(4, 3, 16, 16),) for _ in range(count)]


def relu_partitions(graph_module):
    from torch.fx.passes.utils.source_matcher_utils import get_source_partitions

    return get_source_partitions(graph_module.graph, [torch.nn.ReLU]).get(torch.nn.ReLU, [])


def test_a_module_called_twice_becomes_one_partition_per_call():
    graph = torch.export.export(SharedReLU().eval(), batches()[0]).module()
    assert [len(p.output_nodes) for p in relu_partitions(graph)] == [2]
    assert int8.split_shared_module_calls(graph) == 2
    assert [len(p.output_nodes) for p in relu_partitions(graph)] == [1, 1]


def test_static_int8_quantizes_the_convolutions_and_stays_close_to_fp32():
    model = SharedReLU().eval()
    calibration = batches()
    with torch.no_grad():
        reference = model(*calibration[0])
    quantized, seconds = int8.quantized(model, "int8-static", calibration, torch.device("cpu"))
    targets = [str(n.target) for n in quantized.graph.nodes if n.op == "call_function"]
    assert any("quantize_per_tensor" in t for t in targets)
    assert seconds > 0
    with torch.no_grad():
        out = quantized(*calibration[0])
    cosine = torch.nn.functional.cosine_similarity(out.flatten(), reference.flatten(), dim=0)
    assert cosine > 0.99


def test_static_int8_runs_int8_kernels_through_inductor_with_freezing_at_any_batch():
    import torch._inductor.config as inductor_config
    from torch._inductor.utils import run_and_get_code

    quantized, _ = int8.quantized(SharedReLU().eval(), "int8-static", batches(),
                                  torch.device("cpu"))
    was = inductor_config.freezing
    inductor_config.freezing = True
    try:
        with torch.inference_mode():
            compiled = torch.compile(quantized)
            out, code = run_and_get_code(compiled, torch.randn(3, 3, 16, 16))
    finally:
        inductor_config.freezing = was
    assert out.shape == (3, 4) and torch.isfinite(out).all()
    # oneDNN's quantized convolution, not fp32 convolutions between quantize/dequantize pairs.
    assert "qconv" in "".join(code), "".join(code)[:2000]


@pytest.mark.parametrize("precision", ["int8-weight-only", "int8-dynamic-activation"])
def test_torchaos_configs_replace_the_linear_weights_of_a_module(precision):
    model = SharedReLU().eval()
    with torch.no_grad():
        reference = model(*batches(1)[0])
    quantized, _ = int8.quantized(model, precision, batches(), torch.device("cpu"))
    assert type(quantized.head.weight.data).__name__ != "Tensor", type(quantized.head.weight)
    with torch.no_grad():
        out = quantized(*batches(1)[0])
    cosine = torch.nn.functional.cosine_similarity(out.flatten(), reference.flatten(), dim=0)
    assert out.shape == (4, 4) and cosine > 0.99


def test_torchaos_configs_refuse_a_program_without_linear_modules_by_name():
    program = torch.export.export(SharedReLU().eval(), batches()[0]).module()
    with pytest.raises(int8.Int8Error) as e:
        int8.quantized(program, "int8-weight-only", batches(), torch.device("cpu"))
    assert e.value.kind == ErrorKind.CONFIG
    assert "nn.Linear" in str(e.value) and "\n" not in str(e.value)


def test_a_model_export_cannot_trace_is_a_compile_error_in_one_line():
    with pytest.raises(int8.Int8Error) as e:
        int8.quantized(DataDependent().eval(), "int8-static", batches(), torch.device("cpu"))
    assert e.value.kind == ErrorKind.COMPILE
    assert str(e.value).startswith("precision=int8-static: torch.export could not export")
    assert "\n" not in str(e.value)


def test_static_int8_on_a_gpu_and_an_unknown_value_are_refused_before_any_work():
    with pytest.raises(int8.Int8Error, match="x86 CPUs only") as e:
        int8.quantized(SharedReLU(), "int8-static", batches(), torch.device("cuda"))
    assert e.value.kind == ErrorKind.CONFIG
    with pytest.raises(int8.Int8Error, match="expected one of int8-static") as e:
        int8.quantized(SharedReLU(), "int4", batches(), torch.device("cpu"))


def test_calibration_samples_are_cut_into_the_points_batches_every_sample_used():
    samples = (torch.arange(10).reshape(10, 1), torch.zeros(10, 3))
    batches = int8.calibration_batches(samples, 4)
    assert [b[0].flatten().tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]
    assert all(len(b) == 2 and b[1].shape == (4, 3) for b in batches)
    few = int8.calibration_batches(samples, 16)  # fewer samples than a batch: filled up, one batch
    assert len(few) == 1 and few[0][0].flatten().tolist() == list(range(10)) + list(range(6))


def test_static_int8_calibrated_on_samples_of_one_length_keeps_the_points_length_dynamic():
    # The calibration file's samples share one length; the point's stream varies: the export
    # follows the point's shapes, so the quantized model takes every length of its stream.
    model = torch.nn.Sequential(torch.nn.Conv1d(4, 8, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv1d(8, 8, 3, padding=1)).eval()
    stream = [(torch.randn(2, 4, 16),), (torch.randn(2, 4, 24),)]
    calibration = int8.calibration_batches((torch.randn(6, 4, 20),), 2)
    quantized, _ = int8.quantized(model, "int8-static", calibration, torch.device("cpu"),
                                  shapes=stream)
    with torch.no_grad():
        for x in (torch.randn(2, 4, 16), torch.randn(2, 4, 40)):
            assert quantized(x).shape == (2, 8, x.shape[2])

