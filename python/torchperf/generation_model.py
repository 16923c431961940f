"""A `transformers` causal LM as a generation point runs it: loaded as the user has it (a
`save_pretrained` folder, or MODULE:CALLABLE returning the model), configured by the generation
knobs (precision, attention, torchao weights, KV cache, torch.compile), fed prompts of token ids
drawn from a seed, and its `generate` called greedily for an exact number of new tokens. Also
what a point reports beside its times: weights and KV-cache bytes, and logits' errors."""

import os
import resource

from torchperf.error_kinds import ErrorKind


class GenerationError(Exception):
    """A failure with its kind (its exit code) and one line for the user."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


# torch.compile's modes as a generation point names them (compile_mode=...).
COMPILE_MODES = {"default": None, "reduce-overhead": "reduce-overhead",
                 "max-autotune": "max-autotune",
                 "max-autotune-no-cudagraphs": "max-autotune-no-cudagraphs"}
# torchao's config for each value of the weights knob: its class and arguments, from which both
# the point's config and the snippet's line are made. int4:
# tinygemm's tile packing, which has a CUDA kernel only (torchao 0.18 has no CPU int4 kernel).
WEIGHT_CONFIGS = {"int8-weight-only": ("Int8WeightOnlyConfig", {}),
                  "int8-dynamic-activation": ("Int8DynamicActivationInt8WeightConfig", {}),
                  "int4-weight-only": ("Int4WeightOnlyConfig",
                                       {"group_size": 128, "int4_packing_format": "tile_packed_to_4d"})}


# NNCF's weight compression for each weights value OpenVINO takes (OVWeightQuantizationConfig).
OPENVINO_BITS = {"int8-weight-only": 8, "int4-weight-only": 4}
GENERATE_LINE = "out = model.generate(input_ids, attention_mask=mask, max_new_tokens=N, do_sample=False)"


def weight_config_code(weights):
    """The config as a user writes it: Int4WeightOnlyConfig(group_size=32, ...)."""
    name, arguments = WEIGHT_CONFIGS[weights]
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"


def snippet(settings):
    """The transformers lines that run these settings in a user's program, made from the tables the
    points themselves configure with: a point's answer carries them, the report prints the winner's."""
    weights = settings.get("weights", "none")
    if settings.get("engine") == "openvino":
        args = ["export=True"]
        if weights != "none":
            args.append(f"quantization_config=OVWeightQuantizationConfig(bits={OPENVINO_BITS[weights]})")
        args.append(f"ov_config={openvino_config(settings)!r}")
        return "\n".join(["from optimum.intel import OVModelForCausalLM, OVWeightQuantizationConfig",
                          f"model = OVModelForCausalLM.from_pretrained(path, {', '.join(args)})",
                          GENERATE_LINE]) + "\n"
    lines = ["import torch"]
    if settings.get("threads"):
        lines.append(f"torch.set_num_threads({int(settings['threads'])})")
    precision = settings.get("precision", "fp32")
    if precision != "fp32":
        lines.append(f"model = model.to({dtype_of(precision)})")
    if settings.get("attention", "sdpa") != "sdpa":
        lines.append(f"model.set_attn_implementation({settings['attention']!r})")
    if weights != "none":
        lines.append(f"from torchao.quantization import quantize_, {WEIGHT_CONFIGS[weights][0]}")
        lines.append(f"quantize_(model, {weight_config_code(weights)})")
    if settings.get("cache") == "static":
        lines.append("model.generation_config.cache_implementation = 'static'")
    compiled = compile_settings(settings)
    args = ([f"mode={compiled['mode']!r}"] if compiled["mode"] else []) + \
        (["fullgraph=True"] if compiled["fullgraph"] else [])
    if settings.get("compile") == "decode":
        lines += ["from transformers import CompileConfig",
                  f"model.generation_config.compile_config = CompileConfig({', '.join(args)})",
                  "# transformers compiles the decode step by itself on CUDA; elsewhere:",
                  "model.generation_config.compile_config._compile_all_devices = True"]
    elif settings.get("compile") == "forward":
        lines.append(f"model.forward = torch.compile({', '.join(['model.forward'] + args)})")
    return "\n".join(lines + [GENERATE_LINE]) + "\n"


def dtype_of(precision):
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def load(source, device="cpu"):
    """The model in fp32 on device, eval mode; GenerationError(MODEL) when it cannot generate."""
    import torch

    if source["kind"] == "hf":
        model = _from_folder(source["path"])
        what = f"'hf:{source['path']}'"
    else:
        from torchperf import export_source

        reference = source["spec"]
        model = export_source.build_model(reference, export_source.load_callable(reference))
        what = f"'{reference}'"
    if not callable(getattr(model, "generate", None)) or not hasattr(model, "generation_config"):
        raise GenerationError(ErrorKind.MODEL, f"model {what} ({type(model).__name__}) has no "
                              "generate: expected a transformers causal LM (a GenerationMixin)")
    return model.to(device=device, dtype=torch.float32).eval()


def _from_folder(path):
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise GenerationError(ErrorKind.MODEL, f"model 'hf:{path}': no config.json there; expected "
                              "a folder written by save_pretrained")
    from transformers import AutoModelForCausalLM

    try:
        return AutoModelForCausalLM.from_pretrained(path, dtype="float32")
    except (ValueError, OSError, KeyError) as e:
        first = " ".join(str(e).split())[:300]
        raise GenerationError(ErrorKind.MODEL, f"model 'hf:{path}' does not load as a causal LM: "
                              f"{first}") from e


def optimum_installed():
    import importlib.util

    return importlib.util.find_spec("optimum") is not None and \
        importlib.util.find_spec("optimum.intel") is not None


def openvino_config(settings):
    """OpenVINO's properties for a point: its precision hint and threads, one stream (a generate
    call is one request at a time)."""
    config = {"INFERENCE_PRECISION_HINT": "bf16" if settings.get("precision") == "bf16" else "f32",
              "NUM_STREAMS": "1"}
    if settings.get("threads"):
        config["INFERENCE_NUM_THREADS"] = str(settings["threads"])
    return config


def load_openvino(source, settings, folder, cache_dir=None):
    """The model exported by optimum-intel to OpenVINO (a stateful KV cache inside the graph), its
    weights compressed by NNCF where the weights knob asks; a factory's model is saved to folder
    first, as optimum-intel exports from a folder. With cache_dir, an export is saved there once
    per weights value and loaded again by the points after it (precision and threads are the
    compiled model's properties, not the export's)."""
    if not optimum_installed():
        raise GenerationError(ErrorKind.CONFIG, "engine=openvino: optimum-intel is not installed "
                              "(pip install 'optimum-intel[openvino]')")
    from optimum.intel import OVModelForCausalLM, OVWeightQuantizationConfig

    weights = settings.get("weights", "none")
    cached = os.path.join(cache_dir, f"openvino-{weights}") if cache_dir else None
    if cached and os.path.isfile(os.path.join(cached, "openvino_model.xml")):
        return OVModelForCausalLM.from_pretrained(cached, ov_config=openvino_config(settings))
    path = source.get("path")
    if source["kind"] != "hf":
        model = load(source)
        path = os.path.join(folder, "model")
        model.save_pretrained(path)
    quantization = None
    if weights in OPENVINO_BITS:
        quantization = OVWeightQuantizationConfig(bits=OPENVINO_BITS[weights])
    try:
        model = OVModelForCausalLM.from_pretrained(path, export=True,
                                                   ov_config=openvino_config(settings),
                                                   quantization_config=quantization)
    except Exception as e:
        from torchperf import _child

        raise GenerationError(ErrorKind.COMPILE, f"engine=openvino: optimum-intel could not export "
                              f"the model ({_child.concise(e)})") from e
    if cached:
        import shutil

        # Whole or absent: a killed point leaves no half of an export for the next to load.
        shutil.rmtree(cached + ".partial", ignore_errors=True)
        model.save_pretrained(cached + ".partial")
        shutil.rmtree(cached, ignore_errors=True)
        os.replace(cached + ".partial", cached)
    return model


def is_openvino(model):
    return hasattr(model, "request") and hasattr(model, "model") and not hasattr(model, "parameters")


def text_config(model):
    config = model.config
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def vocabulary(model):
    return int(text_config(model).vocab_size)


def longest_position(model):
    config = text_config(model)
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def calls_of(request):
    return list(request.get("warmup_calls", [])) + list(request.get("calls", [])) + \
        ([request["guard"]] if request.get("guard") else [])


def check_workload(model, request):
    """Prompts and new tokens the model can hold, said before anything is allocated."""
    limit = longest_position(model)
    for call in calls_of(request):
        if call["new_tokens"] < 1:
            raise GenerationError(ErrorKind.WORKLOAD, "new tokens: 0; expected at least 1")
        total = max(call["prompt_lengths"]) + call["new_tokens"]
        if limit is not None and total > limit:
            raise GenerationError(ErrorKind.WORKLOAD, f"a prompt of {max(call['prompt_lengths'])} "
                                  f"tokens and {call['new_tokens']} new ones need {total} positions; "
                                  f"the model has {limit} (max_position_embeddings)")


def kv_geometry(model):
    """Layers, key-value heads and the head's size, from the model's config."""
    config = text_config(model)
    layers = config.num_hidden_layers
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return layers, kv_heads, head_dim


def kv_bytes_per_token(model, precision):
    """Bytes a row's cache holds per position: a key and a value per layer and key-value head."""
    import torch

    layers, kv_heads, head_dim = kv_geometry(model)
    itemsize = torch.empty((), dtype=dtype_of(precision)).element_size()
    return 2 * layers * kv_heads * head_dim * itemsize


