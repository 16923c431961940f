"""torchperf's Python API (python/torchperf/api.py, result.py, apply.py) against the real core:
$TORCHPERF_CLI is the build's CLI, every point runs in its workers, nothing is mocked."""

import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import pytest
import torch

import torchperf
from torchperf import _core, _supported, api, records
from torchperf.errors import TorchperfError

# Two points of the python runtime at one batch: a tune of a small module well inside two minutes.
SMALL_SPACE = "runtime=python;graph=eager;batch=8;threads=1;precision=fp32;grad=on,inference"

MLP_SOURCE = textwrap.dedent("""
    import torch

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                           torch.nn.Linear(256, 10))

        def forward(self, x):
            return self.net(x)
""")
namespace = {}
exec(MLP_SOURCE, namespace)
MLP = namespace["MLP"]


def mlp():
    torch.manual_seed(0)
    return MLP()


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """One real tune of the MLP from Python, shared by the tests that read its result, with what
    it showed on stderr (tqdm's bar: tqdm is pinned in requirements.txt)."""
    out = tmp_path_factory.mktemp("tuned") / "run"
    model = mlp()
    started = time.monotonic()
    shown = io.StringIO()
    with contextlib.redirect_stderr(shown):
        result = torchperf.tune(model, torch.randn(8, 64), budget="3m", out=str(out),
                                space=SMALL_SPACE, search="exhaustive", time_s=0.3)
    return model, result, time.monotonic() - started, shown.getvalue()


# --- bad input: each a clear error naming what was expected -----------------------------------

def test_something_that_is_not_a_module_is_refused_naming_its_type():
    with pytest.raises(TypeError, match=r"model: expected a torch.nn.Module, got builtins.function"):
        torchperf.tune(lambda x: x, torch.randn(8, 64))


def test_example_inputs_that_are_not_tensors_are_refused():
    with pytest.raises(TypeError, match=r"example_inputs: expected a tensor, a tuple of tensors "
                                        r".*got \(list, int\)"):
        torchperf.tune(mlp(), ([1, 2], 3))


def test_example_inputs_by_forwards_argument_names_are_put_in_its_order_or_refused_naming_one():
    from token_models import TokenPool

    ids, mask = torch.randint(0, 100, (4, 16)), torch.ones(4, 16, dtype=torch.int64)
    model = TokenPool()
    ordered = api.checked_inputs({"attention_mask": mask, "input_ids": ids}, model)
    assert ordered[0] is ids and ordered[1] is mask
    with pytest.raises(ValueError, match=r"forward has no argument 'mask' \(it takes input_ids, "
                                         r"attention_mask\)"):
        api.checked_inputs({"input_ids": ids, "mask": mask}, model)
    with pytest.raises(ValueError, match=r"argument 'input_ids' is left out before 'attention_mask'"):
        api.checked_inputs({"attention_mask": mask}, model)
    with pytest.raises(ValueError, match=r"argument 'attention_mask' has no default"):
        api.checked_inputs({"input_ids": ids}, model)


def test_a_padded_batchs_mask_in_the_example_stays_a_mask_and_its_ids_keep_their_range():
    # Issue 63: a real padded batch's mask was recorded as int64:S@0..2, drawn 0/1 per token.
    ids = torch.randint(5, 100, (3, 6))
    mask = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1], [1, 1, 0, 0, 0, 0]])
    spec, _ = api.varying_dimensions((ids, mask), {"S": "4..64"})
    assert spec == f"int64:S@{int(ids.min())}..{int(ids.max()) + 1};int64:S@1..2"
    # 0/1 values in no padded order are data, drawn in their range.
    flags = torch.tensor([[0, 1, 0, 1, 1, 0]] * 3)
    spec, _ = api.varying_dimensions((ids, flags), {"S": "4..64"})
    assert spec.endswith(";int64:S@0..2")


