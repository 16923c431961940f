"""The Python runtime's worker (python/torchperf/worker.py), driven as the C++ side drives it:
requests on stdin, answers on file descriptor 3, a real model and real torch.compile."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

PYTHON_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "python")


class Worker:
    """A live `python -m torchperf.worker` with the same pipes the C++ side gives it."""

    def __init__(self, env=None, cwd=None, module="torchperf.worker"):
        read_end, write_end = os.pipe()
        environment = dict(os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR))
        environment.update(env or {})

        def answers_on_fd3():
            os.dup2(write_end, 3)

        self.process = subprocess.Popen(
            [sys.executable, "-m", module], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment, cwd=cwd,
            preexec_fn=answers_on_fd3, pass_fds=(write_end, 3), text=True)
        os.close(write_end)
        self.answers = os.fdopen(read_end, "r")

    def ask(self, request, raw=None):
        self.process.stdin.write((raw if raw is not None else json.dumps(request)) + "\n")
        self.process.stdin.flush()
        line = self.answers.readline()
        assert line, "the worker ended without answering; stderr: " + self.process.stderr.read()
        return json.loads(line)

    def close(self):
        self.process.stdin.close()
        code = self.process.wait(timeout=60)
        self.answers.close()
        return code


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """One small model exported and scripted once for the module (exporting costs seconds)."""
    tmp_path = tmp_path_factory.mktemp("worker")
    torch.manual_seed(0)
    model = Small().eval()
    x = torch.randn(4, 16)
    inputs = tmp_path / "inputs.pt"
    torch.save((x,), inputs)
    program = tmp_path / "small.pt2"
    torch.export.save(torch.export.export(model, (x,)), program)
    script = tmp_path / "small.ts"
    torch.jit.script(model).save(str(script))
    with torch.no_grad():
        expected = model(x)
    return {"inputs": str(inputs), "program": str(program), "torchscript": str(script),
            "expected": expected, "dir": tmp_path}


def side(kind, model, inputs, **settings):
    """A python-side request: every field protocol.h lists, the settings' defaults overridden."""
    request = {"protocol": 1, "job": "python-side", "slot": 0, "model_kind": kind, "model": model,
               "inputs": inputs, "stream": "", "graph": "eager", "precision": "fp32", "format": "contiguous",
               "grad": "inference", "threads": 1, "interop_threads": 0, "device": "cpu",
               "cudnn_benchmark": "n/a", "tf32": "n/a", "compile_artifacts": "", "calibration": ""}
    request.update(settings)
    return request


def finish(worker, path, slot=0):
    return worker.ask({"protocol": 1, "job": "python-finish", "slot": slot, "outputs": str(path),
                       "padding_check": "", "padding_outputs": ""})


def timed_block(worker, iterations, slot=0):
    return worker.ask({"protocol": 1, "job": "python-block", "slot": slot,
                       "iterations": iterations})


def call(worker, folder, inputs, slot=0, measure_memory=False, region_name="in.region",
         outputs_name="out.region"):
    """A python-call: the inputs laid out in a region file as the server lays them out."""
    from torchperf import shared_region

    region = folder / region_name
    entries, size = shared_region.write_tensors(shared_region.Region(), str(region), inputs)
    (folder / outputs_name).touch()
    return worker.ask({"protocol": 1, "job": "python-call", "slot": slot, "region": str(region),
                       "region_size": size, "inputs": entries,
                       "outputs": str(folder / outputs_name), "measure_memory": measure_memory})


def called_outputs(folder, answer, outputs_name="out.region"):
    from torchperf import shared_region

    region = shared_region.Region().mapped(str(folder / outputs_name), answer["region_size"])
    return [t.clone() for t in shared_region.read_tensors(region, answer["outputs"])]


def saved_outputs(path):
    tensors, _ = torch.load(path)
    return tensors


