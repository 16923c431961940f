"""The engines' ways to run a converted model, as graph values: the one table of the engine
runtimes (ONNX Runtime, OpenVINO), which the Python worker applies (engines.py).

The C++ side holds the same table (include/torchperf/runtime/runtime.h, engine_graphs()) and
prints it in `torchperf __protocol`; tests/python/test_protocol.py fails when the two differ."""

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineGraph:
    graph: str
    engine: str  # the runtime that runs it: onnxruntime | openvino
    level: str | None  # ONNX Runtime's graph optimisation level: all | extended | basic
    parallel: bool  # ONNX Runtime's parallel execution mode (inter-op threads)
    arena: bool  # ONNX Runtime's CPU memory arena
    hint: str | None  # OpenVINO's performance hint: LATENCY | THROUGHPUT
    # OpenVINO: the IR reshaped to the inputs' shapes, compiled once for each shape met
    static_shapes: bool = False


GRAPHS = (
    EngineGraph("ort", "onnxruntime", "all", False, True, None),
    EngineGraph("ort-extended", "onnxruntime", "extended", False, True, None),
    EngineGraph("ort-basic", "onnxruntime", "basic", False, True, None),
    EngineGraph("ort-parallel", "onnxruntime", "all", True, True, None),
    EngineGraph("ort-no-arena", "onnxruntime", "all", False, False, None),
    EngineGraph("openvino", "openvino", None, False, False, "LATENCY"),
    EngineGraph("openvino-static", "openvino", None, False, False, "LATENCY", True),
    EngineGraph("openvino-throughput", "openvino", None, False, False, "THROUGHPUT"),
)

BY_GRAPH = {g.graph: g for g in GRAPHS}


def graph_of(configuration):
    """The engine graph a configuration runs ({knob: value}), its engine's first where the key
    leaves the graph at its baseline; None for a configuration of no engine."""
    graph = configuration.get("graph", "")
    if graph in BY_GRAPH:
        return graph
    return next((g.graph for g in GRAPHS if g.engine == configuration.get("runtime")), None)