def test_token_ids_are_drawn_from_the_vocabulary_the_model_embeds_not_the_examples_range():
    """Issue 84: a BERT's winner.json said int64:S@41..30518, the example's own ids; the spec now
    holds the smallest embedding table that holds them (the word embeddings, not the position
    or token-type tables), and the example's range where the model embeds none."""

    class Bert(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.words = torch.nn.Embedding(30522, 4)
            self.positions = torch.nn.Embedding(512, 4)
            self.types = torch.nn.Embedding(2, 4)

    ids = torch.randint(41, 30518, (3, 6))
    mask = torch.ones(3, 6, dtype=torch.int64)
    types = torch.tensor([[0, 1, 0, 1, 0, 0]] * 3)  # not a mask's pattern: data
    spec, _ = api.varying_dimensions((ids, mask, types), {"S": "4..64"}, Bert())
    assert spec == "int64:S@0..30522;int64:S@1..2;int64:S@0..2"
    spec, _ = api.varying_dimensions((ids, mask), {"S": "4..64"}, mlp())
    assert spec.startswith(f"int64:S@{int(ids.min())}..{int(ids.max()) + 1};")


def test_a_failed_export_is_one_line_naming_the_file_with_what_torch_export_printed(tmp_path):
    """Issue 84: a failed export dumped ~75 lines of graph on stderr before its one-line reason.
    Run as a user's script (pytest's own logging capture would hide what torch prints)."""
    script = tmp_path / "branches.py"
    script.write_text(textwrap.dedent(f"""
        import torch, torchperf

        class Branches(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(8, 8)

            def forward(self, x):
                if x.sum() > 0:  # data-dependent: torch.export refuses it
                    return self.fc(x)
                return x

        try:
            torchperf.tune(Branches(), torch.randn(4, 8), out={str(tmp_path / "run")!r},
                           progress=False)
        except torchperf.TorchperfError as e:
            print("ERROR", e.exit_code, e)
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONPATH=os.path.dirname(
                              os.path.dirname(torchperf.__file__))))
    log = tmp_path / "run" / "model.export.log"
    assert done.stdout.startswith("ERROR 4 torch.export could not export the model"), done
    assert str(log) in done.stdout and done.stdout.count("\n") == 1, done.stdout
    assert "def forward" in log.read_text(), "the graph torch.export printed is kept"
    assert "def forward" not in done.stderr, done.stderr


def test_example_inputs_of_the_wrong_shape_are_refused_naming_the_shape():
    with pytest.raises(api.ForwardError, match=r"raised on example_inputs \(float32\[8, 63\]\)"):
        torchperf.tune(mlp(), torch.randn(8, 63))


def test_inputs_whose_batches_differ_are_refused():
    class Two(torch.nn.Module):
        def forward(self, a, b):
            return a + b.sum()

    with pytest.raises(ValueError, match=r"first dimensions differ \(4, 8\)"):
        torchperf.tune(Two(), (torch.randn(8, 3), torch.randn(4, 3)))


def test_a_forward_that_raises_is_named_with_its_error():
    class Broken(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("the weights were never loaded")

    with pytest.raises(api.ForwardError, match=r"RuntimeError: the weights were never loaded"):
        torchperf.tune(Broken(), torch.randn(8, 4))


def test_a_module_that_torch_export_cannot_export_is_refused_with_exports_reason(tmp_path):
    class DataDependent(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:  # a branch on the values: export cannot trace it
                return x * 2
            return x

    with pytest.raises(TorchperfError, match=r"torch.export could not export the model "
                                             r"\(GuardOnDataDependentSymNode") as e:
        torchperf.tune(DataDependent(), torch.randn(8, 4), out=str(tmp_path / "run"), budget="1m",
                       progress=False)
    assert e.value.exit_code == 4


def test_a_budget_too_small_for_one_point_is_one_line_and_writes_no_report(tmp_path):
    with pytest.raises(ValueError) as e:
        torchperf.tune(mlp(), torch.randn(8, 64), budget="1s", out=str(tmp_path / "run"),
                       space=SMALL_SPACE, progress=False)
    message = str(e.value)
    assert message.startswith("budget '1s' measured nothing: the budget of 1 s ran out before any "
                              "point ran: "), message
    assert "a point needs ~" in message and message.endswith("raise the budget"), message
    assert "\n" not in message
    assert not (tmp_path / "run" / "report.html").exists()


def test_a_one_minute_budget_answers_with_its_best_point(tmp_path, capfd):
    # The default space, one minute: what fits is measured and the best point named; what it did
    # not confirm is said in one line, never a plan dump.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    result = torchperf.tune(model, torch.randn(8, 64), budget="1m", out=str(tmp_path / "run"),
                            progress=False)
    # The module itself travelled to the python runtime's workers (its classes import).
    assert os.path.exists(tmp_path / "run" / "module.pt")
    assert "measures the exported program" not in capfd.readouterr().err
    assert result.winner["key"]
    assert result.winner["batch"] == 8  # the batch passed is the batch tuned
    assert any(p["status"] == "ok" for p in result.points)
    note = result.winner["note"]
    assert "\n" not in note and len(note) < 300, note
    assert os.path.exists(result.report)


def test_a_cluster_that_is_not_ray_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match=r"cluster='slurm': expected 'ray'"):
        torchperf.tune(mlp(), torch.randn(8, 64), cluster="slurm")


def test_a_tune_on_a_cluster_nobody_named_says_how_to_start_one(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(ValueError, match=r"--cluster ray: no cluster named: set RAY_ADDRESS"):
        torchperf.tune(mlp(), torch.randn(8, 64), cluster="ray", out=str(tmp_path / "run"),
                       space=SMALL_SPACE, progress=False)


def test_an_out_folder_holding_another_models_journal_is_refused(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.jsonl").write_text('{"record": "header"}\n')
    (out / "source.json").write_text(json.dumps({"model": "zoo.ResNet", "inputs": "float32[*,3,8,8]",
                                                 "fingerprint": "0123456789abcdef"}))
    with pytest.raises(ValueError, match=r"holds the journal of another model \(zoo.ResNet"):
        torchperf.tune(mlp(), torch.randn(8, 64), out=str(out))


def test_a_knob_the_core_does_not_know_is_its_usage_error(tmp_path):
    with pytest.raises(torchperf.errors.UsageError, match=r"--warp"):
        torchperf.tune(mlp(), torch.randn(8, 64), out=str(tmp_path / "run"), warp="9",
                       progress=False)


def test_a_torch_outside_the_supported_range_is_named():
    assert _supported.problem_with("2.13.0+cpu") is None
    assert _supported.problem_with("2.11.0") is None
    assert "supports torch >=2.11,<2.14; this environment has torch 2.10.1" in \
        _supported.problem_with("2.10.1")
    assert "this environment has torch 2.14.0" in _supported.problem_with("2.14.0")


def test_importing_torchperf_beside_a_torch_outside_the_range_is_an_import_error(tmp_path):
    # A torch 2.10 as importlib.metadata sees it, ahead of the real one on the path.
    info = tmp_path / "torch-2.10.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.10.0\n")
    python_dir = os.path.dirname(os.path.dirname(torchperf.__file__))
    done = subprocess.run([sys.executable, "-c", "import torchperf"], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=f"{tmp_path}:{python_dir}"))
    assert done.returncode != 0
    assert "ImportError: torchperf supports torch >=2.11,<2.14; this environment has torch 2.10.0" \
        in done.stderr


# --- tune, apply, save and load ---------------------------------------------------------------

def test_tune_of_a_small_module_returns_every_point_and_the_winner(tuned):
    # How long it took is printed, not asserted: wall-clock limits belong in benchmarks.
    _, result, seconds, _ = tuned
    print(f"the tune took {seconds:.0f} s")
    keys = {p["key"] for p in result.points}
    assert {p["grad"] for p in result.points} == {"on", "inference"}
    assert result.winner["key"] in keys
    assert result.winner["throughput"] > 0
    low, high = result.winner["throughput_ci"]
    assert low <= result.winner["throughput"] <= high
    # Measured head to head against the model as given: eager, grad on, fp32, this process's
    # threads, at the winner's batch.
    assert result.as_given.startswith("runtime=python,threads=")
    assert "grad=on" in result.as_given and "batch=8" in result.as_given
    if not result.is_as_given and result.speedup_is_known:
        s_low, s_high = result.speedup_ci
        assert s_low <= result.speedup <= s_high
        assert result.verdict in ("faster", "slower", "indistinguishable")
    elif not result.is_as_given and result.speedup is not None:
        # Too few rounds for an interval (a loaded machine): a ratio that decides nothing, said.
        assert result.speedup_ci == (None, None) and result.verdict == "undetermined"
        assert "no interval" in repr(result)
    elif not result.is_as_given:
        # Not measured against the model as given: the comparison failed, or the budget left no
        # room for it; either is said.
        h = result.record.vs_as_given
        assert (h is not None and h.failure) or \
            any("not measured against the as given" in n for n in result.record.notes), \
            result.record.notes
    assert os.path.exists(result.journal) and os.path.exists(result.report)
    frame = result.dataframe()
    assert len(frame) == len(result.points) and "throughput" in frame.columns
    assert "winner: " + result.winner["key"] in repr(result)
    assert "<table>" in result._repr_html_()


def test_a_tune_over_a_stream_of_lengths_ranks_padding_policies_in_useful_tokens(tmp_path):
    # Issue 52: dims= names the length; the module is exported with it dynamic, and every point
    # runs the same stream of lengths.
    from token_models import TokenPool

    torch.manual_seed(0)
    # By forward's argument names, out of its order: the keyword form works too.
    example = {"attention_mask": torch.ones(4, 16, dtype=torch.int64),
               "input_ids": torch.randint(0, 100, (4, 16))}
    model = TokenPool()
    result = torchperf.tune(model, example, dims={"S": "lognormal:12:0.8:3..64"},
                            budget="3m", out=str(tmp_path / "run"), search="exhaustive",
                            time_s=0.2, progress=False,
                            space="runtime=python;graph=eager;threads=1;precision=fp32;"
                                  "grad=inference;padding=batch-max,max;batching=arrival")
    by_padding = {p["padding"]: p for p in result.points if p["status"] == "ok"}
    assert set(by_padding) == {"batch-max", "max"}, result.points
    assert all(p["tokens_per_s"] > 0 for p in by_padding.values())
    # Padding every batch to the longest length (64) pads more than each batch's own longest.
    assert by_padding["max"]["padding_share"] > by_padding["batch-max"]["padding_share"]
    with open(result.report) as f:
        assert "Padding and batching over the stream of lengths" in f.read()
    # Issue 63: the winner takes the inputs as tune was given them, by keyword.
    applied = result.apply(model)
    with torch.no_grad():
        torch.testing.assert_close(applied(**example), model(**example), rtol=1e-4, atol=1e-5)
    # And the policy it crowned batches samples of varying length (when apply returned a winner:
    # a winner within the noise of the model as given returns the model itself).
    if isinstance(applied, torchperf.apply.Applied):
        assert applied.policy.padding in ("batch-max", "max")
        rows = [{"input_ids": torch.randint(0, 100, (n,)),
                 "attention_mask": torch.ones(n, dtype=torch.int64)} for n in (5, 40, 9)]
        seen = []
        for indices, inputs in applied.batches(rows):
            seen += indices
            assert applied(*inputs).shape == (len(indices), 3)
        assert sorted(seen) == [0, 1, 2]


def test_an_applied_winner_puts_keyword_inputs_in_forwards_order_and_names_a_wrong_one():
    from torchperf.apply import Applied

    applied = Applied(lambda *inputs: inputs, {"runtime": "python"}, torch.device("cpu"))
    applied._names = ["input_ids", "attention_mask", "token_type_ids"]
    assert applied(attention_mask=2, input_ids=1) == (1, 2)
    assert applied(1, attention_mask=2) == (1, 2)
    with pytest.raises(TypeError, match="forward has no argument 'mask'"):
        applied(input_ids=1, mask=2)
    with pytest.raises(TypeError, match="'input_ids' given by position and by keyword"):
        applied(1, input_ids=1)
    with pytest.raises(TypeError, match="'input_ids' is left out before 'attention_mask'"):
        applied(attention_mask=2)
    # Issue 84's probe: an engine's winner dropped an extra positional input and answered.
    with pytest.raises(TypeError, match=r"4 positional inputs, forward takes 3 \(input_ids, "):
        applied(1, 2, 3, 4)


def test_apply_runs_the_winner_or_returns_the_model_unchanged_and_says_why(tuned, capfd):
    model, result, _, _ = tuned
    fast = result.apply(model)
    said = capfd.readouterr().err
    x = torch.randn(8, 64)
    with torch.no_grad():
        expected = model(x)
    if result.beats_as_given or not result.speedup_is_known:
        # Faster than the model as given, or tune could not tell (the check in this process
        # judges it): the winner, or the careful baseline when the winner lost every round of
        # that check (a grad=on winner against inference mode, on a loaded machine), said.
        assert isinstance(fast, torchperf.apply.Applied) and fast.check is result.applied_check
        kept = fast.check.kept
        assert (fast.configuration == result.winner["configuration"]) == kept
        assert ("its output passes the guard" if kept else
                "the careful baseline is returned instead") in said
        torch.testing.assert_close(fast(x), expected, rtol=1e-4, atol=1e-5)
    else:
        assert fast is model
        assert "the model is returned unchanged" in said


def test_apply_returns_the_model_unchanged_when_the_winner_is_within_the_noise(tuned, tmp_path,
                                                                               capfd):
    model, result, _, _ = tuned
    copy = tmp_path / "copy"
    shutil.copytree(result.folder, copy)
    summary = json.loads((copy / "tune.json").read_text())
    summary["vs_as_given"] = {"a": summary["winner"], "b": summary["as_given"], "ratio": 1.01,
                              "ci": [0.97, 1.05], "rounds": 40, "verdict": "indistinguishable",
                              "failure": ""}
    (copy / "tune.json").write_text(json.dumps(summary))
    assert torchperf.load(str(copy)).apply(model) is model
    assert "no configuration beat the model as given by more than the noise (the winner is " \
           "1.010x the model as given (0.970-1.050, indistinguishable))" in capfd.readouterr().err


def test_an_applied_winner_whose_output_fails_the_guard_is_refused(tuned, tmp_path):
    model, result, _, _ = tuned
    copy = tmp_path / "copy"
    shutil.copytree(result.folder, copy)
    summary = json.loads((copy / "tune.json").read_text())
    summary["vs_as_given"] = {"a": summary["winner"], "b": summary["as_given"], "ratio": 1.5,
                              "ci": [1.4, 1.6], "rounds": 40, "verdict": "faster", "failure": ""}
    (copy / "tune.json").write_text(json.dumps(summary))
    other = mlp()
    with torch.no_grad():
        for p in other.parameters():
            p.mul_(-1)  # another model's outputs: the guard must catch them
    with pytest.raises(TorchperfError, match=r"fails the guard against your model's own \(accuracy guard: cosine"):
        torchperf.load(str(copy)).apply(other)


def test_a_saved_result_loads_back_and_applies_without_tuning_again(tuned, tmp_path):
    model, result, _, _ = tuned
    result.apply(model)
    saved = result.save(str(tmp_path / "saved"))
    for name in ("tune.json", "environment.json", "model.pt2", "example_inputs.pt",
                 "example_outputs.pt", "results.jsonl"):
        assert os.path.exists(os.path.join(saved, name)), name
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # same machine, same torch: no warning
        loaded = torchperf.load(saved)
    assert loaded.winner == result.winner
    assert loaded.measured_elsewhere == ""
    fast = loaded.apply(model)
    x = torch.randn(8, 64)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x), rtol=1e-4, atol=1e-5)
    with pytest.raises(FileExistsError, match=r"exists and is not empty"):
        result.save(saved)


def test_a_result_measured_under_another_torch_or_cpu_says_so_when_loaded(tuned, tmp_path):
    _, result, _, _ = tuned
    saved = result.save(str(tmp_path / "saved"))
    environment = json.loads(open(os.path.join(saved, "environment.json")).read())
    # Another capability than this machine's (machines differ: AVX2 on one, AVX512 on another).
    other = "AVX2" if torch.backends.cpu.get_cpu_capability() != "AVX2" else "AVX512"
    environment.update(torch="2.12.0", cpu_capability=other)
    open(os.path.join(saved, "environment.json"), "w").write(json.dumps(environment))
    with pytest.warns(UserWarning, match=r"measured elsewhere \(torch 2.12.0 there, .* here; CPU "
                                         r".* " + other + " there"):
        loaded = torchperf.load(saved)
    assert "torch 2.12.0 there" in loaded.measured_elsewhere


def test_a_failed_point_is_a_record_with_its_reason_and_no_figures(tuned, tmp_path):
    _, result, _, _ = tuned
    copy = tmp_path / "copy"
    shutil.copytree(result.folder, copy)
    summary = json.loads((copy / "tune.json").read_text())
    summary["points"].append({"key": "runtime=python,threads=9,batch=8", "status": "failed",
                              "metrics": None, "reason": "the worker was killed at the memory cap"})
    (copy / "tune.json").write_text(json.dumps(summary))
    loaded = torchperf.load(str(copy))
    failed = loaded.points[-1]
    assert failed["status"] == "failed" and failed["throughput"] is None
    assert failed["reason"] == "the worker was killed at the memory cap"
    assert loaded.winner["key"] == result.winner["key"] and "winner: " in repr(loaded)


def test_loading_a_folder_that_is_no_result_names_it(tmp_path):
    with pytest.raises(TorchperfError, match=r"not a torchperf result \(no tune.json\); expected a "
                                             r"folder written by result.save") as e:
        torchperf.load(str(tmp_path))
    assert e.value.exit_code == 6 and str(tmp_path) in str(e.value)


# --- a result folder that is not what load expects: one line naming the file, exit code 6 -------
# A saved result as result.save writes it, without a tune: tune.json with the core's fields that
# TuneResult reads (as a real tune of the MLP wrote them), environment.json of this machine.

def tune_json(threads=1, **changes):
    """tune.json whose winner (the python runtime, eager, grad=inference, at `threads`) beats the
    model as given; `changes` replace its fields (None drops one)."""
    def key(grad, threads=threads):
        return f"runtime=python,threads={threads},batch=8,grad={grad},precision=fp32,graph=eager"

    def point(grad, throughput):
        return {"key": key(grad), "status": "ok", "stage": "sweep", "brief": False, "reason": "",
                "metrics": {"batch": 8, "cosine": 1.0, "throughput_samples_per_s": throughput,
                            "throughput_ci": [throughput * 0.99, throughput * 1.01],
                            "latency_p50_ms": 0.16, "latency_p99_ms": 0.2,
                            "peak_memory_bytes": 335708160}}

    summary = {"schema_version": 1, "kind": "tune", "accuracy": "cosine>=0.999,top1>=0.99",
               "objective": "throughput",
               "points": [point("on", 51406.4), point("inference", 55460.2)],
               "winner": key("inference"), "as_given": key("on", threads=2),
               "winner_note": "its lead over the runners-up is significant head to head",
               "vs_as_given": {"a": key("inference"), "b": key("on", threads=2), "ratio": 1.072,
                               "ci": [1.055, 1.089], "rounds": 490, "verdict": "faster",
                               "failure": ""}}
    for field, value in changes.items():
        if value is None:
            summary.pop(field, None)
        else:
            summary[field] = value
    return summary


def write_result(folder, threads=1, **changes):
    """A result folder with tune_json(threads, **changes) as its tune.json."""
    from torchperf import result as result_module

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tune.json").write_text(json.dumps(tune_json(threads, **changes), indent=1))
    (folder / "environment.json").write_text(json.dumps(result_module.current_environment()))
    (folder / "results.jsonl").write_text('{"record": "header", "schema_version": 1}\n')
    return folder


def one_line_error(e, *names):
    message = str(e.value)
    assert "\n" not in message, message
    for name in names:
        assert str(name) in message, message
    return message


def test_a_result_written_as_result_save_writes_it_loads_and_prints_its_winner(tmp_path):
    loaded = torchperf.load(str(write_result(tmp_path / "saved")))
    assert loaded.winner["configuration"]["grad"] == "inference"
    assert loaded.beats_as_given and loaded.speedup == 1.072
    assert "winner: runtime=python,threads=1" in repr(loaded)


def test_loading_a_file_instead_of_a_result_folder_is_a_torchperf_error_naming_it(tmp_path):
    model_file = tmp_path / "model.pt2"
    model_file.write_bytes(b"PK\x03\x04 not a folder")
    with pytest.raises(TorchperfError) as e:
        torchperf.load(str(model_file))
    assert e.value.exit_code == 6
    assert "is a file, not a torchperf result; expected a folder written by result.save or by " \
           "torchperf.tune" in one_line_error(e, model_file)


def test_loading_a_path_that_does_not_exist_is_a_torchperf_error_naming_it(tmp_path):
    with pytest.raises(TorchperfError, match=r"does not exist; expected a folder written by "
                                             r"result.save") as e:
        torchperf.load(str(tmp_path / "nowhere"))
    assert e.value.exit_code == 6
    one_line_error(e, tmp_path / "nowhere")


def test_loading_a_result_whose_tune_json_is_not_json_names_the_file(tmp_path):
    folder = write_result(tmp_path / "saved")
    (folder / "tune.json").write_text('{"kind": "tune", "points": [')  # cut short
    with pytest.raises(TorchperfError, match=r"is damaged: not JSON \(Expecting value") as e:
        torchperf.load(str(folder))
    assert e.value.exit_code == 6
    one_line_error(e, folder / "tune.json")


@pytest.mark.parametrize("changes, field", [
    ({"kind": "measurement"}, 'kind: expected "tune", got "measurement"'),
    ({"kind": None}, "kind: missing"),
    ({"points": None}, "points: missing"),
    ({"points": {"key": "threads=1"}}, "points: expected an array, got an object"),
    ({"points": [{"status": "ok"}]}, "points[0].key: missing"),
    ({"points": ["threads=1"]}, "points[0]: expected an object, got a string"),
    ({"points": [{"key": "threads=1", "status": "ok", "metrics": {"throughput_ci": 5}}]},
     "points[0].metrics.throughput_ci: expected [low, high], got a number"),
    ({"points": [{"key": "threads=1", "status": "ok",
                  "metrics": {"throughput_samples_per_s": "fast"}}]},
     "points[0].metrics.throughput_samples_per_s: expected a number or null, got a string"),
    ({"winner": ["threads=1"]}, "winner: expected a string, got an array"),
    ({"vs_as_given": {"ratio": 1.2, "verdict": "faster"}}, "vs_as_given.ci: missing"),
    ({"vs_as_given": {"ratio": 1.2, "ci": [1.1, 1.3]}}, "vs_as_given.verdict: missing"),
])
def test_loading_a_tune_json_of_the_wrong_shape_names_the_file_and_the_field(tmp_path, changes,
                                                                             field):
    folder = write_result(tmp_path / "saved", **changes)
    with pytest.raises(TorchperfError) as e:
        torchperf.load(str(folder))
    assert e.value.exit_code == 6
    message = one_line_error(e, folder / "tune.json")
    assert f"is not tune's answer as result.save writes it ({field}" in message


def test_loading_a_tune_json_that_is_not_an_object_names_the_file(tmp_path):
    folder = write_result(tmp_path / "saved")
    (folder / "tune.json").write_text('["runtime=python,threads=1"]')
    with pytest.raises(TorchperfError, match=r"\(the file: expected an object \(tune's answer\), "
                                             r"got an array\)") as e:
        torchperf.load(str(folder))
    assert e.value.exit_code == 6
    one_line_error(e, folder / "tune.json")


def test_loading_a_result_whose_environment_json_is_damaged_names_the_file(tmp_path):
    folder = write_result(tmp_path / "saved")
    for text, said in (("x86_64 AVX512", "is damaged: not JSON"),
                       ('["x86_64"]', "is damaged: expected an object")):
        (folder / "environment.json").write_text(text)
        with pytest.raises(TorchperfError, match=said) as e:
            torchperf.load(str(folder))
        assert e.value.exit_code == 6
        one_line_error(e, folder / "environment.json")


# --- the typed records (records.py): tune's, bench's and guard's answers, checked once ----------

def test_a_tune_json_reads_as_typed_records_and_back_as_the_points_tune_result_lists(tmp_path):
    summary = tune_json()
    record = records.TuneSummary.from_json(summary)
    assert [p.status for p in record.points] == [records.PointStatus.OK] * 2
    point = record.points[1]
    assert point.key == summary["points"][1]["key"] and point.configuration["grad"] == "inference"
    assert point.metrics.throughput_samples_per_s == 55460.2
    assert point.metrics.throughput_ci == tuple(summary["points"][1]["metrics"]["throughput_ci"])
    assert record.winner == point.key and record.winner_point is point
    assert record.vs_as_given.verdict is records.Verdict.FASTER
    assert record.vs_as_given.ci == (1.055, 1.089) and record.vs_as_given.rounds == 490
    # TuneResult reads the records; its points are the records as dicts, the file stays as written.
    folder = write_result(tmp_path / "saved")
    written = (folder / "tune.json").read_bytes()
    loaded = torchperf.load(str(folder))
    assert loaded.record == records.TuneSummary.from_json(json.loads(written))
    assert loaded.points == [p.to_dict() for p in loaded.record.points]
    assert loaded.points[1]["grad"] == "inference" and loaded.points[1]["throughput_low"] == \
        summary["points"][1]["metrics"]["throughput_ci"][0]
    assert loaded.verdict == "faster" and loaded.speedup_ci == (1.055, 1.089)
    saved = loaded.save(str(tmp_path / "again"))
    assert (tmp_path / "again" / "tune.json").read_bytes() == written, saved


def with_point(**fields):
    """tune.json with one point: a measured one, `fields` replacing its own or its metrics'."""
    point = tune_json()["points"][0]
    for name, value in fields.items():
        if name in point["metrics"]:
            point["metrics"][name] = value
        else:
            point[name] = value
    return tune_json(points=[point])


@pytest.mark.parametrize("summary, said", [
    (with_point(cosine="1.0"), "points[0].metrics.cosine: expected a number or null, got a string"),
    (with_point(batch=True), "points[0].metrics.batch: expected a number or null, got a boolean"),
    (with_point(throughput_ci=[1.0]), "points[0].metrics.throughput_ci: expected [low, high], got "
                                      "an array"),
    (with_point(metrics=[1.0]), "points[0].metrics: expected an object or null, got an array"),
    (with_point(status="skipped"), 'points[0].status: expected "ok", "guarded" or "failed", got '
                                   '"skipped"'),
    (with_point(status=1), "points[0].status: expected a string, got a number"),
    (with_point(key=None), "points[0].key: expected a string, got null"),
    (with_point(reason=None), "points[0].reason: expected a string, got null"),
    (with_point(brief="no"), "points[0].brief: expected a boolean or null, got a string"),
    (with_point(stage=3), "points[0].stage: expected a string or null, got a number"),
    (tune_json(kind=7), 'kind: expected "tune", got a number'),
    (tune_json(winner_note=False), "winner_note: expected a string, got a boolean"),
    (tune_json(as_given=["threads=1"]), "as_given: expected a string, got an array"),
    (tune_json(accuracy={}), "accuracy: expected a string, got an object"),
    (tune_json(budget_exhausted="yes"), "budget_exhausted: expected a boolean, got a string"),
    (tune_json(vs_as_given=1.07), "vs_as_given: expected an object or null, got a number"),
    (tune_json(vs_as_given={"ratio": "1.07", "ci": [1, 2], "verdict": "faster"}),
     "vs_as_given.ratio: expected a number or null, got a string"),
    (tune_json(vs_as_given={"ratio": 1.07, "ci": None, "verdict": "faster"}),
     "vs_as_given.ci: expected [low, high], got null"),
    (tune_json(vs_as_given={"ratio": 1.07, "ci": [1, 2], "verdict": "quicker"}),
     'vs_as_given.verdict: expected "faster", "indistinguishable", "slower" or "undetermined", '
     'got "quicker"'),
    (tune_json(vs_as_given={"failure": 0}), "vs_as_given.failure: expected a string, got a number"),
])
def test_each_wrong_type_in_a_tune_json_names_its_field_path(summary, said):
    with pytest.raises(records.RecordError) as e:
        records.TuneSummary.from_json(summary)
    assert str(e.value) == said
    assert e.value.field_path == said.split(":")[0]


def test_a_failed_comparison_is_read_without_its_figures_and_counts_as_undetermined(tmp_path):
    loaded = torchperf.load(str(write_result(tmp_path / "saved", vs_as_given={
        "failure": "the worker of B crashed", "ratio": "?", "ci": None, "verdict": ""})))
    assert loaded.record.vs_as_given.failure == "the worker of B crashed"
    assert loaded.speedup is None and loaded.verdict == "undetermined"


def test_a_failed_point_without_metrics_reads_as_a_point_without_figures():
    point = records.Point.from_json({"key": "runtime=python,threads=9", "status": "failed",
                                     "metrics": None, "reason": "killed"}, "points[0]")
    assert point.metrics is None and point.status is records.PointStatus.FAILED
    assert point.to_dict()["throughput"] is None and point.to_dict()["reason"] == "killed"
    assert point.to_dict()["threads"] == "9"


@pytest.mark.parametrize("answer, said", [
    ({"valid": True}, "measurement: missing"),
    ({"measurement": {"batch": 8}}, "measurement.throughput_samples_per_s: missing"),
    ({"measurement": {"throughput_samples_per_s": "9", "batch": 8}},
     "measurement.throughput_samples_per_s: expected a number, got a string"),
    ({"measurement": {"throughput_samples_per_s": 9.0, "batch": 8, "throughput_ci": [8.0, 10.0],
                      "latency_ms": {"p99": 1.0}}, "valid": True},
     "measurement.latency_ms: expected an object with p50 (ms), got an object without it"),
    ({"measurement": {"throughput_samples_per_s": 9.0, "batch": 8, "throughput_ci": [8.0, 10.0],
                      "latency_ms": {"p50": 1.0}}, "valid": "yes"},
     "valid: expected a boolean, got a string"),
])
def test_each_wrong_field_of_a_bench_answer_names_its_path(answer, said):
    with pytest.raises(records.RecordError, match=r"^" + re.escape(said) + r"$"):
        records.BenchFigures.from_json(answer)


def test_a_guard_verdict_reads_as_a_record_and_its_wrong_types_are_named():
    verdict = records.GuardVerdict.from_json({"passes": False, "why": "cosine 0.9 < 0.999",
                                              "accuracy": "cosine>=0.999", "cosine": None})
    assert not verdict.passes and verdict.cosine is None and verdict.why == "cosine 0.9 < 0.999"
    with pytest.raises(records.RecordError, match=r"^passes: missing$"):
        records.GuardVerdict.from_json({"why": ""})
    with pytest.raises(records.RecordError, match=r"^cosine: expected a number or null, got a "
                                                  r"string$"):
        records.GuardVerdict.from_json({"passes": True, "cosine": "1"})


def test_the_configuration_parser_reads_an_empty_key_as_no_knobs():
    assert records.parse_configuration("") == {}


def test_the_configuration_parser_keeps_an_equals_sign_inside_a_value():
    assert records.parse_configuration("runtime=python,env=OMP_NUM_THREADS=2,threads=2") == \
        {"runtime": "python", "env": "OMP_NUM_THREADS=2", "threads": "2"}


def test_the_configuration_parser_skips_parts_that_are_no_knob_and_its_inverse_gives_the_key():
    assert records.parse_configuration("runtime=python,,stray,threads=2") == \
        {"runtime": "python", "threads": "2"}
    key = "runtime=python,threads=1,batch=8,grad=on"
    assert records.configuration_key(records.parse_configuration(key)) == key


# --- a result without a winner: printed, never raising; what needs the winner says so -----------

def test_a_saved_result_whose_winner_was_dropped_prints_that_it_has_none(tmp_path):
    loaded = torchperf.load(str(write_result(tmp_path / "saved", winner=None, winner_note=None)))
    shown = repr(loaded)
    assert str(loaded) == shown
    assert "winner: none\n" in shown and "points: 2 of 2 passed" in shown
    assert "<th style='text-align:left'>winner</th><td style='text-align:left'>none</td>" in \
        loaded._repr_html_()
    assert loaded.speedup is None and loaded.verdict == "undetermined"
    assert not loaded.beats_as_given and not loaded.is_as_given


def test_a_result_of_a_tune_without_a_winner_prints_why(tmp_path):
    points = [{"key": "runtime=python,threads=1,batch=8", "status": "failed", "metrics": None,
               "reason": "the worker was killed at the memory cap"}]
    loaded = torchperf.load(str(write_result(
        tmp_path / "saved", points=points, winner=None, vs_as_given=None,
        winner_note="every point failed or was guarded out")))
    assert "winner: none: every point failed or was guarded out" in repr(loaded)
    assert "points: 0 of 1 passed" in repr(loaded)


def test_applying_a_result_without_a_winner_is_a_torchperf_error_with_exit_code_3(tmp_path):
    folder = write_result(tmp_path / "saved", winner=None,
                          winner_note="every point failed or was guarded out")
    loaded = torchperf.load(str(folder))
    with pytest.raises(TorchperfError) as e:
        loaded.apply(mlp())
    assert e.value.exit_code == 3
    assert "apply: the result in '" + str(folder) + "' has no winner (every point failed or was " \
           "guarded out)" in one_line_error(e)
    with pytest.raises(TorchperfError, match=r"winner: the result in .* has no winner") as e:
        loaded.winner
    assert e.value.exit_code == 3
    with pytest.raises(TorchperfError, match=r"has no winner") as e:
        loaded.winner_package()
    assert e.value.exit_code == 3


def test_applying_a_result_whose_example_inputs_are_missing_or_damaged_names_the_file(tmp_path,
                                                                                      capfd):
    # The winner's threads are this process's: apply changes nothing process-wide here.
    folder = write_result(tmp_path / "saved", threads=torch.get_num_threads())
    loaded = torchperf.load(str(folder))
    with pytest.raises(TorchperfError, match=r"is missing: the result folder lacks the example "
                                             r"inputs") as e:
        loaded.apply(mlp())
    assert e.value.exit_code == 6
    one_line_error(e, folder / "example_inputs.pt")
    (folder / "example_inputs.pt").write_bytes(b"not a torch.save file")
    with pytest.raises(TorchperfError, match=r"is damaged \(") as e:
        loaded.apply(mlp())
    assert e.value.exit_code == 6
    one_line_error(e, folder / "example_inputs.pt")
    torch.save({"x": torch.randn(8, 64)}, folder / "example_inputs.pt")
    with pytest.raises(TorchperfError, match=r"holds dict, not the tuple of tensors") as e:
        loaded.apply(mlp())
    assert e.value.exit_code == 6


def a_core_that_answers(tmp_path, monkeypatch, answer):
    """$TORCHPERF_CLI: a stand-in for the core that prints `answer` and succeeds."""
    core = tmp_path / "torchperf"
    core.write_text(f"#!/bin/sh\ncat <<'EOF'\n{answer}\nEOF\n")
    core.chmod(0o755)
    monkeypatch.setenv("TORCHPERF_CLI", str(core))


def test_a_guard_answer_that_is_not_its_verdict_is_a_torchperf_error(tmp_path, monkeypatch):
    folder = write_result(tmp_path / "saved", threads=torch.get_num_threads())
    model = mlp()
    inputs = (torch.randn(8, 64),)
    torch.save(inputs, folder / "example_inputs.pt")
    from torchperf import _child
    with torch.no_grad():
        _child.save_outputs(model(*inputs), str(folder / "example_outputs.pt"))
    a_core_that_answers(tmp_path, monkeypatch, '{"cosine": 1.0}')
    with pytest.raises(TorchperfError, match=r"apply: `torchperf guard --json` answered no "
                                             r"verdict \(expected an object with 'passes'"):
        torchperf.load(str(folder)).apply(model)


def test_a_bench_answer_without_its_measurement_is_a_torchperf_error(tmp_path, monkeypatch):
    a_core_that_answers(tmp_path, monkeypatch, '{"kind": "comparison", "valid": true}')
    with pytest.raises(TorchperfError, match=r"bench: the core's answer \(torchperf bench --json\) "
                                             r"is not what the API reads \(measurement: missing\)"):
        torchperf.bench(mlp(), torch.randn(8, 64), runtime="python")


@pytest.mark.parametrize("source", ['["zoo.ResNet"]', '{"fingerprint": "0123456789abcdef"}'])
def test_an_out_folder_whose_source_json_is_damaged_is_refused_as_another_models(tmp_path,
                                                                                 source):
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.jsonl").write_text('{"record": "header"}\n')
    (out / "source.json").write_text(source)
    with pytest.raises(ValueError, match=r"holds the journal of another model \(a model tuned "
                                         r"from the CLI, inputs \?; this is .*MLP"):
        torchperf.tune(mlp(), torch.randn(8, 64), out=str(out))


def test_an_out_folder_with_this_models_journal_asks_for_resume(tuned):
    model, result, _, _ = tuned
    with pytest.raises(ValueError, match=r"holds this model's tune journal already: resume=True"):
        torchperf.tune(model, torch.randn(8, 64), out=result.folder)


def test_bench_measures_one_configuration_in_a_worker():
    r = torchperf.bench(mlp(), torch.randn(8, 64), runtime="python", threads=1, time_s=0.3)
    low, high = r.throughput_ci
    assert 0 < low <= r.throughput <= high
    # 0.3 s may not narrow the interval to bench's target: then it says so, as the CLI's exit 3.
    assert r.valid or "stopping rule not met" in r.invalid_reason
    assert r.valid or "INCONCLUSIVE: stopping rule not met" in repr(r)
    assert r.batch == 8
    assert r["measurement"]["configuration"]["knobs"]["runtime"]["value"] == "python"
    assert "samples/s" in repr(r)


def test_progress_shows_as_tqdms_bar_and_the_cores_own_lines(tuned):
    _, result, _, shown = tuned
    points = len(result.points)
    assert f"{points}/{points}" in shown and "point" in shown, shown  # tqdm's n/total and unit
    assert "tune: results go to " in shown and "tune: report written to" in shown


def test_without_tqdm_progress_is_a_line_per_finished_point(capfd):
    bar = _core._Progress(True)
    bar.tqdm = None  # as where tqdm is not installed
    for done in (0, 1, 1, 2):
        bar.update({"phase": "sweeping", "done": done, "failed": 0, "planned": 2, "eta_s": 30,
                    "best": "1.2e+04 samples/s"})
    bar.write("tune: report written to x")
    err = capfd.readouterr().err
    assert err.count("tune: 1/2 points, 0 failed, sweeping, best 1.2e+04 samples/s, about 0.5 min "
                     "left") == 1
    assert "tune: 2/2 points" in err and "tune: report written to x" in err


def test_a_cpp_runtime_winner_is_applied_as_its_aoti_package(tmp_path, capfd):
    model = mlp()
    result = torchperf.tune(model, torch.randn(8, 64), budget="3m", out=str(tmp_path / "run"),
                            space="runtime=cpp;graph=aoti;batch=8;threads=1;precision=fp32",
                            time_s=0.3, progress=False)
    assert result.winner["configuration"]["runtime"] == "cpp"
    package = result.winner_package()
    assert package and package.endswith(".pt2") and os.path.exists(package)
    fast = result.apply(model)
    x = torch.randn(8, 64)
    with torch.no_grad():
        expected = model(x)
    if result.beats_as_given:
        assert isinstance(fast, torchperf.apply.Applied)
        torch.testing.assert_close(fast(x), expected, rtol=1e-4, atol=1e-5)
        saved = result.save(str(tmp_path / "saved"))
        assert os.path.exists(os.path.join(saved, "artifacts", "package.pt2"))
        torch.testing.assert_close(torchperf.load(saved).apply(model)(x), expected, rtol=1e-4,
                                   atol=1e-5)
    elif not result.speedup_is_known:  # judged by the check in this process alone
        assert isinstance(fast, torchperf.apply.Applied) and result.applied_check is not None
        torch.testing.assert_close(fast(x), expected, rtol=1e-4, atol=1e-5)
    else:
        assert fast is model


def test_a_package_is_measured_in_pythons_loader_as_apply_runs_it(tmp_path, capfd):
    # From Python, an AOTInductor package is timed as this process runs it (aoti_load_package),
    # not by the C++ loader, whose per-call cost a Python caller never sees.
    model = mlp()
    result = torchperf.tune(model, torch.randn(8, 64), budget="3m", out=str(tmp_path / "run"),
                            space="runtime=python;graph=aoti;batch=8;threads=1;precision=fp32",
                            time_s=0.3, progress=False)
    configuration = result.winner["configuration"]
    assert (configuration["runtime"], configuration["graph"]) == ("python", "aoti")
    assert result.winner_package().endswith(".pt2")
    fast = result.apply(model)
    x = torch.randn(8, 64)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x), rtol=1e-4, atol=1e-5)
    if result.beats_as_given or not result.speedup_is_known:
        # Applied, and checked in this process against what tune stated for it.
        check = result.applied_check
        assert check is not None and check.stated == result.winner["throughput"]
    else:  # within the noise of the model as given (a loaded machine): returned unchanged
        assert fast is model and result.applied_check is None


def test_ctrl_c_stops_a_tune_cleanly_and_resume_goes_on_from_its_journal(tmp_path):
    (tmp_path / "models.py").write_text(MLP_SOURCE)
    out = tmp_path / "run"
    script = textwrap.dedent(f"""
        import sys, torch, torchperf
        from models import MLP
        torch.manual_seed(0)
        try:
            torchperf.tune(MLP(), torch.randn(8, 64), budget="3m", out={str(out)!r},
                           space={SMALL_SPACE!r}, search="exhaustive", time_s=0.3,
                           progress=False, resume=len(sys.argv) > 1)
        except KeyboardInterrupt:
            sys.exit(130)
    """)
    (tmp_path / "run_tune.py").write_text(script)
    proc = subprocess.Popen([sys.executable, "run_tune.py"], cwd=tmp_path, stderr=subprocess.PIPE,
                            text=True)
    journal = out / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if journal.exists() and '"record":"point"' in journal.read_text().replace(" ", ""):
            break
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130, err
    assert "interrupted: every finished point is kept; tune(..., out=" in err
    assert "resume=True) goes on from it" in err
    kept = journal.read_text().replace(" ", "").count('"record":"point"')
    assert kept >= 1
    done = subprocess.run([sys.executable, "run_tune.py", "resume"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "tune.json").read_text())
    assert summary["resumed_points"] >= 1
    assert summary["winner"]


def test_python_dash_m_torchperf_runs_the_core():
    done = subprocess.run([sys.executable, "-m", "torchperf", "--version"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


def test_apply_checks_the_winner_in_this_process_against_the_careful_baseline(tuned, capfd):
    model, result, _, _ = tuned
    fast = result.apply(model)
    said = capfd.readouterr().err
    if not isinstance(fast, torchperf.apply.Applied):
        # Nothing beat the model as given: it comes back unchanged, and no check was made.
        assert fast is model and "the model is returned unchanged" in said
        return
    check = result.applied_check
    assert check is fast.check and check.batch == 8
    assert check.throughput > 0 and check.stated == result.winner["throughput"]
    assert check.vs_careful.low <= check.vs_careful.median <= check.vs_careful.high
    assert check.vs_careful.rounds == 7
    assert "eval()+inference_mode" in said
    # Kept: both ratios said; lost every round to the careful code: that is returned, and said.
    assert ("the model as given" if check.kept else "the careful baseline is returned instead") \
        in said
    assert "applied here" in repr(result)


def test_a_winner_slower_than_the_careful_baseline_here_is_not_returned(tuned, monkeypatch, capfd):
    model, result, _, _ = tuned
    from torchperf import apply as applying

    real = applying._python_winner

    def slowed(*args):
        applied = real(*args)
        inner = applied.fn

        def slow(*inputs):
            time.sleep(0.0005)
            return inner(*inputs)
        applied.fn = slow
        return applied
    monkeypatch.setattr(applying, "_python_winner", slowed)
    monkeypatch.setattr(type(result), "beats_as_given", property(lambda self: True))
    fast = result.apply(model)
    assert fast.configuration["grad"] == "inference" and fast.configuration["mode"] == "eval"
    assert result.applied_check.kept is False
    assert "the careful baseline is returned instead" in capfd.readouterr().err
    x = torch.randn(8, 64)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x))


def test_the_module_itself_reaches_the_python_runtime_unless_it_cannot_travel(tmp_path):
    from torchperf import module_file

    path = str(tmp_path / "module.pt")
    module_file.save(torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.ReLU()), path)
    loaded = module_file.load(path)
    assert isinstance(loaded, torch.nn.Sequential) and not loaded.training
    # This file's MLP is made by exec: no process can import its class.
    with pytest.raises(module_file.ModuleFileError, match=r"the model \(MLP\) cannot be imported"):
        module_file.save(mlp(), str(tmp_path / "mlp.pt"))

    class Local(torch.nn.Module):
        def forward(self, x):
            return x
    with pytest.raises(module_file.ModuleFileError, match=r"defined inside a function"):
        module_file.save(Local(), str(tmp_path / "local.pt"))
    assert not os.path.exists(tmp_path / "local.pt")
    (tmp_path / "broken.pt").write_bytes(b"not a module")
    with pytest.raises(module_file.ModuleFileError, match=r"module file '.*broken.pt': the saved "
                                                          r"nn.Module did not load"):
        module_file.load(str(tmp_path / "broken.pt"))