def test_one_worker_serves_sides_in_turn_and_a_compile_is_paid_once_for_their_settings(files):
    """A tune's brief points of one process state share a worker (issue 60): the second side of
    the same compile settings reuses the first's compiled graph, and the model each side placed
    is its own copy (a channels_last or bf16 side never converts the next one's)."""
    worker = Worker()
    first = worker.ask(side("program", files["program"], files["inputs"], graph="compile"))
    assert first["ok"], first
    assert finish(worker, files["dir"] / "first.pt")["ok"]
    bf16 = worker.ask(side("program", files["program"], files["inputs"], precision="bf16"))
    assert bf16["ok"], bf16
    assert finish(worker, files["dir"] / "bf16.pt")["ok"]
    again = worker.ask(side("program", files["program"], files["inputs"], graph="compile"))
    assert again["ok"], again
    assert again["compile_s"] < first["compile_s"] / 2, (first["compile_s"], again["compile_s"])
    assert finish(worker, files["dir"] / "again.pt")["ok"]
    eager = worker.ask(side("program", files["program"], files["inputs"]))
    assert eager["ok"], eager
    assert finish(worker, files["dir"] / "eager.pt")["ok"]
    assert torch.allclose(saved_outputs(files["dir"] / "eager.pt")[0], files["expected"], atol=1e-6)
    assert worker.close() == 0


def test_a_pairs_two_sides_stay_open_in_one_worker_each_timed_and_finished_by_its_slot(files):
    """A head-to-head pair of one process state (issue 60): both sides open at once, blocks
    alternating by slot; the compiled side's graph is the one the sweep compiled in this worker;
    a slot that is not open is a protocol error naming the open ones."""
    worker = Worker()
    swept = worker.ask(side("program", files["program"], files["inputs"], graph="compile"))
    assert swept["ok"], swept
    assert finish(worker, files["dir"] / "swept.pt")["ok"]
    a = worker.ask(side("program", files["program"], files["inputs"], graph="compile", slot=0))
    b = worker.ask(side("program", files["program"], files["inputs"], slot=1))
    assert a["ok"] and b["ok"], (a, b)
    assert a["compile_reused"] and b["compile_s"] == -1
    for slot in (0, 1, 1, 0):
        answer = timed_block(worker, 2, slot)
        assert answer["ok"] and answer["ns"] > 0, answer
    assert finish(worker, files["dir"] / "b.pt", slot=1)["ok"]
    closed = timed_block(worker, 1, slot=1)
    assert closed["error"] == {"kind": "protocol", "message": "a 'python-block' request for slot 1, "
                               "where no side is open (open: [0])"}
    assert worker.close() == 1, "a failed answer ends the worker, as a failed side did"
    assert torch.allclose(saved_outputs(files["dir"] / "b.pt")[0], files["expected"], atol=1e-6)


@pytest.mark.parametrize("kind", ["program", "torchscript"])
def test_an_eager_side_times_blocks_and_saves_the_models_outputs(files, kind):
    worker = Worker()
    ready = worker.ask(side(kind, files[kind], files["inputs"]))
    assert ready["ok"], ready
    assert ready["compile_s"] == -1 and ready["setup_ms"] > 0
    assert ready["process"]["runtime"] == "python" and ready["process"]["threads"] == "1"
    for iterations in (1, 10):
        block = timed_block(worker, iterations)
        assert block["ok"] and block["ns"] > 0 and block["minor_faults"] >= 0
    done = finish(worker, files["dir"] / "out.pt")
    assert done["ok"] and done["outputs"] == 1 and done["peak_memory_bytes"] > 0
    assert torch.allclose(saved_outputs(files["dir"] / "out.pt")[0], files["expected"], atol=1e-6)
    assert worker.close() == 0


def test_a_model_from_python_source_is_imported_from_the_working_folder(files):
    (files["dir"] / "mymodels.py").write_text(textwrap.dedent("""
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(16, 3)
            def forward(self, x):
                print("a model that prints to stdout")
                return self.fc(x)
    """))
    worker = Worker(cwd=files["dir"])
    ready = worker.ask(side("python", "mymodels:Net", files["inputs"]))
    assert ready["ok"], ready
    block = timed_block(worker, 3)
    assert block["ok"], "printing to stdout must not break the protocol"
    assert finish(worker, files["dir"] / "out.pt")["ok"]
    assert saved_outputs(files["dir"] / "out.pt")[0].shape == (4, 3)
    worker.close()


def test_torch_compile_pays_its_compile_on_the_first_call_and_matches_eager(files):
    worker = Worker()
    ready = worker.ask(side("program", files["program"], files["inputs"],
                            graph="compile", grad="inference"))
    assert ready["ok"], ready
    assert ready["compile_s"] > 0
    assert ready["graph_break_count"] == 0 and ready["graph_break_reasons"] == []
    assert timed_block(worker, 5)["ok"]
    assert finish(worker, files["dir"] / "out.pt")["ok"]
    assert torch.allclose(saved_outputs(files["dir"] / "out.pt")[0], files["expected"], atol=1e-5)
    worker.close()


