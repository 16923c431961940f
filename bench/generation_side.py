"""One side of the generation bench, in a process of its own: a careful person's own lines on a
save_pretrained folder (HF generate eager fp32; eager bf16; static cache + torch.compile as
transformers documents it; OpenVINO through optimum-intel), or the settings torchperf's tune
crowned, applied with the same plain transformers lines its snippet prints. Greedy generate of
exactly NEW tokens, warmed, then CALLS timed calls; a streamer notes each token's arrival.

    python bench/generation_side.py FOLDER SIDE BATCH PROMPT NEW CALLS THREADS [SETTINGS_JSON]

Prints one line of JSON: decode tokens/s and time to first token, each call's and their medians.
"""

import json
import statistics
import sys
import time

import torch

HAND_SIDES = ("hf-eager-fp32", "eager-bf16", "static-compile", "openvino")


class Clock:
    def __init__(self):
        self.times, self.seen = [], False

    def put(self, value):
        if self.seen:
            self.times.append(time.perf_counter())
        self.seen = True

    def end(self):
        pass


def from_settings(folder, s):
    """The tune's winner in transformers' own lines (what generation_report's snippet says)."""
    if s.get("engine") == "openvino":
        from optimum.intel import OVModelForCausalLM, OVWeightQuantizationConfig

        q = None
        if s.get("weights") in ("int8-weight-only", "int4-weight-only"):
            q = OVWeightQuantizationConfig(bits=8 if s["weights"] == "int8-weight-only" else 4)
        config = {"INFERENCE_PRECISION_HINT": "bf16" if s.get("precision") == "bf16" else "f32",
                  "NUM_STREAMS": "1", "INFERENCE_NUM_THREADS": str(s.get("threads", 0))}
        return OVModelForCausalLM.from_pretrained(folder, export=True, ov_config=config,
                                                  quantization_config=q)
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype="float32").eval()
    if s.get("precision") in ("bf16", "fp16"):
        model = model.to(torch.bfloat16 if s["precision"] == "bf16" else torch.float16)
    if s.get("attention", "sdpa") != "sdpa":
        model.set_attn_implementation(s["attention"])
    if s.get("weights", "none") != "none":
        import torchao.quantization as q

        config = {"int8-weight-only": q.Int8WeightOnlyConfig(),
                  "int8-dynamic-activation": q.Int8DynamicActivationInt8WeightConfig()}[s["weights"]]
        q.quantize_(model, config)
    if s.get("cache") == "static":
        model.generation_config.cache_implementation = "static"
    mode = None if s.get("compile_mode", "default") == "default" else s["compile_mode"]
    fullgraph = s.get("fullgraph") == "on"
    if s.get("compile") == "decode":
        from transformers import CompileConfig

        model.generation_config.compile_config = CompileConfig(mode=mode, fullgraph=fullgraph)
        model.generation_config.compile_config._compile_all_devices = True
    elif s.get("compile") == "forward":
        model.forward = torch.compile(model.forward, mode=mode, fullgraph=fullgraph)
    return model


def by_hand(folder, side):
    """What a careful person writes for each hand side."""
    if side == "openvino":
        from optimum.intel import OVModelForCausalLM

        return OVModelForCausalLM.from_pretrained(folder, export=True)
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype="float32").eval()
    if side == "eager-bf16":
        model = model.to(torch.bfloat16)
    if side == "static-compile":
        # transformers' documentation: a static cache, and the forward compiled in full.
        model.generation_config.cache_implementation = "static"
        model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
    return model


def main():
    folder, side, batch, prompt, new, calls, threads = sys.argv[1:8]
    batch, prompt, new, calls, threads = int(batch), int(prompt), int(new), int(calls), int(threads)
    torch.set_num_threads(threads)
    settings = json.loads(sys.argv[8]) if len(sys.argv) > 8 else None
    model = from_settings(folder, settings) if settings else by_hand(folder, side)
    vocab = model.config.vocab_size
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (batch, prompt), generator=generator)
    mask = torch.ones_like(ids)

    def call():
        clock = Clock()
        start = time.perf_counter()
        model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new, min_new_tokens=new,
                       do_sample=False, pad_token_id=0, streamer=clock)
        return clock.times[0] - start, batch * (new - 1) / (clock.times[-1] - clock.times[0])

    started = time.perf_counter()
    call()
    first_s = time.perf_counter() - started
    call()
    ttft, rate = zip(*[call() for _ in range(calls)])
    print(json.dumps({"side": side, "decode_tokens_per_s": statistics.median(rate),
                      "ttft_s": statistics.median(ttft), "first_call_s": first_s,
                      "calls": {"decode_tokens_per_s": rate, "ttft_s": ttft}}))


if __name__ == "__main__":
    main()