def test_torchperf_has_a_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", torchperf.__version__)


def test_a_winner_that_raises_in_apply_is_named_with_the_inputs_it_was_given(tuned, monkeypatch):
    model, result, _, _ = tuned
    copy = torchperf.load(result.folder)
    monkeypatch.setattr(type(copy), "beats_as_given", property(lambda self: True))

    class Broken(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied\nmore detail")
    with pytest.raises(TorchperfError, match=r"apply: the winner .* raised on the example inputs "
                                             r"\(.*\): RuntimeError: mat1 and mat2 shapes cannot be "
                                             r"multiplied$") as e:
        copy.apply(Broken())
    assert e.value.exit_code == 5


def test_an_engine_winner_runs_here_and_a_saved_result_applies_it_without_converting_again(
        tmp_path, capfd):
    # Issue 61: ONNX Runtime's winner is run in this process on torch tensors, its conversion
    # kept with the result.
    from torchperf import engines

    if "onnxruntime" not in engines.installed():
        pytest.skip("onnxruntime is not installed in this Python")
    model = mlp()
    result = torchperf.tune(model, torch.randn(8, 64), budget="2m", out=str(tmp_path / "run"),
                            search="exhaustive", time_s=0.2, progress=False,
                            space="runtime=onnxruntime;graph=ort,ort-basic;threads=1;precision=fp32")
    assert result.winner["configuration"]["runtime"] == "onnxruntime", result.points
    # Issue 84: saved before any apply, the folder is complete: the engine's conversion (save
    # converts it), winner.json naming the folder's own files for `torchperf serve SAVED`, the
    # module; and applying the loaded result writes nothing into the folder it read.
    saved = result.save(str(tmp_path / "saved"))
    assert os.listdir(os.path.join(saved, "artifacts", "engine"))
    winner = json.loads(open(os.path.join(saved, "winner.json")).read())
    assert winner["model"] == "model.pt2" and winner["configuration"] == result.winner["key"]
    # The module saved beside it, or "@program" where it could not travel (defined in a test).
    assert winner["python_module"] in ("@program", "module.pt"), winner
    if winner["python_module"] == "module.pt":
        assert os.path.exists(os.path.join(saved, "module.pt"))
    before = sorted((p, os.path.getmtime(os.path.join(d, p))) for d, _, files in os.walk(saved)
                    for p in files)
    again = torchperf.load(saved).apply(model)
    said = capfd.readouterr().err
    assert "the conversion kept with the result" in said, said
    x = torch.randn(5, 64)
    torch.testing.assert_close(again(x), model(x).detach(), rtol=1e-4, atol=1e-5)
    after = sorted((p, os.path.getmtime(os.path.join(d, p))) for d, _, files in os.walk(saved)
                   for p in files)
    assert before == after, "load wrote into the folder it read"
    fast = result.apply(model)
    said = capfd.readouterr().err
    assert "its output passes the guard" in said, said
    torch.testing.assert_close(fast(x), model(x).detach(), rtol=1e-4, atol=1e-5)


def test_calibration_samples_unlike_the_example_inputs_are_refused_naming_the_input(tmp_path):
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten()).eval()
    x = torch.rand(2, 3, 16, 16)
    cases = [(torch.rand(8, 3, 32, 32), "input 0 is float32[8, 3, 32, 32]"),
             (torch.rand(8, 3, 16, 16).double(), "input 0 is float64"),
             ((torch.rand(8, 3, 16, 16), torch.rand(8, 3)), "2 tensors where example_inputs has 1"),
             ("samples.pt", "calibration: expected a tensor")]
    for calibration, says in cases:
        with pytest.raises((ValueError, TypeError)) as e:
            torchperf.tune(model, x, out=str(tmp_path / "never"), calibration=calibration,
                           progress=False)
        assert says in str(e.value), str(e.value)
    assert not os.path.exists(tmp_path / "never"), "refused before any work"