def test_what_torch_compile_compiled_is_saved_where_tune_asks_and_loads_again(files, tmp_path):
    saved = tmp_path / "point.compile_cache.bin"
    worker = Worker(env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")})
    # grad=on: Inductor's FX graph cache, which the artifacts are made of, skips frozen graphs
    # (grad=inference freezes the weights), so a frozen compile has nothing to save. The file is
    # the side's (a shared worker serves many points), named in its request.
    ready = worker.ask(side("program", files["program"], files["inputs"],
                            graph="compile", grad="on", compile_artifacts=str(saved)))
    assert ready["ok"], ready
    worker.close()
    assert saved.stat().st_size > 0
    assert not list(tmp_path.glob("*.partial-*"))
    # What apply does with it: the artifacts load into a fresh process's caches.
    check = subprocess.run([sys.executable, "-c",
                            "import sys, torch; torch.compiler.load_cache_artifacts("
                            "open(sys.argv[1], 'rb').read()); print('loaded')", str(saved)],
                           capture_output=True, text=True)
    assert check.stdout.strip() == "loaded", check.stderr
    eager = tmp_path / "eager.compile_cache.bin"
    worker = Worker()
    assert worker.ask(side("program", files["program"], files["inputs"],
                           compile_artifacts=str(eager)))["ok"]
    worker.close()
    assert not eager.exists(), "an eager side compiles nothing and saves nothing"


def test_graph_breaks_are_counted_with_their_first_reason(files):
    (files["dir"] / "breaking.py").write_text(textwrap.dedent("""
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(16, 8)
            def forward(self, x):
                y = self.fc(x)
                torch._dynamo.graph_break()
                return torch.relu(y)
    """))
    worker = Worker(cwd=files["dir"])
    ready = worker.ask(side("python", "breaking:Net", files["inputs"],
                            graph="compile"))
    assert ready["ok"], ready
    assert ready["graph_break_count"] >= 1
    assert ready["graph_break_reasons"]
    worker.close()


def test_a_compile_that_fails_is_a_compile_error_with_the_compilers_first_line(files):
    worker = Worker(env={"CXX": "/nonexistent/g++", "TORCHINDUCTOR_CACHE_DIR": str(files["dir"] / "ic")})
    ready = worker.ask(side("program", files["program"], files["inputs"],
                            graph="compile"))
    assert not ready["ok"]
    assert ready["error"]["kind"] == "compile", ready
    assert ready["error"]["message"].startswith("torch.compile failed")
    assert worker.close() == 1


def test_a_request_of_another_protocol_version_is_refused_naming_both(files):
    worker = Worker()
    answer = worker.ask(dict(side("program", files["program"], files["inputs"]), protocol=99))
    assert answer == {"ok": False, "error": {"kind": "protocol", "message":
                      "the request speaks worker protocol 99, this worker 1: the supervisor and "
                      "the worker come from different builds"}}
    worker.close()


def test_a_malformed_request_is_a_protocol_error(files):
    worker = Worker()
    answer = worker.ask(None, raw="{not json")
    assert answer["error"]["kind"] == "protocol"
    assert "malformed worker request" in answer["error"]["message"]
    worker.close()


def test_a_damaged_model_file_is_a_model_error_naming_the_file(files):
    damaged = files["dir"] / "damaged.pt2"
    damaged.write_bytes(b"not a zip")
    worker = Worker()
    answer = worker.ask(side("program", str(damaged), files["inputs"]))
    assert answer["error"]["kind"] == "model"
    assert str(damaged) in answer["error"]["message"]
    worker.close()


def test_inputs_of_the_wrong_shape_are_a_workload_error_naming_the_shapes(files):
    wrong = files["dir"] / "wrong.pt"
    torch.save((torch.randn(4, 5),), wrong)
    worker = Worker()
    answer = worker.ask(side("torchscript", files["torchscript"], str(wrong)))
    assert answer["error"]["kind"] == "workload"
    assert "float32[4, 5]" in answer["error"]["message"]
    worker.close()


def test_an_int8_side_calibrates_on_the_calibration_file_it_is_given_or_names_it_unread(files):
    pytest.importorskip("torchao", reason="torchao is not installed in this Python")
    worker = Worker()
    missing = str(files["dir"] / "no-such-calibration.pt")
    answer = worker.ask(side("program", files["program"], files["inputs"], precision="int8-static",
                             calibration=missing))
    assert answer["error"]["kind"] == "workload", answer
    assert f"calibration file '{missing}'" in answer["error"]["message"]
    worker.close()  # a failed answer ends a worker: the next side is another's
    worker = Worker()
    samples = files["dir"] / "calibration.pt"
    torch.save((torch.randn(10, 16),), samples)
    ready = worker.ask(side("program", files["program"], files["inputs"], precision="int8-static",
                            graph="compile", calibration=str(samples)))
    assert ready["ok"], ready
    worker.close()


def test_a_missing_or_mistyped_field_is_a_protocol_error_naming_it(files):
    worker = Worker()
    request = side("program", files["program"], files["inputs"])
    del request["grad"]
    answer = worker.ask(request)
    assert answer["error"] == {"kind": "protocol",
                               "message": "the 'python-side' request has no field 'grad'"}
    worker.close()
    worker = Worker()
    answer = worker.ask(side("program", files["program"], files["inputs"], threads="2"))
    assert answer["error"]["message"] == ("the 'python-side' request: field 'threads' is not of "
                                          "type integer")
    worker.close()


def protocol_schema():
    """The protocol's jobs and fields as the C++ side lists them (`torchperf __protocol`)."""
    binary = os.environ.get("TORCHPERF")
    if not binary:
        pytest.skip("TORCHPERF (the torchperf binary) is not set: run through ctest")
    return json.loads(subprocess.run([binary, "__protocol"], check=True, capture_output=True,
                                     text=True).stdout)


def wire_types(spec):
    from torchperf import worker as python_worker

    return {name: python_worker.WIRE_TYPES[kind] for name, kind in spec.items()}


def test_the_python_worker_speaks_the_fields_the_cpp_side_lists(files):
    from torchperf import worker as python_worker

    schema = protocol_schema()
    assert schema["protocol"] == python_worker.PROTOCOL_VERSION
    entry = schema["jobs"]["python-side"]
    assert wire_types(python_worker.PYTHON_SIDE_REQUEST) == entry["request"]
    assert wire_types(python_worker.PYTHON_BLOCK_REQUEST) == schema["jobs"]["python-block"]["request"]
    assert wire_types(python_worker.PYTHON_FINISH_REQUEST) == schema["jobs"]["python-finish"]["request"]
    worker = Worker()
    ready = worker.ask(side("program", files["program"], files["inputs"]))
    assert set(ready) - {"ok"} == set(entry["ready"])
    block = timed_block(worker, 2)
    assert set(block) - {"ok"} == set(schema["jobs"]["python-block"]["reply"])
    done = finish(worker, files["dir"] / "out.pt")
    assert set(done) - {"ok"} == set(schema["jobs"]["python-finish"]["reply"])
    assert wire_types(python_worker.PYTHON_CALL_REQUEST) == schema["jobs"]["python-call"]["request"]
    assert worker.ask(side("program", files["program"], files["inputs"]))["ok"]
    called = call(worker, files["dir"], (torch.randn(4, 16),))  # the program's static batch
    assert set(called) - {"ok"} == set(schema["jobs"]["python-call"]["reply"])
    worker.close()


def test_a_python_without_torch_is_a_usage_error_naming_the_interpreter(files, tmp_path):
    # An interpreter where `import torch` fails: a package named torch that raises.
    fake = tmp_path / "notorch"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text("raise ImportError('no torch in this Python')\n")
    worker = Worker(env={"PYTHONPATH": os.pathsep.join([str(fake), os.path.abspath(PYTHON_DIR)])})
    answer = worker.ask(side("program", files["program"], files["inputs"]))
    assert answer["error"]["kind"] == "usage", answer
    assert "cannot import torch" in answer["error"]["message"]
    assert sys.executable in answer["error"]["message"]
    worker.close()


def test_bf16_weights_and_inputs_are_converted_together_as_in_cpp(files):
    worker = Worker()
    ready = worker.ask(side("program", files["program"], files["inputs"], precision="bf16"))
    assert ready["ok"], ready
    done = finish(worker, files["dir"] / "bf16.pt")
    assert done["ok"], done
    out = saved_outputs(files["dir"] / "bf16.pt")[0].float()
    # Computed in bf16 (8 bits of mantissa): close to fp32's result, and not equal to it.
    assert torch.allclose(out, files["expected"], atol=5e-2, rtol=5e-2)
    assert not torch.equal(out, files["expected"])
    assert worker.close() == 0


def test_a_precision_the_worker_does_not_know_is_a_configuration_error(files):
    worker = Worker()
    ready = worker.ask(side("program", files["program"], files["inputs"], precision="int4"))
    assert not ready["ok"] and ready["error"]["kind"] == "config"
    assert "precision 'int4'" in ready["error"]["message"]
    worker.close()


def test_each_torch_compile_mode_is_a_graph_value_and_an_unknown_one_is_refused():
    from torchperf import python_settings

    assert python_settings.COMPILE_MODES == {
        "compile": None, "compile-reduce-overhead": "reduce-overhead",
        "compile-max-autotune": "max-autotune",
        "compile-max-autotune-no-cudagraphs": "max-autotune-no-cudagraphs",
        "compile-dynamic": None, "compile-static": None}
    # The two for lengths that vary set torch.compile's dynamic= instead of its mode.
    from torchperf import compile_modes

    assert {g: d for g, d in compile_modes.DYNAMIC.items() if d is not None} == {
        "compile-dynamic": True, "compile-static": False}
    with pytest.raises(python_settings.SettingsError, match="compile-fastest"):
        python_settings.compiled(torch.nn.Linear(2, 2), "compile-fastest", "inference")


def test_the_cuda_branch_places_weights_and_inputs_on_the_device_it_is_given():
    # As far as a CPU reaches: the same calls the worker makes on CUDA, with device "cpu"; on a
    # GPU machine the device is cuda (scripts/gpu_check.sh runs the Python runtime there).
    from torchperf import python_settings

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model, (x,) = python_settings.place(torch.nn.Conv2d(3, 4, 3), (torch.randn(2, 3, 8, 8),),
                                        device, "channels_last", "fp16" if device.type == "cuda"
                                        else "bf16")
    assert x.device.type == device.type and x.is_contiguous(memory_format=torch.channels_last)
    assert model.weight.dtype == x.dtype and x.dtype in (torch.float16, torch.bfloat16)


def test_the_builtins_defined_here_are_the_ones_the_core_lists():
    listed = subprocess.run([os.environ.get("TORCHPERF", "torchperf"), "knobs", "--json"],
                            capture_output=True, text=True, check=True)
    from torchperf import builtin_models

    core = [m["name"] for m in json.loads(listed.stdout)["builtin_models"]]
    assert sorted(core) == sorted(builtin_models.BUILTINS)


def test_compiled_graphs_are_kept_up_to_their_count_and_half_of_what_the_worker_could_hold():
    """A finalist reuses the graph its brief point compiled (issue 60): up to _COMPILED_KEPT are
    kept, the oldest dropped first, and fewer where keeping them would take this worker past half
    of its resident set and the machine's available memory."""
    sys.path.insert(0, os.path.abspath(PYTHON_DIR))
    from torchperf import worker

    saved = dict(worker._COMPILED)
    worker._COMPILED.clear()
    try:
        roomy = dict(resident=lambda: 1 << 30, available=lambda: 64 << 30)
        for n in range(worker._COMPILED_KEPT + 2):
            worker.keep_compiled(("graph", n), n, **roomy)
        assert list(worker._COMPILED) == [("graph", n) for n in range(2, worker._COMPILED_KEPT + 2)]
        held = {"resident": 3 << 30}

        def resident():
            return held["resident"]

        def available():
            held["resident"] -= 1 << 29  # each graph dropped gives back half a GiB
            return 2 << 30

        worker.keep_compiled(("graph", "big"), "big", resident=resident, available=available)
        assert ("graph", "big") in worker._COMPILED
        assert list(worker._COMPILED)[0] == ("graph", 4), "one dropped for the count, one more for memory"
        assert held["resident"] <= 2 << 30, "dropped until it holds no more than half"
    finally:
        worker._COMPILED.clear()
        worker._COMPILED.update(saved)


def test_static_graphs_of_one_worker_go_past_torch_compiles_recompile_limit_with_none_run_eagerly(files):
    """Points of one process state share a worker, and torch._dynamo counts the graphs of a
    function across them (8, then calls run eagerly, in silence): a second padding's widths went
    past the eighth on bench 23. A compile-static side raises the limit, so each width the sides
    meet compiles."""
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=64)
    program = files["dir"] / "small-dynamic.pt2"
    torch.export.save(torch.export.export(Small().eval(), (torch.randn(4, 16),),
                                          dynamic_shapes=({0: batch},)), program)
    streams = []
    for name, sizes in (("first", (1, 2, 3, 5, 6)), ("second", (7, 8, 9, 10, 11, 12))):
        path = files["dir"] / f"stream-{name}.pt"
        torch.save(tuple((torch.randn(n, 16),) for n in sizes), path)
        streams.append((str(path), len(sizes)))
    worker = Worker()
    for stream, widths in streams:
        ready = worker.ask(side("program", str(program), files["inputs"], graph="compile-static",
                                stream=stream))
        assert ready["ok"], ready
        assert ready["stream_graphs"] == widths, ready
        assert finish(worker, files["dir"] / "static.pt")["ok"]
    assert worker.close() == 0


