"""The padding and batching policy a tune over a stream of lengths crowned, applied to samples of
varying length in the caller's process: the windows sorted, the batches cut and padded as the
core's stream made them (src/feed/shape_stream.cpp: PaddingPolicy::padded, BatchingOrder).

Issue 63: the applied winner ran whatever batch it was handed; the policy that won lived only in
the configuration's text and the report's comment.
"""

import json
import math
import re


class StreamPolicy:
    """padding (batch-max, max, multiple:N, buckets:E1/E2/...), batching (arrival, sorted:W), the
    batch, and per input the dimensions that vary (after the batch) with the distribution's
    longest for each: what `padded` and `batches` read."""

    def __init__(self, padding, batching, batch, varying, longest):
        self.padding = padding
        self.batching = batching
        self.batch = batch
        self.varying = varying  # per input: {dimension after the batch: name}
        self.longest = longest  # name: the --dim's MAX

    def __repr__(self):
        return (f"StreamPolicy(padding={self.padding}, batching={self.batching}, "
                f"batch={self.batch})")

    def padded(self, longest, name):
        """The length a batch whose longest sample has `longest` is padded to, in `name`."""
        most = max(longest, self.longest.get(name, longest))
        if self.padding == "max":
            return most
        if self.padding.startswith("multiple:"):
            step = int(self.padding.split(":", 1)[1])
            return min(max(longest, math.ceil(longest / step) * step), most)
        if self.padding.startswith("buckets:"):
            for edge in (int(e) for e in re.split(r"[/,]", self.padding.split(":", 1)[1])):
                if edge >= longest:
                    return min(edge, most)
        return longest

    def order(self, lengths):
        """The samples' indices in the order batches take them: arrival, or each window of W
        sorted by length (stable)."""
        indices = list(range(len(lengths)))
        if not self.batching.startswith("sorted:"):
            return indices
        window = int(self.batching.split(":", 1)[1])
        out = []
        for start in range(0, len(indices), window):
            out += sorted(indices[start:start + window], key=lambda i: lengths[i])
        return out

    def batches(self, samples, names=None):
        """Yields (indices, inputs): each batch's samples (their places in `samples`) and its
        inputs, stacked and padded with zeros (a mask's 0 masks the padding) to the policy's
        length. A sample is a tuple of tensors in forward's order, or a dict of forward's
        argument -> tensor (`names` gives the order); neither has the batch dimension."""
        import torch

        rows = [self._as_tuple(s, names) for s in samples]
        if not rows:
            return
        lengths = [self._length(r) for r in rows]
        order = self.order(lengths)
        size = self.batch or len(order)
        for start in range(0, len(order), size):
            chosen = order[start:start + size]
            inputs = []
            for k in range(len(rows[chosen[0]])):
                tensors = [rows[i][k] for i in chosen]
                shape = [max(t.shape[d] for t in tensors) for d in range(tensors[0].dim())]
                for d, name in self._varying(k).items():
                    if d - 1 < len(shape):
                        shape[d - 1] = self.padded(shape[d - 1], name)
                out = tensors[0].new_zeros((len(tensors), *shape))
                for row, t in enumerate(tensors):
                    out[(row, *(slice(0, n) for n in t.shape))] = t
                inputs.append(out)
            yield chosen, tuple(inputs)

    def _varying(self, k):
        return self.varying[k] if k < len(self.varying) else {}

    def _length(self, row):
        for k, t in enumerate(row):
            for d in sorted(self._varying(k)):
                if d - 1 < t.dim():
                    return t.shape[d - 1]
        return 0

    @staticmethod
    def _as_tuple(sample, names):
        if isinstance(sample, dict):
            if not names:
                raise TypeError("batches: samples given as dicts need forward's argument names")
            unknown = [n for n in sample if n not in names]
            if unknown:
                raise TypeError(f"batches: forward has no argument '{unknown[0]}' (it takes "
                                f"{', '.join(names)})")
            last = max(names.index(n) for n in sample)
            missing = [n for n in names[:last + 1] if n not in sample]
            if missing:
                raise TypeError(f"batches: argument '{missing[0]}' is left out of a sample")
            return tuple(sample[n] for n in names[:last + 1])
        return tuple(sample) if isinstance(sample, (tuple, list)) else (sample,)


def varying_of(input_spec):
    """Per input of an --input spec ("int64:S@0..1000;int64:S@1..2"), {dimension after the batch:
    name} for its named dimensions (dimension 1 is the first after the batch)."""
    varying = []
    for part in input_spec.split(";"):
        part = part.strip()
        part = part.split("=", 1)[1] if re.match(r"^[A-Za-z_]\w*=", part) else part
        part = part.split("@", 1)[0]
        sizes = part.split(":")[-1]
        varying.append({d + 1: s for d, s in enumerate(sizes.split("x"))
                        if s and not s.isdigit()})
    return varying


def longest_of(dims):
    """name: the MAX of each --dim ("S=lognormal:40:0.9:4..512" -> {"S": 512}); a lengths file's
    is read from the file."""
    longest = {}
    for text in dims:
        name, _, distribution = text.partition("=")
        found = re.search(r"(\d+)\.\.(\d+)\s*$", distribution)
        if found:
            longest[name] = int(found.group(2))
        elif distribution.startswith("file:"):
            try:
                with open(distribution[5:]) as f:
                    longest[name] = max(int(line) for line in f if line.strip())
            except (OSError, ValueError):
                pass
    return longest


def from_result(journal, configuration):
    """The policy a tune over a stream crowned (its journal's experiment names the spec and the
    --dim), or None for a tune of one shape."""
    padding = configuration.get("padding", "n/a")
    if padding in ("", "n/a"):
        return None
    try:
        with open(journal) as f:
            header = json.loads(f.readline())
        experiment = header["experiment"]
        spec, dims = experiment.get("input_spec", ""), experiment.get("dims", [])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    batch = configuration.get("batch", "")
    return StreamPolicy(padding, configuration.get("batching", "arrival"),
                        int(batch) if str(batch).isdigit() else None, varying_of(spec),
                        longest_of(dims))
