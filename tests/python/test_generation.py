"""python/torchperf/generation.py, the child program of a generation point, run as the core runs
it: a real small decoder's generate timed token by token, the reference and the guard, and each
bad input refused in one line with its exit code."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("transformers", reason="transformers is not installed in this Python")

from torchperf import generation_model as lm  # noqa: E402
from torchperf.error_kinds import ErrorKind  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def run(request, tmp_path):
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.join(HERE, "..", "..", "python"), HERE]))
    done = subprocess.run([sys.executable, "-m", "torchperf.generation", str(path)],
                          capture_output=True, text=True, env=env, cwd=HERE, timeout=300)
    lines = done.stdout.strip().splitlines()
    return done.returncode, json.loads(lines[-1]) if lines else None, done.stderr.strip()


def call(lengths, new_tokens, seed):
    return {"prompt_lengths": lengths, "new_tokens": new_tokens, "seed": seed}


def point(factory, settings, tmp_path, reference=None, calls=None):
    request = {"job": "point", "source": {"kind": "python", "spec": f"decoder_models:{factory}"},
               "configuration": settings, "warmup_calls": [call([8, 8], 6, 1)],
               "calls": calls or [call([8, 8], 6, 2), call([12, 5], 6, 3)]}
    if reference:
        request["reference"] = reference
        request["guard"] = call([10, 7, 9], 6, 9)
    return run(request, tmp_path)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reference")
    out = str(folder / "reference.pt")
    code, answer, err = run({"job": "reference", "out": out,
                             "source": {"kind": "python", "spec": "decoder_models:tiny_llama"},
                             "guard": call([10, 7, 9], 6, 9), "calls": [call([8], 6, 2)]}, folder)
    assert code == 0, err
    assert answer["model"]["kv_heads"] == 2 and answer["steps"] == 6
    return out


def test_each_call_is_timed_token_by_token_with_its_prefill_apart(tmp_path, reference):
    code, answer, err = point("tiny_llama", {"cache": "dynamic", "threads": 1}, tmp_path, reference)
    assert code == 0, err
    assert len(answer["calls"]) == 2 and len(answer["warmup_s"]) == 1
    for c in answer["calls"]:
        assert c["new_tokens"] == 6 and c["batch"] == 2
        assert len(c["steps_s"]) == 5
        assert 0 < c["ttft_s"] < c["end_to_end_s"]
        assert c["decode_s"] == pytest.approx(sum(c["steps_s"]), rel=1e-6)
    # The same model in fp32 eager is the reference itself: the same tokens and logits.
    guard = answer["guard"]
    assert guard["token_agreement"] == 1.0 and guard["agreed_steps"] == 6
    assert guard["prefill"]["max_abs_error"] == 0.0
    assert answer["step_bytes"]["weights"] < answer["memory"]["weights_bytes"]
    assert answer["code"] == lm.snippet({"cache": "dynamic", "threads": 1})


def test_a_static_cache_reads_its_whole_length_each_step_and_int8_weights_read_fewer_bytes(
        tmp_path, reference):
    code, dynamic, err = point("tiny_llama", {"cache": "dynamic"}, tmp_path)
    assert code == 0, err
    code, static, err = point("tiny_llama", {"cache": "static", "weights": "int8-weight-only"},
                              tmp_path, reference)
    assert code == 0, err
    assert static["step_bytes"]["kv_cache"] > dynamic["step_bytes"]["kv_cache"]
    assert static["step_bytes"]["weights"] < dynamic["step_bytes"]["weights"] / 2
    assert static["guard"]["prefill"]["cosine"] > 0.99


def test_a_gpt2_style_model_with_tied_embeddings_counts_its_output_layer_once(tmp_path):
    code, answer, err = point("tiny_gpt2", {"precision": "fp32"}, tmp_path)
    assert code == 0, err
    assert answer["step_bytes"]["weights"] <= answer["memory"]["weights_bytes"]


def test_a_model_without_generate_is_refused_naming_it(tmp_path):
    code, _, err = point("not_an_lm", {}, tmp_path)
    assert code == ErrorKind.MODEL.exit_code
    assert "'decoder_models:not_an_lm' (Linear) has no generate" in err.splitlines()[-1]


def test_prompts_past_the_models_positions_are_refused_with_the_figures(tmp_path):
    code, _, err = point("tiny_llama", {}, tmp_path, calls=[call([120], 16, 1)])
    assert code == ErrorKind.WORKLOAD.exit_code
    assert "need 136 positions; the model has 128" in err.splitlines()[-1]


def test_a_static_cache_larger_than_the_memory_left_is_refused_before_it_is_allocated(tmp_path):
    code, _, err = point("long_llama", {"cache": "static"}, tmp_path,
                         calls=[call([3_000_000] * 64, 8, 1)])
    assert code == ErrorKind.RESOURCE_LIMIT.exit_code
    assert "cache=static: 64 rows of 3000008 positions need" in err.splitlines()[-1]
    assert "MiB are left" in err


def test_an_engine_not_installed_is_refused_naming_what_to_install(tmp_path, monkeypatch):
    if lm.optimum_installed():
        pytest.skip("optimum-intel is installed here")
    code, _, err = point("tiny_llama", {"engine": "openvino"}, tmp_path)
    assert code == ErrorKind.CONFIG.exit_code
    assert "optimum-intel is not installed" in err.splitlines()[-1]


def test_the_snippet_is_made_from_the_tables_the_points_configure_with():
    assert lm.weight_config_code("int8-weight-only") == "Int8WeightOnlyConfig()"
    assert lm.weight_config_code("int4-weight-only") == (
        "Int4WeightOnlyConfig(group_size=128, int4_packing_format='tile_packed_to_4d')")
    code = lm.snippet({"engine": "pytorch", "precision": "bf16", "weights": "int8-weight-only",
                       "cache": "static", "compile": "decode", "compile_mode": "default",
                       "fullgraph": "on", "threads": "2"})
    for line in ("torch.set_num_threads(2)", "model = model.to(torch.bfloat16)",
                 "quantize_(model, Int8WeightOnlyConfig())",
                 "cache_implementation = 'static'", "CompileConfig(fullgraph=True)"):
        assert line in code, code
    forward = lm.snippet({"compile": "forward", "compile_mode": "max-autotune"})
    assert "model.forward = torch.compile(model.forward, mode='max-autotune')" in forward
    ov = lm.snippet({"engine": "openvino", "weights": "int4-weight-only", "precision": "bf16",
                     "threads": "2"})
    assert "OVModelForCausalLM.from_pretrained(path, export=True" in ov
    assert "OVWeightQuantizationConfig(bits=4)" in ov
    assert repr(lm.openvino_config({"precision": "bf16", "threads": "2"})) in ov
    # Every line is Python that parses.
    for text in (code, forward, ov):
        compile(text, "snippet", "exec")


def test_openvino_through_optimum_intel_generates_the_same_text_with_its_weights_counted(
        tmp_path, reference):
    if not lm.optimum_installed():
        pytest.skip("optimum-intel is not installed here (an extra: bench/requirements-generation.txt)")
    code, answer, err = point("tiny_llama", {"engine": "openvino", "threads": 1}, tmp_path, reference)
    assert code == 0, err
    assert answer["guard"]["token_agreement"] == 1.0
    assert answer["guard"]["prefill"]["cosine"] > 0.999
    assert answer["memory"]["weights_bytes"] > 0
    assert all(len(c["steps_s"]) == 5 for c in answer["calls"])