def test_a_function_past_its_recompile_limit_is_counted():
    """What a side checks after its warm pass: each time torch._dynamo ran a function eagerly
    because it reached the recompile limit."""
    sys.path.insert(0, os.path.abspath(PYTHON_DIR))
    import torch._dynamo
    from torchperf import worker

    def double(x):
        return x * 2

    before = worker.recompile_limit_hits()
    with torch._dynamo.config.patch(recompile_limit=1):
        compiled = torch.compile(double, backend="eager", dynamic=False)
        compiled(torch.ones(1))
        compiled(torch.ones(2))
    assert worker.recompile_limit_hits() == before + 1
    torch._dynamo.reset()


def test_the_allocator_record_names_glibcs_tuned_variables_so_a_tuned_point_is_not_shown_as_plain_glibc():
    """allocator=glibc-tuned is an environment, not a library: the record says which MALLOC_*
    variables the worker started with (stop 72 found such a point recorded as `glibc`)."""
    sys.path.insert(0, os.path.abspath(PYTHON_DIR))
    from torchperf import worker

    tuned = worker.mapped_allocator({"MALLOC_MMAP_MAX_": "0", "MALLOC_TOP_PAD_": "67108864", "HOME": "/"})
    assert tuned.endswith("(MALLOC_MMAP_MAX_=0, MALLOC_TOP_PAD_=67108864)")
    assert tuned.startswith("glibc") or "malloc" in tuned.split(" (")[0]
    plain = worker.mapped_allocator({"HOME": "/"})
    assert "(" not in plain and "MALLOC" not in plain