def tensor_bytes(t):
    """A tensor's storage, the inner tensors of a torchao subclass (int8 data, scales) counted."""
    if hasattr(t, "__tensor_flatten__"):
        names, _ = t.__tensor_flatten__()
        return sum(tensor_bytes(getattr(t, n)) for n in names)
    return t.numel() * t.element_size()


def weight_bytes(model):
    """All parameters and buffers once each (tied weights are one); an OpenVINO model's
    constants."""
    if is_openvino(model):
        return sum(op.get_byte_size() for op in model.model.get_ops()
                   if op.get_type_name() == "Constant")
    seen, total = set(), 0
    for t in list(model.parameters()) + list(model.buffers()):
        key = id(t)
        if key not in seen:
            seen.add(key)
            total += tensor_bytes(t)
    return total


def read_weight_bytes(model):
    """What a decode step reads of the weights: all of them but the input embedding table, of
    which it reads a row per token (unless the output layer shares it and reads it whole)."""
    total = weight_bytes(model)
    if is_openvino(model):
        return total  # its graph's constants, the embedding table among them
    inputs = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    outputs = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if inputs is not None and hasattr(inputs, "weight"):
        tied = outputs is not None and getattr(outputs, "weight", None) is inputs.weight
        if not tied:
            total -= tensor_bytes(inputs.weight)
    return total