def test_an_onnx_runtime_int8_winner_is_calibrated_on_the_samples_given_in_tune_and_here(
        tmp_path, capfd):
    # Issue 61: ONNX Runtime's own static int8 (QDQ), calibrated on the samples tune was given
    # (calibration=), by the point and again here, its quantized file kept with the result.
    from torchperf import engines

    if "onnxruntime" not in engines.installed():
        pytest.skip("onnxruntime is not installed in this Python")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10)).eval()
    x = torch.rand(8, 3, 32, 32)
    # Real samples the guard's inputs are among (a user's calibration set holds their own data).
    result = torchperf.tune(model, x, budget="2m", out=str(tmp_path / "run"),
                            search="exhaustive", time_s=0.2, progress=False,
                            calibration=torch.cat([x, torch.rand(12, 3, 32, 32)]),
                            accuracy="cosine>=0.99",
                            space="runtime=onnxruntime;graph=ort;threads=1;precision=int8-static")
    assert [p["status"] for p in result.points] == ["ok"], result.points
    assert result.winner["configuration"]["precision"] == "int8-static", result.winner
    assert any("calibrated on the 20 samples of " in n for n in result.record.notes), \
        result.record.notes
    fast = result.apply(model)
    said = capfd.readouterr().err
    assert "ONNX Runtime's QDQ int8, calibrated here on the 20 samples of the calibration" in said, said
    assert "its output passes the guard" in said, said
    x = torch.rand(5, 3, 32, 32)
    with torch.no_grad():
        want = model(x)
    cosine = torch.nn.functional.cosine_similarity(fast(x).flatten(), want.flatten(), dim=0)
    assert cosine > 0.99, cosine
    folder = os.path.join(result.folder, "artifacts", "engine")
    assert any(f.endswith(".int8-static.onnx") for f in os.listdir(folder)), os.listdir(folder)