def test_a_served_call_reads_its_inputs_from_shared_memory_and_writes_its_outputs_there(files):
    """Issue 84: serve hosts a Python winner in this worker; a call's tensors cross in files both
    processes map, of any batch, and a call the model fails is answered without ending the
    worker, which serves the next."""
    worker = Worker()
    # TorchScript: any batch (the fixture's program was exported at batch 4).
    assert worker.ask(side("torchscript", files["torchscript"], files["inputs"]))["ok"]
    folder = files["dir"]
    model = torch.jit.load(files["torchscript"]).eval()
    for rows in (1, 7, 3):
        x = torch.randn(rows, 16)
        answer = call(worker, folder, (x,))
        assert answer["ok"], answer
        assert answer["peak_bytes"] == 0  # not asked
        (out,) = called_outputs(folder, answer)
        with torch.no_grad():
            assert torch.allclose(out, model(x), atol=1e-6)
    refused = call(worker, folder, (torch.randn(2, 5),))
    assert not refused["ok"] and refused["error"]["kind"] == "workload", refused
    assert "float32[2, 5]" in refused["error"]["message"], refused
    measured = call(worker, folder, (torch.randn(4096, 16),), measure_memory=True)
    assert measured["ok"], measured
    # 4096 x 8 fp32 outputs at least (the linear's, then relu's), counted by the worker.
    assert measured["peak_bytes"] >= 4096 * 8 * 4, measured
    worker.close()


def test_a_region_holds_tensors_of_every_dtype_the_server_carries(tmp_path):
    from torchperf import shared_region

    tensors = [torch.arange(6, dtype=d).reshape(2, 3) for d in
               (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                torch.int32, torch.int16, torch.int8, torch.uint8)]
    tensors += [torch.tensor([[True, False]]), torch.empty(0, 4)]
    path = tmp_path / "region"
    entries, size = shared_region.write_tensors(shared_region.Region(), str(path), tensors)
    assert all(e["offset"] % shared_region.ALIGN == 0 for e in entries)
    back = shared_region.read_tensors(shared_region.Region().mapped(str(path), size), entries)
    for a, b in zip(tensors, back):
        assert a.dtype == b.dtype and torch.equal(a, b)
    with pytest.raises(ValueError, match="lies past the region"):
        shared_region.read_tensors(shared_region.Region().mapped(str(path), size),
                                   [{"dtype": "float32", "shape": [size], "offset": 0}])
    with pytest.raises(ValueError, match="not a torch dtype"):
        shared_region.dtype_of("Tensor")
