"""What a model is fed, in the typed form the core resolves it to (include/torchperf/feed/
feed_json.h): each input's forward argument, dtype, shape (a size or a named dimension's name)
and value range, and each named dimension's range. The spec grammar is parsed once, in C++: the
core passes this form to its Python steps (--feed), and `torchperf __feed SPEC [NAME=DIST ...]`
prints it for a script that starts from a spec. Also the caller's model and example inputs
checked (the API's and apply's). Imports only _binary and _child of torchperf, so that every
module may use it (the API, apply, the exporters, the built-ins)."""
import json
import subprocess

from torchperf import _child

# The fields of the form, as `torchperf __protocol` lists them under "feed" (test_protocol.py).
FIELDS = {"inputs": ("argument", "dtype", "shape", "range"), "dims": ()}

_DTYPES = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16",
           "float64": "float64", "int64": "int64", "int32": "int32", "uint8": "uint8",
           "bool": "bool"}


def load(text):
    """The form from its JSON text (a --feed argument)."""
    feed = json.loads(text)
    for name in FIELDS:
        if name not in feed:
            raise ValueError(f"--feed: no '{name}' field in {text[:80]}")
    return feed


def resolve(spec, dims=()):
    """The form of an input spec ("int64:S@0..1000;int64:S@1..2") and --dim distributions
    ("S=4..512"), parsed by the core; ValueError with its message when it refuses them."""
    from torchperf import _binary

    run = subprocess.run([_binary.executable(), "__feed", spec, *dims], capture_output=True,
                         text=True, env=_binary.environment())
    if run.returncode != 0:
        raise ValueError(run.stderr.strip() or f"torchperf __feed exited {run.returncode}")
    return load(run.stdout)


def argument_names(feed):
    """Per input, forward's argument it feeds, or None (fed in order)."""
    return [entry["argument"] for entry in feed["inputs"]]


def example_inputs(feed, batch=2, sizes=None):
    """Inputs of `batch` rows as the feed describes them: integers drawn within their range (0 or
    1 without one), floats from a unit normal (uniform within a range given). A named dimension
    takes its size from sizes ({"S": 17})."""
    import torch

    tensors = []
    for entry in feed["inputs"]:
        shape = (batch, *[d if isinstance(d, int) else sizes[d] for d in entry["shape"]])
        dtype = getattr(torch, _DTYPES[entry["dtype"]])
        bounds = entry["range"]
        if dtype.is_floating_point:
            t = torch.empty(shape).uniform_(*bounds) if bounds else torch.randn(shape)
            tensors.append(t.to(dtype))
        else:
            low, high = (int(bounds[0]), int(bounds[1])) if bounds else (0, 2)
            tensors.append(torch.randint(low, high, shape).to(dtype))
    return tuple(tensors)


def named_dimensions(feed):
    """Per input, {dimension: (name, low, high)} for its named dimensions (the batch counted as
    dimension 0), each with the range the feed gives it; None when no dimension is named."""
    ranges = feed["dims"]
    named = [{i + 1: (d, *ranges[d]) for i, d in enumerate(entry["shape"])
              if not isinstance(d, int)} for entry in feed["inputs"]]
    return named if any(named) else None


def in_forward_order(model, named):
    """A dict of forward's argument -> value as the tuple forward takes positionally (the core
    feeds it so): ValueError for a name forward does not take, or one left out before a given one
    or without a default."""
    import inspect

    parameters = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = [p.name for p in parameters]
    for name in named:
        if name not in names:
            raise ValueError(f"example_inputs: forward has no argument '{name}' (it takes "
                             f"{', '.join(names)})")
    last = max(names.index(name) for name in named)
    for p in parameters[:last + 1]:
        if p.name not in named:
            raise ValueError(f"example_inputs: argument '{p.name}' is left out before "
                             f"'{names[last]}'; torchperf feeds forward in order: give it too")
    for p in parameters[last + 1:]:
        if p.default is p.empty:
            raise ValueError(f"example_inputs: argument '{p.name}' has no default and is not given")
    return tuple(named[name] for name in names[:last + 1])


def forward_order(model, feed):
    """The order (indices into the feed's inputs) forward takes them in, when the inputs name the
    arguments they feed; as given otherwise."""
    arguments = argument_names(feed)
    if not any(arguments):
        return list(range(len(arguments)))
    if not all(arguments):
        raise ValueError("the input spec: name every input, or none")
    return list(in_forward_order(model, {a: i for i, a in enumerate(arguments)}))


def checked_model(model, what="model"):
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"{what}: expected a torch.nn.Module, got {type(model).__module__}."
                        f"{type(model).__qualname__}")
    return model


def checked_inputs(example_inputs, model=None):
    """example_inputs as a tuple of tensors, one per forward argument, sharing a batch (dim 0); a
    dict of argument -> tensor is put in forward's order."""
    import torch

    if isinstance(example_inputs, dict) and example_inputs and model is not None:
        example_inputs = in_forward_order(model, example_inputs)
    inputs = (example_inputs,) if torch.is_tensor(example_inputs) else example_inputs
    if not isinstance(inputs, (tuple, list)) or not inputs or \
            not all(torch.is_tensor(t) for t in inputs):
        kinds = type(example_inputs).__name__ if not isinstance(example_inputs, (tuple, list)) \
            else "(" + ", ".join(type(t).__name__ for t in example_inputs) + ")"
        raise TypeError(f"example_inputs: expected a tensor, a tuple of tensors (one per forward "
                        f"argument) or a dict of argument -> tensor, got {kinds}")
    if any(t.dim() == 0 for t in inputs):
        raise ValueError(f"example_inputs ({_child.describe_tensors(inputs)}): expected a batch dimension first "
                         "in every tensor; a 0-d tensor has none")
    batches = sorted({t.shape[0] for t in inputs})
    if len(batches) > 1:
        raise ValueError(f"example_inputs ({_child.describe_tensors(inputs)}): their first dimensions differ "
                         f"({', '.join(map(str, batches))}); torchperf takes dim 0 as the batch "
                         "every input shares")
    return tuple(inputs)
