"""The Python training worker (python/torchperf/train_worker.py), driven as the C++ ladder drives it:
requests on stdin, answers on file descriptor 3, a built-in's real training step, real
torch.compile."""

import pytest

from test_worker import Worker, protocol_schema, wire_types


def train_side(**changes):
    request = {"protocol": 1, "job": "python-train-side", "model": "builtin:convbn",
               "data_source": "synthetic-cifar", "image_size": 16, "loss": "cross-entropy",
               "optimizer": "sgd", "learning_rate": 0.01, "device": "cpu", "grad_scaler": "auto",
               "step": "eager", "threads": 1, "batch": 4, "channels_last": False,
               "cudnn_benchmark": False, "workers": 0, "prefetch": 2, "pin_memory": False,
               "non_blocking": False, "transfer": "float32", "amp": "off", "set_to_none": False,
               "warmup_steps": 1, "steps": 2, "settle_steps": 1, "accumulate": 1,
               "no_sync": False, "checkpoint": "off", "memory_cap_bytes": 0, "bucket_mb": 25,
               "gradient_as_bucket_view": False, "static_graph": False,
               "broadcast_buffers": True, "find_unused_parameters": "auto", "nproc": 1,
               "nnodes": 1, "node_rank": 0, "rdzv_endpoint": "", "collective_timeout_s": 60.0,
               "join_timeout_s": 60.0, "rank_log_dir": ""}
    request.update(changes)
    return request


def job(name, **fields):
    return dict({"protocol": 1, "job": name}, **fields)


def started(**changes):
    worker = Worker(module="torchperf.train_worker")
    ready = worker.ask(train_side(**changes))
    assert ready["ok"], ready
    return worker, ready


def test_an_eager_step_breaks_down_into_phases_that_add_up_to_the_step():
    worker, ready = started()
    assert ready["compile_s"] == -1.0  # nothing compiled
    answer = worker.ask(job("breakdown", steps=3))
    assert answer["ok"], answer
    assert len(answer["steps"]) == 3
    for step in answer["steps"]:
        assert len(step["ns"]) == 7 and all(t >= 0 for t in step["ns"])
        assert sum(step["ns"]) <= step["total_ns"] * 1.001
        assert step["samples"] == 4 and step["stepped"]
    assert answer["peak_memory_bytes"] > 0
    block = worker.ask(job("train-block"))
    assert block["ok"] and block["samples_per_s"] > 0
    assert worker.ask(job("train-finish"))["ok"]
    assert worker.close() == 0


def test_every_training_knob_applies_in_python():
    worker, _ = started(workers=1, prefetch=4, transfer="uint8", set_to_none=True,
                        channels_last=True, batch=8, threads=2)
    block = worker.ask(job("train-block"))
    assert block["ok"], block
    assert block["samples_per_s"] > 0
    worker.ask(job("train-finish"))
    worker.close()


def test_a_compiled_step_reports_its_compile_time_apart_from_its_steps(tmp_path):
    import torch

    # The built-in MLP on saved vectors: the smallest graph to compile forward and backward.
    data = tmp_path / "vectors.pt"
    torch.save((torch.randn(16, 784), torch.randint(0, 10, (16,))), data)
    worker, ready = started(step="compile", model="builtin:mlp", data_source=f"tensors:{data}")
    assert ready["compile_s"] > 0
    answer = worker.ask(job("breakdown", steps=2))
    assert answer["ok"], answer
    # The compile is in the warm-up, not in the measured steps.
    assert max(s["total_ns"] for s in answer["steps"]) * 1e-9 < ready["compile_s"]
    worker.ask(job("train-finish"))
    worker.close()


@pytest.mark.parametrize("changes, kind, names", [
    ({"model": "builtin:nonesuch"}, "usage", "builtin:nonesuch"),
    ({"model": "/tmp/model.pt"}, "usage", "/tmp/model.pt"),
    ({"data_source": "images:/tmp"}, "usage", "images:/tmp"),
    ({"step": "frozen"}, "config", "step 'frozen'"),
])
def test_a_bad_request_is_answered_with_its_kind_naming_the_input(changes, kind, names):
    worker = Worker(module="torchperf.train_worker")
    answer = worker.ask(train_side(**changes))
    assert not answer["ok"]
    assert answer["error"]["kind"] == kind
    assert names in answer["error"]["message"]
    worker.close()


def test_a_training_worker_starts_with_its_own_job():
    worker = Worker(module="torchperf.train_worker")
    answer = worker.ask(job("train-block"))
    assert answer["error"]["kind"] == "protocol"
    assert "python-train-side" in answer["error"]["message"]
    worker.close()


def test_the_training_worker_speaks_the_fields_the_cpp_side_lists():
    from torchperf import train_worker

    entry = protocol_schema()["jobs"]["python-train-side"]
    assert wire_types(train_worker.PYTHON_TRAIN_SIDE_REQUEST) == entry["request"]
    assert set(entry["ready"]) == {"setup_ms", "compile_s", "torch", "threads", "world_size",
                                   "unused_parameters", "checkpointed_blocks", "activation_bytes",
                                   "checkpointed_activation_bytes", "followed"}