def test_int8_winners_are_quantized_here_as_measured_and_calibrated_on_the_saved_inputs(
        tmp_path, capfd):
    # Issue 61: PT2E static int8, a point under the guard, its winner quantized again in this
    # process on the example inputs tune saved.
    pytest.importorskip("torchao", reason="torchao is not installed in this Python")
    torch.manual_seed(0)
    model = torch.nn.Sequential(  # convolutions enough for int8 to pay (an MLP's do not)
        torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10)).eval()
    result = torchperf.tune(model, torch.randn(8, 3, 56, 56), budget="2m", out=str(tmp_path / "run"),
                            search="exhaustive", time_s=0.2, progress=False,
                            space="runtime=python;graph=compile;grad=inference;threads=1;"
                                  "precision=int8-static;format=contiguous")
    assert [p["status"] for p in result.points] == ["ok"], result.points
    assert result.winner["configuration"]["precision"] == "int8-static", result.winner
    assert any("calibrated on random inputs" in n for n in result.record.notes), result.record.notes
    fast = result.apply(model)
    said = capfd.readouterr().err
    assert "precision=int8-static: PT2E static int8" in said, said
    assert "calibrated here on the example inputs tune saved" in said, said
    x = torch.randn(3, 3, 56, 56)  # another batch than tuned: the applied export's is dynamic
    with torch.no_grad():
        cosine = torch.nn.functional.cosine_similarity(fast(x).flatten(), model(x).flatten(), dim=0)
    assert cosine > 0.99


