"""Text generation from Python: a transformers causal LM object tuned as `torchperf tune hf:PATH`
tunes it (each point in a worker process of the C++ core's), and the winner applied to the
caller's own model so that its own `generate` runs it.

    result = torchperf.tune_generation(model, prompt=128, new_tokens=64, batch=1, budget="5m")
    print(result)                  # the table: decode tokens/s, TTFT, TPOT, memory, the guard
    model = result.apply(model)    # then model.generate(...) runs the winner

The model reaches the core as the folder save_pretrained writes (inside the run's folder, so that
an OpenVINO winner is exported from it again by apply)."""

import json
import os
import shutil

from torchperf import _core
from torchperf import generation_model as lm
from torchperf.errors import TorchperfError


def _checked(model):
    if not callable(getattr(model, "generate", None)) or not hasattr(model, "save_pretrained"):
        raise ValueError(f"model ({type(model).__name__}) has no generate and save_pretrained: "
                         "expected a transformers causal LM (a PreTrainedModel with GenerationMixin)")


def _args(folder, out, prompt, new_tokens, batch, budget, space, slo, threads, calls):
    batches = batch if isinstance(batch, (list, tuple)) else [batch]
    args = ["tune", "hf:" + folder, "--prompt", str(prompt), "--new-tokens", str(new_tokens),
            "--batch", ",".join(str(b) for b in batches), "--out", out, "--json", "--quiet",
            "--calls", str(calls)]
    if budget is not None:
        args += ["--budget", f"{budget}s" if isinstance(budget, (int, float)) else str(budget)]
    if space:
        args += ["--space", space if isinstance(space, str) else ";".join(
            f"{k}={','.join(str(x) for x in (v if isinstance(v, (list, tuple)) else [v]))}"
            for k, v in space.items())]
    if slo:
        args += ["--slo", slo]
    if threads:
        args += ["--threads", ",".join(str(t) for t in (threads if isinstance(threads, (list, tuple))
                                                          else [threads]))]
    return args


def tune_generation(model, *, prompt=128, new_tokens=64, batch=1, budget=None, space=None,
                    slo=None, threads=None, calls=6, out=None, progress=True):
    """Tunes model's generate: prompt is a length or a distribution ("32..512"), batch one or a
    list, space the generation knobs' values ({"cache": ["dynamic", "static"]}), slo a latency
    objective ("ttft=500ms,tpot=30ms" or an MLPerf preset). Returns a GenerationResult."""
    _checked(model)
    out = os.path.abspath(out or os.path.join(
        "torchperf-runs", f"{type(model).__name__}-generate"))
    folder = os.path.join(out, "model")
    if not os.path.isfile(os.path.join(folder, "config.json")):
        os.makedirs(out, exist_ok=True)
        model.save_pretrained(folder)
    stdout, _ = _core.run(_args(folder, out, prompt, new_tokens, batch, budget, space, slo,
                                threads, calls), progress=progress, allow_exit=(3,))
    return GenerationResult(json.loads(stdout), out)


class GenerationResult:
    """A generation tune's answer: its points, its winner, the transformers code, apply()."""

    def __init__(self, answer, folder):
        self.answer = answer
        self.folder = folder

    @property
    def points(self):
        return self.answer["points"]

    @property
    def winner(self):
        """The winner's point (its settings, batch and figures), or None."""
        index = self.answer.get("winner")
        return None if index is None else self.points[index]

    @property
    def snippet(self):
        return self.answer.get("snippet", "")

    def __str__(self):
        lines = []
        for p in sorted((p for p in self.points if p["measured"]),
                        key=lambda p: (p["batch"], -p["decode_tokens_per_s"]["median"])):
            mark = " *" if p is self.winner else ""
            lines.append(f"batch {p['batch']:3}  {p['decode_tokens_per_s']['median']:9.1f} tok/s  "
                         f"TTFT {p['ttft_s']['median'] * 1e3:7.1f} ms  "
                         f"TPOT {p['tpot_s']['median'] * 1e3:6.2f} ms  {p['label']}{mark}")
        return "\n".join(lines + [""] + [f"note: {n}" for n in self.answer.get("notes", [])])

    def apply(self, model):
        """The caller's model configured to run the winner (in place for PyTorch's settings: its
        precision, torchao's quantize_, its generation_config, its compiled forward; an OpenVINO
        winner is a new OVModelForCausalLM exported from the tune's folder), checked here: a short
        greedy generate before and after, whose tokens must be finite and are compared."""
        if self.winner is None:
            raise TorchperfError("the tune crowned no winner: nothing to apply")
        settings = dict(self.winner["settings"])
        import torch

        ids = torch.randint(0, lm.vocabulary(model), (2, 8), generator=torch.Generator().manual_seed(0))
        mask = torch.ones_like(ids)
        before = lm.generate(model, ids, mask, 4, {})
        lm.set_threads(settings)
        if settings.get("engine") == "openvino":
            import tempfile

            with tempfile.TemporaryDirectory(prefix="torchperf-ov-") as scratch:
                model = lm.load_openvino({"kind": "hf", "path": os.path.join(self.folder, "model")},
                                         settings, scratch)
        else:
            model = lm.configured(model, settings, {})
        after = lm.generate(model, ids, mask, 4, {})
        self.applied_agreement = float((after == before).float().mean())
        if self.applied_agreement < 1:
            import warnings

            warnings.warn(f"the applied winner's greedy tokens agree with the model's own on "
                          f"{self.applied_agreement:.0%} of a short check (the tune's guard: "
                          f"{self.winner.get('guard', {}).get('token_agreement', '?')})")
        return model

    def save(self, path):
        """The run's folder (journal, reference, the saved model, result.json) copied to path."""
        if os.path.abspath(path) != self.folder:
            shutil.copytree(self.folder, path, dirs_exist_ok=True)
        with open(os.path.join(path, "result.json"), "w") as f:
            json.dump(self.answer, f, indent=1)
        return path


def load_generation(path):
    """A GenerationResult saved by save(), or the folder a generation tune wrote."""
    with open(os.path.join(path, "result.json")) as f:
        return GenerationResult(json.load(f), os.path.abspath(path))
