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
               "warmup_steps": 1, "steps": 2, "settle_steps": 1}
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
        assert len(step["ns"]) == 6 and all(t >= 0 for t in step["ns"])
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
    assert set(entry["ready"]) == {"setup_ms", "compile_s", "torch", "threads"}
