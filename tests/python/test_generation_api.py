"""torchperf.tune_generation on a model object (the core a child process, as for tune): the
model saved and tuned, its winner applied to the caller's own model so that its generate runs it,
and the result saved and loaded back."""

import os
import sys

import pytest

pytest.importorskip("transformers", reason="transformers is not installed in this Python")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import decoder_models  # noqa: E402

import torchperf  # noqa: E402

SPACE = {"engine": "pytorch", "precision": "fp32", "weights": "none", "cache": "static",
         "compile": "off", "threads": 1}


def test_a_model_object_is_tuned_and_its_own_generate_runs_the_winner(tmp_path):
    model = decoder_models.tiny_llama()
    result = torchperf.tune_generation(model, prompt=8, new_tokens=4, batch=1, space=SPACE,
                                       calls=3, budget="2m", out=str(tmp_path / "run"),
                                       progress=False)
    assert len(result.points) == 1 and result.points[0]["measured"]
    assert result.winner is not None
    assert "tok/s" in str(result)
    applied = result.apply(model)
    assert result.applied_agreement == 1.0
    # The winner's static cache is now the caller's model's own generation_config.
    assert applied is model and model.generation_config.cache_implementation == "static"
    saved = result.save(str(tmp_path / "kept"))
    again = torchperf.load_generation(saved)
    assert again.winner["label"] == result.winner["label"]
    assert os.path.isfile(os.path.join(saved, "model", "config.json"))


def test_a_model_without_generate_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(ValueError, match="has no generate and save_pretrained"):
        torchperf.tune_generation(decoder_models.not_an_lm(), out=str(tmp_path / "run"))
    assert not os.path.exists(tmp_path / "run")