def static_cache_check(model, settings, request):
    """A static cache is allocated whole at its size: refused, with the figures, when its bytes
    pass the memory left."""
    if settings.get("cache") != "static" or not calls_of(request):
        return
    longest = max(max(c["prompt_lengths"]) + c["new_tokens"] for c in calls_of(request))
    batch = max(len(c["prompt_lengths"]) for c in calls_of(request))
    need = kv_bytes_per_token(model, settings.get("precision", "fp32")) * longest * batch
    left = available_bytes(model.device)
    if left is not None and need > left:
        raise GenerationError(ErrorKind.RESOURCE_LIMIT,
                              f"cache=static: {batch} rows of {longest} positions need "
                              f"{need / 2**20:.0f} MiB of KV cache; {left / 2**20:.0f} MiB are left")


def available_bytes(device):
    import torch

    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return free
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def set_threads(settings):
    import torch

    if settings.get("threads"):
        torch.set_num_threads(int(settings["threads"]))


def quantize_weights(model, weights):
    """torchao's quantize_ on the model's nn.Linear layers, in place."""
    import torchao.quantization

    name, arguments = WEIGHT_CONFIGS[weights]
    try:
        torchao.quantization.quantize_(model, getattr(torchao.quantization, name)(**arguments))
    except Exception as e:
        from torchperf import _child

        raise GenerationError(ErrorKind.CONFIG, f"weights={weights}: torchao's quantize_ failed "
                              f"({_child.concise(e)})") from e


def compile_settings(settings):
    mode = COMPILE_MODES[settings.get("compile_mode", "default")]
    return {"mode": mode, "fullgraph": settings.get("fullgraph") == "on"}


def configured(model, settings, request):
    """The model with the point's settings applied, as a user would in their own program."""
    check_workload(model, request)
    static_cache_check(model, settings, request)
    model = model.to(dtype_of(settings.get("precision", "fp32")))
    if settings.get("attention") and hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(settings["attention"])
    if settings.get("weights", "none") != "none":
        quantize_weights(model, settings["weights"])
    config = model.generation_config
    if settings.get("cache") == "static":
        config.cache_implementation = "static"
    compile_what = settings.get("compile", "off")
    if compile_what == "decode":
        # transformers compiles its decode step (not the prefill) when the cache is static; it
        # does so on CUDA by itself and elsewhere when told to.
        from transformers import CompileConfig

        config.compile_config = CompileConfig(**compile_settings(settings))
        config.compile_config._compile_all_devices = True
    elif compile_what == "forward":
        import torch

        # What transformers' documentation shows: the forward compiled, prefill and decode both.
        model.forward = torch.compile(model.forward, **compile_settings(settings))
    return model


