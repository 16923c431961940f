"""torch.compile's modes as graph values: the one table of the Python runtime and the Python
training step.

The C++ side holds the same table (include/torchperf/runtime/runtime.h, compile_modes()) and prints
it in `torchperf __protocol`; tests/python/test_protocol.py fails when the two differ. Each mode:
torch.compile's mode= (None: its default), whether it exists only on CUDA, whether it replays
CUDA graphs there, whether the training step offers it, whether it benchmarks kernel choices."""

from dataclasses import dataclass


@dataclass(frozen=True)
class CompileMode:
    graph: str
    mode: str | None
    cuda_only: bool
    cuda_graphs: bool
    trains: bool
    autotunes: bool
    dynamic: str | None = None  # torch.compile's dynamic=: None its default, "on" True, "off" False
    varying_only: bool = False  # offered only where a dimension varies (--dim)


MODES = (
    CompileMode("compile", None, False, False, True, False),
    CompileMode("compile-reduce-overhead", "reduce-overhead", True, True, True, False),
    CompileMode("compile-max-autotune", "max-autotune", False, True, True, True),
    CompileMode("compile-max-autotune-no-cudagraphs", "max-autotune-no-cudagraphs", True, False,
                False, True),
    CompileMode("compile-dynamic", None, False, False, False, False, "on", True),
    CompileMode("compile-static", None, False, False, False, False, "off", True),
)

# graph value -> torch.compile's mode: the inference runtime's, and the training step's.
INFERENCE = {m.graph: m.mode for m in MODES}
# graph value -> torch.compile's dynamic= (None: its default).
DYNAMIC = {m.graph: {"on": True, "off": False}.get(m.dynamic) for m in MODES}
TRAINING = {m.graph: m.mode for m in MODES if m.trains}
