"""The crowned padding and batching policy applied to samples in the caller's process
(python/torchperf/stream_policy.py), as the core's stream pads and orders them."""

import json

import pytest
import torch

from torchperf import stream_policy
from torchperf.stream_policy import StreamPolicy


def samples(lengths):
    return [{"input_ids": torch.full((n,), 7), "attention_mask": torch.ones(n, dtype=torch.int64)}
            for n in lengths]


NAMES = ["input_ids", "attention_mask"]
TOKENS = [{1: "S"}, {1: "S"}]


def test_each_padding_pads_a_batch_as_the_cores_stream_does():
    at = {p: StreamPolicy(p, "arrival", 2, TOKENS, {"S": 64})
          for p in ("batch-max", "max", "multiple:8", "buckets:16/32/64")}
    assert [at["batch-max"].padded(13, "S"), at["max"].padded(13, "S"),
            at["multiple:8"].padded(13, "S"), at["buckets:16/32/64"].padded(17, "S")] == \
        [13, 64, 16, 32]
    # Never past the distribution's longest, and never below the batch's own.
    assert at["multiple:8"].padded(63, "S") == 64 and at["buckets:16/32/64"].padded(70, "S") == 70


def test_batches_take_sorted_windows_pad_with_zeros_and_say_which_samples_they_hold():
    policy = StreamPolicy("multiple:8", "sorted:4", 2, TOKENS, {"S": 64})
    out = list(policy.batches(samples([9, 3, 5, 12, 2]), NAMES))
    assert [indices for indices, _ in out] == [[1, 2], [0, 3], [4]]
    ids, mask = out[0][1]
    assert ids.shape == (2, 8) and mask.shape == (2, 8)
    assert mask[0].tolist() == [1, 1, 1, 0, 0, 0, 0, 0]  # the padding is masked
    assert out[1][1][0].shape == (2, 16)


def test_a_sample_with_an_argument_forward_lacks_is_named():
    policy = StreamPolicy("batch-max", "arrival", 2, TOKENS, {"S": 64})
    with pytest.raises(TypeError, match="forward has no argument 'mask'"):
        list(policy.batches([{"input_ids": torch.ones(3), "mask": torch.ones(3)}], NAMES))


def test_the_policy_is_read_from_the_journal_of_a_tune_over_a_stream(tmp_path):
    journal = tmp_path / "results.jsonl"
    journal.write_text(json.dumps({"record": "header", "experiment": {
        "input_spec": "input_ids=int64:S@0..1000;attention_mask=int64:S@1..2",
        "dims": ["S=lognormal:40:0.9:4..512"]}}) + "\n")
    policy = stream_policy.from_result(str(journal), {"padding": "max", "batching": "sorted:64",
                                                      "batch": "16"})
    assert (policy.padding, policy.batching, policy.batch) == ("max", "sorted:64", 16)
    assert policy.varying == TOKENS and policy.longest == {"S": 512}
    assert stream_policy.from_result(str(journal), {"batch": "16"}) is None
