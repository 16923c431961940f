"""torchperf's built-in models, defined once, with torch.nn: the C++ core materialises each on
first use into its cache as a torch.export program (a dynamic batch, for every runtime: AOTInductor,
Python eager and torch.compile) and as TorchScript scripted from the same module with the same
weights (for the paths that read a TorchScript graph: freezing, int8, lint, train).

    python -m torchperf.builtin_models NAME FOLDER --inputs SPEC [--seed S] [--max-batch B]

writes FOLDER/model.pt2 (batch dynamic in 1..B) and FOLDER/model.pt (each renamed into place only
when whole) and answers {"program": ..., "torchscript": ..., "parameters": ...}. The C++ side's
catalogue (src/models/builtin_models.cpp) names the built-ins, describes them and gives their
input specs; `--list` answers the names defined here, which a test checks against it.
"""

import argparse
import math
import os

from torchperf import _child, feed

BUILTINS = ("mlp", "resnet18", "encoder", "encoder:bert-base", "convbn")


def _modules():
    """The torch.nn classes, defined on first use so that --list needs no torch."""
    from typing import Optional, Tuple

    import torch
    from torch import nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(784, 512)
            self.fc2 = nn.Linear(512, 512)
            self.fc3 = nn.Linear(512, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = torch.relu(self.fc1(x))
            x = torch.relu(self.fc2(x))
            return self.fc3(x)

    class BasicBlock(nn.Module):
        def __init__(self, inplanes: int, planes: int, stride: int = 1,
                     downsample: Optional[nn.Module] = None):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = downsample

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            identity = x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            if self.downsample is not None:
                identity = self.downsample(x)
            return self.relu(out + identity)

    class ResNet(nn.Module):
        """ResNet-18 as torchvision.models.resnet18 builds it (He et al. 2016): BasicBlocks,
        convolutions without bias, the same module names and kaiming fan_out initialisation."""

        def __init__(self, layers=(2, 2, 2, 2), num_classes: int = 1000):
            super().__init__()
            self.inplanes = 64
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            self.layer1 = self._make_layer(64, layers[0])
            self.layer2 = self._make_layer(128, layers[1], stride=2)
            self.layer3 = self._make_layer(256, layers[2], stride=2)
            self.layer4 = self._make_layer(512, layers[3], stride=2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, num_classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

        def _make_layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
            downsample = None
            if stride != 1 or self.inplanes != planes:
                downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride, bias=False),
                                           nn.BatchNorm2d(planes))
            layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
            self.inplanes = planes
            layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
            return nn.Sequential(*layers)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    class BatchNorm(nn.BatchNorm2d):
        """nn.BatchNorm2d as one call on its own tensors, so that a graph rewrite sees the running
        mean it folds a bias into (lint --fix's conv_bias=fold)."""

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.batch_norm(x, self.weight, self.bias, self.running_mean, self.running_var,
                                    self.training, 0.1, 1e-5, False)

    class ConvBiasBN(nn.Module):
        """A small convnet that keeps conv bias before batch norm: the anti-pattern the tuning
        guide names (the normalisation cancels the bias), kept on purpose for lint and freezing."""

        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 32, 3, 1, 1, bias=True)
            self.bn1 = BatchNorm(32)
            self.conv2 = nn.Conv2d(32, 64, 3, 2, 1, bias=True)
            self.bn2 = BatchNorm(64)
            self.conv3 = nn.Conv2d(64, 64, 3, 1, 1, bias=True)
            self.bn3 = BatchNorm(64)
            self.fc = nn.Linear(64, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = torch.relu(self.bn1(self.conv1(x)))
            x = torch.relu(self.bn2(self.conv2(x)))
            x = torch.relu(self.bn3(self.conv3(x)))
            x = torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, [1, 1]), 1)
            return self.fc(x)

    class EncoderLayer(nn.Module):
        def __init__(self, hidden: int, heads: int, intermediate: int):
            super().__init__()
            self.heads, self.head_dim = heads, hidden // heads
            self.scale = 1.0 / math.sqrt(hidden // heads)
            self.query = nn.Linear(hidden, hidden)
            self.key = nn.Linear(hidden, hidden)
            self.value = nn.Linear(hidden, hidden)
            self.attention_out = nn.Linear(hidden, hidden)
            self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
            self.intermediate = nn.Linear(hidden, intermediate)
            self.output = nn.Linear(intermediate, hidden)
            self.output_norm = nn.LayerNorm(hidden, eps=1e-12)

        def forward(self, x: torch.Tensor, mask_bias: torch.Tensor) -> torch.Tensor:
            b, n = x.size(0), x.size(1)
            q = self.query(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
            k = self.key(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
            v = self.value(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
            scores = torch.matmul(q, k.transpose(-1, -2)) * self.scale + mask_bias
            context = torch.matmul(torch.softmax(scores, -1), v).transpose(1, 2)
            context = context.reshape(b, n, self.heads * self.head_dim)
            x = self.attention_norm(x + self.attention_out(context))
            h = torch.nn.functional.gelu(self.intermediate(x))
            return self.output_norm(x + self.output(h))

    class Encoder(nn.Module):
        """A BERT-style encoder (Devlin et al. 2019): embeddings, post-norm layers with GELU, a
        tanh pooler. Returns (sequence_output, pooled_output): tuple outputs are exercised too."""

        def __init__(self, vocab, hidden, layers, heads, intermediate, max_positions):
            super().__init__()
            self.word_embeddings = nn.Parameter(torch.randn(vocab, hidden) * 0.02)
            self.position_embeddings = nn.Parameter(torch.randn(max_positions, hidden) * 0.02)
            self.embedding_norm = nn.LayerNorm(hidden, eps=1e-12)
            self.layers = nn.ModuleList(EncoderLayer(hidden, heads, intermediate)
                                        for _ in range(layers))
            self.pooler = nn.Linear(hidden, hidden)

        def forward(self, input_ids: torch.Tensor,
                    attention_mask: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
            n = input_ids.size(1)
            x = torch.nn.functional.embedding(input_ids, self.word_embeddings)
            x = self.embedding_norm(x + self.position_embeddings[0:n])
            mask_bias = (1.0 - attention_mask.unsqueeze(1).unsqueeze(2).to(x.dtype)) * -10000.0
            for layer in self.layers:
                x = layer(x, mask_bias)
            pooled = torch.tanh(self.pooler(x[:, 0]))
            return x, pooled

    return {
        "mlp": MLP,
        "resnet18": ResNet,
        "convbn": ConvBiasBN,
        # Positions up to 512, as bert-base's: a stream of lengths (--dim) may reach them.
        "encoder": lambda: Encoder(1000, 64, 2, 4, 256, 512),
        "encoder:bert-base": lambda: Encoder(30522, 768, 12, 12, 3072, 512),
    }


def resnet18():
    """ResNet-18 as torchvision builds it (random weights, training mode): the test fixtures'
    and benchmarks' model too (scripts/fixture_models)."""
    return _modules()["resnet18"]()


def build(name, seed=0):
    """The built-in `name` in eval mode, with the weights `seed` gives (the same on every machine
    for one torch version)."""
    import torch

    if name not in BUILTINS:
        raise KeyError(f"unknown built-in model 'builtin:{name}'; expected one of "
                       + ", ".join("builtin:" + n for n in BUILTINS))
    torch.manual_seed(seed)
    return _modules()[name]().eval()


def materialise(name, folder, inputs_fed, seed=0, max_batch=4096):
    """Writes folder/model.pt2 (dynamic batch 1..max_batch, and each named dimension of the feed
    (feed.py's form) dynamic over its range) and folder/model.pt (TorchScript)."""
    import torch

    from torchperf import export_source

    model = build(name, seed)
    inputs = feed.example_inputs(inputs_fed, sizes={n: export_source.example_length(*r)
                                                    for n, r in inputs_fed["dims"].items()})
    batch = torch.export.Dim("batch", min=1, max=max_batch)
    os.makedirs(folder, exist_ok=True)
    program_path = os.path.join(folder, "model.pt2")
    script_path = os.path.join(folder, "model.pt")
    suffix = f".partial-{os.getpid()}"
    dynamic = export_source.dynamic_shapes(inputs, feed.named_dimensions(inputs_fed),
                                           static_batch=True)
    dynamic = tuple({0: batch, **(d or {})} for d in (dynamic or [None] * len(inputs)))
    with torch.no_grad():
        program = torch.export.export(model, inputs, dynamic_shapes=dynamic)
    torch.export.save(program, program_path + suffix + ".pt2")
    # Scripted from the same module after export: export does not change its weights.
    torch.jit.save(torch.jit.script(model), script_path + suffix)
    os.replace(program_path + suffix + ".pt2", program_path)
    os.replace(script_path + suffix, script_path)
    return {"program": program_path, "torchscript": script_path,
            "parameters": sum(p.numel() for p in model.parameters()),
            "torch_version": torch.__version__}


def main():
    parser = argparse.ArgumentParser(prog="torchperf.builtin_models")
    parser.add_argument("name", nargs="?")
    parser.add_argument("folder", nargs="?")
    parser.add_argument("--feed", default="",
                        help="the inputs, typed as the core resolves them (feed.py), their named "
                             "dimensions exported dynamic")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-batch", type=int, default=4096)
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list:
        _child.answer(models=list(BUILTINS))
        return
    if not args.name or not args.folder or not args.feed:
        _child.fail(_child.USAGE, "expected NAME FOLDER --feed JSON, or --list")
    if args.name not in BUILTINS:
        _child.fail(_child.USAGE, f"unknown built-in model 'builtin:{args.name}'")
    try:
        _child.answer(**materialise(args.name, args.folder, feed.load(args.feed), args.seed,
                                    args.max_batch))
    except Exception as e:
        if _child.is_out_of_memory(e):
            _child.fail(_child.OUT_OF_MEMORY, f"out of memory while exporting ({_child.concise(e)})")
        _child.fail(_child.BAD_SOURCE, f"exporting builtin:{args.name} failed: {_child.concise(e)}")


if __name__ == "__main__":
    main()
