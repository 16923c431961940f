"""The Python side's runtimes, one row each: which configurations each runs, and what kind of
thing it runs (issue 84: the worker, apply and the engines each branched on runtime and graph
names). The modules that prepare a runtime's point (worker), hand its winner back (apply) or
convert for it (engines) dispatch on a row's kind, which this table alone decides from a
configuration; the C++ side's src/runtime/ is the same seam, and its names are these."""

from dataclasses import dataclass

from torchperf import engine_graphs

# What a runtime runs: the module itself, eager or under torch.compile (TORCH); an AOTInductor
# package through Python's loader (PACKAGE); the program converted for an engine (ENGINE); a
# TorchScript graph in C++, which only the CLI runs (SCRIPT).
TORCH, PACKAGE, ENGINE, SCRIPT = "torch", "package", "engine", "script"


@dataclass(frozen=True)
class PythonRuntime:
    name: str  # the C++ registry's name (python-eager, aoti, onnxruntime, ...)
    label: str
    kind: str
    # torch.compile compiles its graph in this process (its cache artifacts are worth keeping).
    compiles_here: bool = False
    # Whether it runs on a CUDA device: always (PyTorch's own), only where its installed build
    # has CUDA providers ("build": onnxruntime-gpu), or never (OpenVINO).
    on_cuda: str = "always"

    def runs_on(self, cuda, installed=None):
        """Whether it runs on the device (cuda: a CUDA device), its installed build's facts
        (engines.installed()'s entry) where it is an engine."""
        if not cuda or self.on_cuda == "always":
            return True
        return self.on_cuda == "build" and bool((installed or {}).get("cuda"))


EAGER = PythonRuntime("python-eager", "Python eager", TORCH)
COMPILE = PythonRuntime("python-compile", "Python torch.compile", TORCH, compiles_here=True)
PYTHON_AOTI = PythonRuntime("python-aoti", "Python AOTInductor", PACKAGE)
AOTI = PythonRuntime("aoti", "C++ AOTInductor", PACKAGE)
TORCHSCRIPT = PythonRuntime("torchscript", "C++ TorchScript", SCRIPT)
ENGINES = {name: PythonRuntime(name, label, ENGINE, on_cuda=cuda)
           for name, label, cuda in (("onnxruntime", "ONNX Runtime", "build"),
                                     ("openvino", "OpenVINO", "never"))}
RUNTIMES = (EAGER, COMPILE, PYTHON_AOTI, AOTI, TORCHSCRIPT, *ENGINES.values())


def of_configuration(configuration):
    """The runtime a configuration ({knob: value}, as tune's key parses) runs in: an engine's
    graph, an AOTInductor package (graph=aoti*, in Python's loader or C++'s), torch.compile or
    eager in Python, else TorchScript in C++."""
    engine = engine_graphs.graph_of(configuration)
    if engine:
        return ENGINES[engine_graphs.BY_GRAPH[engine].engine]
    graph = configuration.get("graph", "eager")
    python = configuration.get("runtime", "cpp") == "python"
    if graph.startswith("aoti"):
        return PYTHON_AOTI if python else AOTI
    if python:
        return COMPILE if graph.startswith("compile") else EAGER
    return TORCHSCRIPT


def of_side(settings):
    """The runtime a worker's python-side request opens: its graph, and the model it loads (a
    package is AOTInductor's whatever its graph says)."""
    if settings["graph"] in engine_graphs.BY_GRAPH:
        return ENGINES[engine_graphs.BY_GRAPH[settings["graph"]].engine]
    if settings["model_kind"] == "package":
        return PYTHON_AOTI
    return EAGER if settings["graph"] == "eager" else COMPILE