def pad_id(model):
    config = model.generation_config
    for value in (config.pad_token_id, config.eos_token_id, 0):
        if isinstance(value, list):
            value = value[0] if value else None
        if value is not None:
            return int(value)
    return 0


def prompts(lengths, vocab, seed, device):
    """Token ids drawn from seed, one row per length, left-padded (as generate wants) with a mask."""
    import torch

    generator = torch.Generator().manual_seed(int(seed))
    longest = max(lengths)
    ids = torch.zeros((len(lengths), longest), dtype=torch.long)
    mask = torch.zeros((len(lengths), longest), dtype=torch.long)
    for row, n in enumerate(lengths):
        ids[row, longest - n:] = torch.randint(0, vocab, (n,), generator=generator)
        mask[row, longest - n:] = 1
    return ids.to(device), mask.to(device)


def generate(model, ids, mask, new_tokens, settings, streamer=None, logits=False):
    """Greedy generate for exactly new_tokens tokens (the end-of-text token held back)."""
    import torch

    with torch.no_grad():
        return model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new_tokens,
                              min_new_tokens=new_tokens, do_sample=False,
                              pad_token_id=pad_id(model), streamer=streamer,
                              output_logits=logits, return_dict_in_generate=logits)


def synchronize(device):
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reset_peak(device):
    import torch

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def memory(model, settings, request):
    """Weights and the largest call's KV cache as counted from the model, and the peak the process
    reached (the CUDA allocator's on a GPU; the resident set on the CPU, load included)."""
    import torch

    calls = calls_of(request)
    longest = max(max(c["prompt_lengths"]) + c["new_tokens"] for c in calls)
    batch = max(len(c["prompt_lengths"]) for c in calls)
    facts = {"weights_bytes": weight_bytes(model),
             "kv_cache_bytes": kv_bytes_per_token(model, settings.get("precision", "fp32"))
             * longest * batch}
    if model.device.type == "cuda":
        facts["peak_bytes"] = torch.cuda.max_memory_allocated(model.device)
        facts["peak_counts"] = "the CUDA allocator's peak while generating"
    else:
        facts["peak_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        facts["peak_counts"] = "the process's peak resident set, loading included"
    return facts


def decode_step_bytes(model, settings, request):
    """What a decode step reads, on average over the timed calls' steps: the weights (read_weight_
    bytes) and the KV cache (a dynamic cache's positions so far; a static cache's whole length,
    which attention reads masked)."""
    per_token = kv_bytes_per_token(model, settings.get("precision", "fp32"))
    kv = []
    for call in request["calls"]:
        prompt, new, rows = max(call["prompt_lengths"]), call["new_tokens"], len(call["prompt_lengths"])
        for step in range(1, new):
            positions = prompt + new if settings.get("cache") == "static" else prompt + step
            kv.append(per_token * positions * rows)
    mean_kv = sum(kv) / len(kv) if kv else 0
    return {"weights": read_weight_bytes(model), "kv_cache": mean_kv,
            "counts": "weights but the input embedding table, once per step; the KV cache "
                      "positions attention reads, per row"}


def logit_errors(reference, candidate):
    """The same figures as the C++ guard (models/accuracy.h) for two [rows, vocab] logits."""
    import torch

    reference, candidate = reference.float(), candidate.float()
    diff = (reference - candidate).abs()
    scale = reference.abs().max().item() or 1.0
    cosine = torch.nn.functional.cosine_similarity(reference.flatten(), candidate.flatten(), dim=0)
    return {"max_abs_error": diff.max().item(), "max_rel_error": diff.max().item() / scale,
            "cosine": cosine.item(),
            "top1_agreement": (reference.argmax(-1) == candidate.argmax(-1)).float().mean().item(),
            "nonfinite_values": int((~torch.isfinite(candidate)).sum())}


def describe(model):
    layers, kv_heads, head_dim = kv_geometry(model)
    return {"class": type(model).__name__, "layers": layers, "kv_heads": kv_heads,
            "head_dim": head_dim, "vocab": vocabulary(model),
            "parameters": sum(p.numel() for p in model.parameters()),
            "max_positions": longest_position(model)}