def blocks_worker(tmp_path, **changes):
    import os

    import torch

    here = os.path.dirname(os.path.abspath(__file__))
    data = tmp_path / "vectors.pt"
    torch.save((torch.randn(256, 64), torch.randint(0, 10, (256,))), data)
    worker = Worker(module="torchperf.train_worker", env={"PYTHONPATH": os.pathsep.join(
        [os.path.join(here, "..", "..", "python"), here])})
    return worker, train_side(model="python:rank_models:Blocks", data_source=f"tensors:{data}",
                              batch=16, **changes)


def test_accumulation_steps_the_optimizer_once_per_k_micro_batches(tmp_path):
    worker, request = blocks_worker(tmp_path, accumulate=3)
    assert worker.ask(request)["ok"]
    answer = worker.ask(job("breakdown", steps=2))
    assert answer["ok"], answer
    assert all(step["samples"] == 48 for step in answer["steps"])
    assert all(step["ns"][6] == 0 for step in answer["steps"])  # one process: no all-reduce
    worker.ask(job("train-finish"))
    worker.close()


def test_checkpointing_recomputes_the_repeated_blocks_and_keeps_fewer_activations(tmp_path):
    worker, request = blocks_worker(tmp_path, memory_cap_bytes=8 << 30)
    ready = worker.ask(request)
    assert ready["ok"], ready
    assert ready["checkpointed_blocks"] == 0
    # Saved for backward: each block's four activations without it; with it, its input, and one
    # block's recomputed with their gradients at the peak.
    assert 0 < ready["checkpointed_activation_bytes"] < ready["activation_bytes"]
    # Measured on two samples and scaled to the batch, it is what a forward of the whole batch
    # keeps: the stem keeps its input, and a slice of the batch is not the batch's storage.
    import torch
    from torchperf import checkpointing
    import rank_models
    assert ready["activation_bytes"] == checkpointing.saved_activation_bytes(
        rank_models.Blocks(), torch.randn(16, 64))
    worker.ask(job("train-finish"))
    worker.close()
    worker, request = blocks_worker(tmp_path, checkpoint="blocks", memory_cap_bytes=8 << 30)
    ready = worker.ask(request)
    assert ready["ok"], ready
    assert ready["checkpointed_blocks"] == 6
    assert ready["activation_bytes"] == ready["checkpointed_activation_bytes"]
    assert worker.ask(job("train-block"))["ok"]
    worker.ask(job("train-finish"))
    worker.close()


@pytest.mark.parametrize("checkpoint, message", [
    ("every:0", "checkpoint 'every:0': expected off, blocks, every:N"),
    ("budget:0.5", "the activation memory budget is torch.compile's"),
])
def test_a_checkpoint_that_cannot_apply_is_a_config_error(tmp_path, checkpoint, message):
    worker, request = blocks_worker(tmp_path, checkpoint=checkpoint)
    answer = worker.ask(request)
    assert answer["error"]["kind"] == "config"
    assert message in answer["error"]["message"]
    worker.close()


def test_a_model_without_repeated_blocks_cannot_checkpoint_them():
    worker = Worker(module="torchperf.train_worker")
    answer = worker.ask(train_side(model="builtin:mlp", checkpoint="blocks"))
    assert answer["error"]["kind"] == "config"
    assert "no ModuleList or Sequential of repeated blocks" in answer["error"]["message"]
    worker.close()


def test_a_step_over_the_memory_cap_is_out_of_memory_naming_the_cap(tmp_path):
    worker, request = blocks_worker(tmp_path, memory_cap_bytes=64 << 20)
    answer = worker.ask(request)  # the warm-up step already reaches past 64 MiB resident
    assert answer["error"]["kind"] == "out-of-memory"
    assert "over --memory-cap 64 MiB" in answer["error"]["message"]
    worker.close()


def test_an_output_that_does_not_fit_the_targets_is_named_with_both_shapes_not_broadcast_text():
    # Issue 63: mse on [4, 10] against [4] was PyTorch's broadcast error.
    import torch

    from torchperf.train_worker import check_output
    from torchperf.worker import JobError

    with pytest.raises(JobError, match=r"the model's output \[4, 10\] does not fit mse with "
                                       r"targets \[4\]: expected the same shape"):
        check_output(torch.zeros(4, 10), torch.zeros(4), cross_entropy=False)
    with pytest.raises(JobError, match=r"does not fit cross-entropy with targets \[4\]: "
                                       r"expected \[4, C\]"):
        check_output(torch.zeros(4, 3, 2), torch.zeros(4, dtype=torch.int64), cross_entropy=True)
    check_output(torch.zeros(4, 10), torch.zeros(4, dtype=torch.int64), cross_entropy=True)
