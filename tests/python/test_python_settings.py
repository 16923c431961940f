"""python/torchperf/python_settings.py: how the python runtime applies a configuration, the one
definition the worker times and apply hands back. A real AOTInductor package, compiled here."""

import pytest
import torch

from torchperf import python_settings


class TwoOutputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 4)

    def forward(self, x):
        y = self.fc(x)
        return y, y.relu().sum(dim=1)


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    import torch._inductor

    torch.manual_seed(0)
    x = torch.randn(8, 16)
    program = torch.export.export(TwoOutputs().eval(), (x,))
    path = str(tmp_path_factory.mktemp("package") / "two_outputs.pt2")
    torch._inductor.aoti_compile_and_package(program, package_path=path)
    return torch._inductor.aoti_load_package(path), x


def test_a_package_is_called_through_its_loader_with_the_outputs_its_own_call_gives(package):
    runner, x = package
    fast = python_settings.package_call(runner, (x,))
    # Not the package's own __call__, which reads its call spec from JSON on every call.
    assert fast is not runner
    ours, theirs = fast(x), runner(x)
    assert isinstance(ours, tuple) and len(ours) == 2
    for a, b in zip(ours, theirs):
        assert torch.equal(a, b)
    other = torch.randn(8, 16)
    assert torch.equal(fast(other)[0], runner(other)[0]), "each call's own inputs, not the first"


def test_inputs_the_package_was_not_exported_for_keep_its_own_call(package):
    runner, x = package
    assert python_settings.package_call(runner, (x, x)) is runner
    assert python_settings.package_call(runner, (x, 3)) is runner
    plain = torch.nn.Linear(16, 4)
    assert python_settings.package_call(plain, (x,)) is plain, "not a package: as it is"
