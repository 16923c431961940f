"""The Python side's export (python/torchperf/export_source.py) and the named dimensions the
built-ins and the Python API export dynamic (issue 52): real torch.export calls on a small module."""

import json
import zipfile

import pytest
import torch

from token_models import TokenPool
from torchperf import api, export_source


def ranges_of(program):
    with zipfile.ZipFile(program) as z:
        name = next(n for n in z.namelist() if "models/" in n and n.endswith(".json"))
        doc = json.loads(z.read(name))
    graph = doc["graph_module"]["graph"]
    symbols = []
    for spec in doc["graph_module"]["signature"]["input_specs"]:
        if "user_input" in spec:
            sizes = graph["tensor_values"][spec["user_input"]["arg"]["as_tensor"]["name"]]["sizes"]
            symbols.append([s["as_expr"]["expr_str"].split("'")[1] if "as_expr" in s else None
                            for s in sizes])
    return symbols, doc["range_constraints"]


def test_a_named_dimension_is_one_dim_shared_by_every_input_that_has_it(tmp_path):
    inputs = (torch.randint(0, 100, (2, 17)), torch.ones(2, 17, dtype=torch.int64))
    program = str(tmp_path / "pool.pt2")
    export_source.export_program(TokenPool().eval(), inputs, program,
                                 named=[{1: ("S", 4, 300)}, {1: ("S", 4, 300)}])
    symbols, ranges = ranges_of(program)
    assert symbols[0] == symbols[1], "ids and mask share the batch and the length"
    batch, length = symbols[0]
    assert ranges[length] == {"min_val": 4, "max_val": 300}
    assert ranges[batch]["max_val"] == 65536
    # The program runs across the range, as the stream feeds it.
    module = torch.export.load(program).module()
    for n in (4, 63, 300):
        assert module(torch.randint(0, 100, (3, n)), torch.ones(3, n, dtype=torch.int64)).shape == (3, 3)


def test_the_length_a_dimension_is_exported_at_is_never_the_batchs_or_one():
    assert export_source.example_length(4, 512) == 17
    assert export_source.example_length(2, 9) == 9
    assert export_source.example_length(30, 40) == 30


def test_the_apis_dims_become_the_cores_named_spec_and_the_exports_ranges():
    ids = torch.randint(5, 100, (4, 16))
    mask = torch.ones(4, 16, dtype=torch.int64)
    spec, named = api.varying_dimensions((ids, mask), {"S": "lognormal:12:0.8:3..64"})
    assert spec == f"int64:S@{int(ids.min())}..{int(ids.max()) + 1};int64:S@1..2"
    assert named == [{1: ("S", 3, 64)}, {1: ("S", 3, 64)}]
    # Said where: only input 0 varies.
    spec, named = api.varying_dimensions((ids, torch.randn(4, 8)), {"S": ("8..32", {0: 1})})
    assert spec.endswith(";float32:8") and named == [{1: ("S", 8, 32)}, {}]


@pytest.mark.parametrize("inputs, dims, said", [
    ((torch.ones(2, 2, dtype=torch.int64),), {"S": "4..64"}, "give an example at least 3 long"),
    ((torch.ones(2, 8),), {"S": "4..64", "T": "2..9"}, "say where each lies"),
    ((torch.ones(2, 8),), {"S": "pow2"}, "expected MIN..MAX, lognormal"),
    # The core reads the distribution: refused by name before torch.export sees it (issue 63).
    ((torch.ones(2, 8),), {"S": "64..8"}, r"dims: --dim 'S=64..8': the range 64..8 is empty"),
    ((torch.ones(2, 8),), {"S": ("4..64", {3: 1})}, "input 3 dimension 1"),
    ((torch.ones(2, 8),), {"1S": "4..64"}, "expected a name"),
])
def test_each_bad_dims_value_is_refused_naming_it(inputs, dims, said):
    with pytest.raises(ValueError, match=said):
        api.varying_dimensions(inputs, dims)
