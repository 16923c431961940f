"""What a model is fed, as the Python side receives it from the core (python/torchperf/feed.py):
the spec parsed once, in C++ (`torchperf __feed`), its inputs made and its named dimensions
exported dynamic from the typed form; forward's order for named inputs."""

import pytest
import torch

from token_models import TokenPool
from torchperf import feed


def test_a_spec_the_core_parses_names_its_varying_dimensions_with_their_ranges():
    fed = feed.resolve("int64:S@0..1000;int64:S@1..2;16", ["S=lognormal:40:0.9:4..512"])
    assert feed.named_dimensions(fed) == [{1: ("S", 4, 512)}, {1: ("S", 4, 512)}, {}]
    ids, mask, other = feed.example_inputs(fed, sizes={"S": 17})
    assert ids.shape == mask.shape == (2, 17) and int(mask.min()) == 1 and int(ids.max()) < 1000
    assert other.shape == (2, 16) and other.dtype == torch.float32


def test_each_dtype_the_core_names_is_made_in_that_dtype():
    fed = feed.resolve("float16:4;bfloat16:4;int32:4@0..7;uint8:4@0..255;bool:4;float64:2x2")
    made = feed.example_inputs(fed, batch=3)
    assert [t.dtype for t in made] == [torch.float16, torch.bfloat16, torch.int32, torch.uint8,
                                       torch.bool, torch.float64]
    assert made[5].shape == (3, 2, 2) and int(made[2].max()) < 7
    assert feed.named_dimensions(fed) is None


def test_a_spec_the_core_refuses_is_a_value_error_in_its_words():
    with pytest.raises(ValueError, match="unknown dtype 'float8'"):
        feed.resolve("float8:4")
    with pytest.raises(ValueError, match="--dim 'S=64..8': the range 64..8 is empty"):
        feed.resolve("int64:S@0..10", ["S=64..8"])


def test_named_inputs_are_put_in_forwards_order_and_a_mix_is_refused():
    fed = feed.resolve("attention_mask=int64:S@1..2;input_ids=int64:S@0..100", ["S=4..64"])
    assert feed.argument_names(fed) == ["attention_mask", "input_ids"]
    assert feed.forward_order(TokenPool(), fed) == [1, 0]
    mixed = feed.resolve("attention_mask=int64:S@1..2;int64:S@0..100", ["S=4..64"])
    with pytest.raises(ValueError, match="name every input, or none"):
        feed.forward_order(TokenPool(), mixed)


def test_forward_refuses_a_name_it_does_not_take_or_one_left_out_before_a_given_one():
    with pytest.raises(ValueError, match="forward has no argument 'ids'"):
        feed.in_forward_order(TokenPool(), {"ids": 0})
    with pytest.raises(ValueError, match="argument 'input_ids' is left out"):
        feed.in_forward_order(TokenPool(), {"attention_mask": 0})