def test_a_tune_from_python_sweeps_the_engines_installed_here_as_the_cli_does():
    """Issue 84: torchperf.tune tried the Python runtimes only unless runtime= named the engines;
    it sweeps each engine this Python has that runs on the tune's device."""
    from torchperf.api import default_runtimes

    both = {"onnxruntime": {"version": "1", "cuda": False}, "openvino": {"version": "1", "cuda": False}}
    assert default_runtimes("cpu", both, False) == ["python", "onnxruntime", "openvino"]
    assert default_runtimes(None, both, False) == ["python", "onnxruntime", "openvino"]
    assert default_runtimes(None, {"openvino": {"version": "1", "cuda": False}}, False) == \
        ["python", "openvino"]
    # On CUDA: OpenVINO does not run there, ONNX Runtime only as its CUDA build.
    assert default_runtimes(None, both, True) == ["python"]
    assert default_runtimes("cuda:0", dict(both, onnxruntime={"version": "1", "cuda": True}),
                            False) == ["python", "onnxruntime"]
    assert default_runtimes("cpu", both, True) == ["python", "onnxruntime", "openvino"]
    # What this venv has (requirements.txt pins both).
    assert default_runtimes("cpu") == ["python", "onnxruntime", "openvino"]


def test_a_streams_point_reports_its_batch_and_a_calls_latency_not_a_pass_as_one_call():
    """Issue 84: winner['batch'] read 512 for a configuration at batch 8, and latency_p50_ms a
    pass over the whole stream (23,389 ms)."""
    from torchperf import records

    stream = records.Metrics(throughput_samples_per_s=584.0, latency_p50_ms=876.0, batch=512,
                             tokens_per_s=25654.0)
    call = stream.per_call({"batch": "8"})
    assert call["batch"] == 8 and call["pass_p50_ms"] == 876.0
    assert abs(call["latency_p50_ms"] - 876.0 * 8 / 512) < 1e-9
    point = records.Point.from_json({
        "key": "runtime=python,batch=8,padding=batch-max", "status": "ok",
        "metrics": {"throughput_samples_per_s": 584.0, "latency_p50_ms": 876.0, "batch": 512,
                    "tokens_per_s": 25654.0}}).to_dict()
    assert point["batch"] == 8 and point["pass_p50_ms"] == 876.0
    # One shape: the measurement's own figures.
    plain = records.Metrics(throughput_samples_per_s=500.0, latency_p50_ms=16.0, batch=8)
    assert plain.per_call({"batch": "8"}) == {"batch": 8, "latency_p50_ms": 16.0,
                                              "latency_p99_ms": None, "pass_p50_ms": None}
