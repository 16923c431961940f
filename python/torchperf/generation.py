"""One text-generation point, or the fp32 eager reference the points are guarded against: a
`transformers` causal LM loaded as the user has it, configured, warmed, then its `generate` timed
token by token.

    python -m torchperf.generation REQUEST.json

REQUEST (written by the C++ side, src/generate/generation_point.cpp) names the model (a
`save_pretrained` folder, or MODULE:CALLABLE returning the model), the configuration (one value
per generation knob), the calls (each call's prompt lengths and new tokens), the warm-up calls
and, for a point, the reference file to judge it against. The answer is one line of JSON: each
timed call's timestamps reduced to prefill and decode times, the first calls' times (compiles),
memory, the bytes a decode step reads, and the guard's figures. Timing: a streamer's put() is
called by generate once per new token, after the token reached the host (`.cpu()`, which waits
for the device), so the gaps between puts are the steps' times as the caller sees them.
"""

import argparse
import json
import os
import sys
import time

from torchperf import _child
from torchperf import generation_model as lm


class StepClock:
    """A generate() streamer that notes when each new token reached the host."""

    def __init__(self):
        self.times = []
        self._prompt_seen = False

    def put(self, value):
        # generate's first put is the prompt itself; each later one is a step's new tokens.
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        self.times.append(time.perf_counter())

    def end(self):
        pass


def timed_call(model, call, vocab, settings):
    """One generate() call, its prompts drawn from the call's seed: start, token times, end."""
    ids, mask = lm.prompts(call["prompt_lengths"], vocab, call["seed"], model.device)
    clock = StepClock()
    lm.synchronize(model.device)
    start = time.perf_counter()
    out = lm.generate(model, ids, mask, call["new_tokens"], settings, streamer=clock)
    lm.synchronize(model.device)
    end = time.perf_counter()
    if len(clock.times) != call["new_tokens"]:
        raise RuntimeError(f"generate made {len(clock.times)} tokens, not the "
                           f"{call['new_tokens']} asked for")
    return {"start": start, "tokens": clock.times, "end": end,
            "new_tokens": int(out.shape[1] - ids.shape[1])}


def call_figures(stamps, batch):
    """A call's timestamps as the peers report them: time to first token (the prefill and its
    token), the decode's steps (each later token), end to end."""
    tokens = stamps["tokens"]
    steps = [b - a for a, b in zip(tokens, tokens[1:])]
    decode_s = tokens[-1] - tokens[0] if len(tokens) > 1 else 0.0
    return {"ttft_s": tokens[0] - stamps["start"], "decode_s": decode_s, "steps_s": steps,
            "end_to_end_s": stamps["end"] - stamps["start"], "batch": batch,
            "new_tokens": len(tokens)}


def measure(model, request, settings):
    """Warm-up calls (their times kept apart: the first pays the compiles), then the timed calls."""
    vocab = lm.vocabulary(model)
    warmup = []
    for call in request["warmup_calls"]:
        stamps = timed_call(model, call, vocab, settings)
        warmup.append(stamps["end"] - stamps["start"])
    calls = []
    for call in request["calls"]:
        calls.append(call_figures(timed_call(model, call, vocab, settings),
                                  len(call["prompt_lengths"])))
    return warmup, calls


def guard_outputs(model, request, settings):
    """The guard call's greedy tokens and the logits of each step (prefill first)."""
    guard = request["guard"]
    ids, mask = lm.prompts(guard["prompt_lengths"], lm.vocabulary(model), guard["seed"],
                           model.device)
    out = lm.generate(model, ids, mask, guard["new_tokens"], settings, logits=True)
    import torch

    tokens = out.sequences[:, ids.shape[1]:].cpu()
    logits = torch.stack([step.float().cpu() for step in out.logits], dim=1)
    return tokens, logits


def judged(tokens, logits, reference_path):
    """The guard's figures against the reference: the prefill's logits, the first decode step's
    where the first token agreed (teacher-forced by the agreement), the greedy tokens' agreement."""
    import torch

    ref = torch.load(reference_path)
    ref_tokens, ref_logits = ref["tokens"], ref["logits"]
    steps = min(tokens.shape[1], ref_tokens.shape[1])
    same = tokens[:, :steps] == ref_tokens[:, :steps]
    # The first step where any row's token differs: the steps before it were fed the same text.
    differing = (~same).any(dim=0).nonzero()
    agreed_steps = int(differing[0]) if len(differing) else steps
    figures = {"token_agreement": float(same.float().mean()), "agreed_steps": agreed_steps,
               "steps_compared": steps,
               "prefill": lm.logit_errors(ref_logits[:, 0], logits[:, 0])}
    if agreed_steps >= 1 and steps >= 2:
        figures["decode_step"] = lm.logit_errors(ref_logits[:, 1], logits[:, 1])
    return figures


def loaded(request, settings):
    """The point's model, configured: PyTorch's, or the one optimum-intel exported to OpenVINO."""
    if settings.get("engine") == "openvino":
        import tempfile

        with tempfile.TemporaryDirectory(prefix="torchperf-ov-") as folder:
            model = lm.load_openvino(request["source"], settings, folder, request.get("cache_dir"))
        lm.check_workload(model, request)
        return model
    return lm.configured(lm.load(request["source"], request.get("device", "cpu")), settings,
                         request)


def run_point(request):
    settings = request["configuration"]
    lm.set_threads(settings)
    started = time.perf_counter()
    model = loaded(request, settings)
    load_s = time.perf_counter() - started
    lm.reset_peak(model.device)
    warmup, calls = measure(model, request, settings)
    answer = {"load_s": load_s, "warmup_s": warmup, "calls": calls,
              "memory": lm.memory(model, settings, request),
              "step_bytes": lm.decode_step_bytes(model, settings, request),
              "device": str(model.device), "code": lm.snippet(settings)}
    if request.get("reference"):
        tokens, logits = guard_outputs(model, request, settings)
        answer["guard"] = judged(tokens, logits, request["reference"])
    return answer


def run_reference(request):
    """The fp32 eager model's greedy tokens and step logits on the guard call, saved."""
    import torch

    model = lm.load(request["source"], request.get("device", "cpu"))
    lm.check_workload(model, request)
    settings = {"cache": "dynamic", "precision": "fp32"}
    tokens, logits = guard_outputs(model, request, settings)
    torch.save({"tokens": tokens, "logits": logits}, request["out"])
    return {"model": lm.describe(model), "steps": int(tokens.shape[1])}


def main():
    parser = argparse.ArgumentParser(prog="torchperf.generation")
    parser.add_argument("request")
    args = parser.parse_args()
    with open(args.request) as f:
        request = json.load(f)
    try:
        answer = run_reference(request) if request.get("job") == "reference" else run_point(request)
    except lm.GenerationError as e:
        _child.fail(e.kind.exit_code, str(e))
    except Exception as e:
        if _child.is_out_of_memory(e):
            _child.fail(_child.OUT_OF_MEMORY, f"out of memory generating: {_child.concise(e)}")
        _child.fail(_child.REJECTED_INPUTS, f"generate failed: {_child.concise(e)}")
    _child.answer(**answer)


if __name__ == "__main__":
    sys.exit(main())
