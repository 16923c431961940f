#!/usr/bin/env python3
"""Writes the test fixtures into OUTDIR: TorchScript models of torchvision's ResNet-18 and
MobileNetV2 (defined in fixture_models/ with torch.nn alone) and of other torch.nn models (scripted
and traced, one saved in training mode), inputs saved with torch.save, and files that are not
TorchScript. Run by ctest as a fixture; never by torchperf itself."""
import os
import shutil
import sys
import warnings
import zipfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fixture_models  # noqa: E402  (beside this script)


def main(out):
    # torch.ao.quantization's deprecation notice: the int8 fixtures are PyTorch's own reference.
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)

    def save(module, name):
        module.save(os.path.join(out, name))

    resnet = fixture_models.resnet18().eval()
    save(torch.jit.script(resnet), "resnet18_scripted.pt")
    save(torch.jit.trace(resnet, torch.randn(1, 3, 224, 224)), "resnet18_traced.pt")
    save(torch.jit.script(fixture_models.resnet18().train()), "resnet18_train_scripted.pt")
    save(torch.jit.script(fixture_models.mobilenet_v2().eval()), "mobilenet_v2_scripted.pt")

    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, num_layers=2).eval()
    save(torch.jit.script(encoder), "transformer_scripted.pt")

    class TwoInputs(torch.nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor):
            return a @ b.transpose(-1, -2)

    class StructuredOutput(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            return {"double": x * 2, "pair": (x + 1, x.sum(dim=1))}

    class MakesNaN(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            return torch.log(-x.abs() - 1.0)

    # Linear layers sharing one TorchScript type, and the same model quantized by PyTorch itself
    # (int8 dynamic, weights per channel), for checking torchperf's int8 against it.
    torch.manual_seed(0)
    stack = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 16)).eval()
    stack_script = torch.jit.script(stack)
    save(stack_script, "linear_stack.pt")
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic_jit
    save(quantize_dynamic_jit(torch.jit.script(stack), {"": per_channel_dynamic_qconfig}),
         "linear_stack_int8_pytorch.pt")

    # Hidden Linear sizes that are not multiples of 8 (LeNet-300-100's), for the pad rewrite; and
    # ones it must leave alone: a layer used twice (its weight is tied) and a size a LayerNorm
    # reads as a whole.
    torch.manual_seed(0)
    odd = torch.nn.Sequential(torch.nn.Linear(784, 300), torch.nn.ReLU(), torch.nn.Dropout(0.1),
                              torch.nn.Linear(300, 100), torch.nn.GELU(), torch.nn.Linear(100, 10)).eval()
    save(torch.jit.script(odd), "odd_mlp.pt")

    class NotPaddable(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tied = torch.nn.Linear(30, 30)
            self.up = torch.nn.Linear(30, 20)
            self.norm = torch.nn.LayerNorm(20)
            self.out = torch.nn.Linear(20, 4)

        def forward(self, x: torch.Tensor):
            x = self.tied(torch.relu(self.tied(x)))
            return self.out(self.norm(self.up(x)))

    save(torch.jit.script(NotPaddable().eval()), "not_paddable.pt")

    # LSTM and GRU layers (and a Linear head), and the same model quantized by PyTorch's own
    # quantize_dynamic, for checking torchperf's int8 of recurrent layers against it.
    class Recurrent(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(32, 48, num_layers=2, batch_first=True)
            # Two LSTMs of one TorchScript type: one rewritten graph, weights of their own.
            self.same_a = torch.nn.LSTM(48, 48, batch_first=True)
            self.same_b = torch.nn.LSTM(48, 48, batch_first=True)
            self.gru = torch.nn.GRU(48, 24, batch_first=True)
            self.head = torch.nn.Linear(24, 10)

        def forward(self, x: torch.Tensor):
            y, _ = self.lstm(x)
            y, _ = self.same_a(y)
            y, _ = self.same_b(y)
            z, _ = self.gru(y)
            return self.head(z[:, -1])

    torch.manual_seed(0)
    recurrent = Recurrent().eval()
    save(torch.jit.script(recurrent), "recurrent.pt")
    from torch.ao.quantization import quantize_dynamic
    save(torch.jit.script(quantize_dynamic(
        recurrent, {torch.nn.LSTM: per_channel_dynamic_qconfig, torch.nn.GRU: per_channel_dynamic_qconfig,
                    torch.nn.Linear: per_channel_dynamic_qconfig})), "recurrent_int8_pytorch.pt")

    # The same on packed sequences (the `data` forms of aten::gru/lstm).
    class PackedRecurrent(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = torch.nn.GRU(16, 24, batch_first=True)
            self.lstm = torch.nn.LSTM(24, 8, batch_first=True)

        def forward(self, x: torch.Tensor, lengths: torch.Tensor):
            packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True,
                                                             enforce_sorted=False)
            y, _ = self.gru(packed)
            _, (h, c) = self.lstm(y)
            return h[-1]

    torch.manual_seed(0)
    packed = PackedRecurrent().eval()
    save(torch.jit.script(packed), "packed_recurrent.pt")
    save(torch.jit.script(quantize_dynamic(
        packed, {torch.nn.LSTM: per_channel_dynamic_qconfig, torch.nn.GRU: per_channel_dynamic_qconfig})),
        "packed_recurrent_int8_pytorch.pt")

    # A call that runs as long as its request asks (x[0, 0] steps): serve's drain time is tested
    # against a model call that is still running (issue 63).
    class SlowCall(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            y = x
            for _ in range(int(x[0, 0])):
                y = y + 1.0
            return y

    save(torch.jit.script(SlowCall()), "slow_call.pt")
    save(torch.jit.script(TwoInputs()), "two_inputs.pt")
    save(torch.jit.script(StructuredOutput()), "structured_output.pt")
    save(torch.jit.script(MakesNaN()), "nan_output.pt")
    make_training_fixtures(out, save)

    torch.save(torch.randn(2, 3, 224, 224), os.path.join(out, "inputs_image.pt"))
    torch.save((torch.randn(4, 8, 16), torch.randn(4, 8, 16)), os.path.join(out, "inputs_pair.pt"))
    torch.save({"not": "tensors"}, os.path.join(out, "inputs_dict.pt"))
    # Real samples of varying length (issue 52): dicts of forward's arguments, the mask first (not
    # forward's order), 48 lengths from 3 to 62; and two whose samples disagree.
    torch.manual_seed(0)
    samples = []
    for i in range(48):
        n = 3 + (i * 37) % 60
        samples.append({"attention_mask": torch.ones(n, dtype=torch.int64),
                        "input_ids": torch.randint(0, 100, (n,))})
    torch.save(samples, os.path.join(out, "token_samples.pt"))
    # Token ids averaged over every position, padding included (no mask): padding changes its
    # answer, which the stream's padding check must catch.
    class TokenMean(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(100, 8)

        def forward(self, input_ids: torch.Tensor):
            return self.embed(input_ids).mean(1)

    torch.manual_seed(0)
    save(torch.jit.script(TokenMean().eval()), "token_mean.pt")
    torch.save(samples[:5] + [{"attention_mask": torch.ones(1, 9, dtype=torch.int64),
                               "input_ids": torch.randint(0, 100, (9,))}],
               os.path.join(out, "token_samples_rank.pt"))
    torch.save(samples[:2] + [{"attention_mask": torch.ones(9),
                               "input_ids": torch.randint(0, 100, (9,))}],
               os.path.join(out, "token_samples_dtype.pt"))

    # Files that are not TorchScript models, each in its own way.
    torch.save(resnet.state_dict(), os.path.join(out, "state_dict.pt"))
    with open(os.path.join(out, "not_a_model.txt"), "w") as f:
        f.write("this is a text file, not a model\n")
    with zipfile.ZipFile(os.path.join(out, "other.zip"), "w") as z:
        z.writestr("readme.txt", "a zip of something else")
    with open(os.path.join(out, "resnet18_scripted.pt"), "rb") as f:
        data = f.read()
    with open(os.path.join(out, "truncated.pt"), "wb") as f:
        f.write(data[: len(data) // 2])
    # A TorchScript file whose format version is above what this torch reads (a newer torch's).
    with zipfile.ZipFile(os.path.join(out, "linear_stack.pt")) as src, \
            zipfile.ZipFile(os.path.join(out, "newer_torch.pt"), "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, b"99\n" if info.filename.endswith("/version")
                         else src.read(info.filename))
    make_program_fixtures(out, stack, resnet)


def make_program_fixtures(out, stack, resnet):
    """torch.export programs (.pt2): the Linear stack with a static batch of 2 and with a dynamic
    batch, ResNet-18 with a dynamic batch, and damaged ones. AOTInductor packages are made by the
    tests themselves (through torchperf's cache), not here: compiling is what they test."""
    batch = torch.export.Dim("batch", min=1, max=4096)
    torch.export.save(torch.export.export(stack, (torch.randn(2, 32),)),
                      os.path.join(out, "exported.pt2"))
    torch.export.save(torch.export.export(stack, (torch.randn(2, 32),), dynamic_shapes=({0: batch},)),
                      os.path.join(out, "mlp_dynamic.pt2"))
    torch.export.save(torch.export.export(resnet, (torch.randn(2, 3, 224, 224),),
                                          dynamic_shapes=({0: batch},)),
                      os.path.join(out, "resnet18_dynamic.pt2"))
    # The most common export: Dim.DYNAMIC, no bounds (the file's range is [2, inf], its max null).
    torch.export.save(torch.export.export(stack, (torch.randn(2, 32),),
                                          dynamic_shapes=({0: torch.export.Dim.DYNAMIC},)),
                      os.path.join(out, "mlp_dim_dynamic.pt2"))
    torch.manual_seed(0)
    torch.export.save(torch.export.export(fixture_models.mobilenet_v2().eval(),
                                          (torch.randn(2, 3, 224, 224),), dynamic_shapes=({0: batch},)),
                      os.path.join(out, "mobilenet_v2_dynamic.pt2"))
    # A Python number among forward's arguments: exported as a constant the caller still passes.
    class Scaled(torch.nn.Module):
        def forward(self, x, times: int):
            return x * times

    torch.export.save(torch.export.export(Scaled(), (torch.randn(2, 32), 3)),
                      os.path.join(out, "int_argument.pt2"))
    # Token ids and their mask, of a length that varies (issue 52): exported with the length
    # dynamic (Dim on batch and length, 2..256), and with it static at 32.
    class TokenPool(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(1000, 16)
            self.out = torch.nn.Linear(16, 4)

        def forward(self, input_ids, attention_mask):
            mask = attention_mask.unsqueeze(-1).to(torch.float32)
            pooled = (self.embed(input_ids) * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            return self.out(pooled)

    torch.manual_seed(0)
    pool = TokenPool().eval()
    ids, mask = torch.randint(0, 1000, (2, 32)), torch.ones(2, 32, dtype=torch.int64)
    length = torch.export.Dim("length", min=2, max=256)
    torch.export.save(torch.export.export(pool, (ids, mask), dynamic_shapes=(
        {0: batch, 1: length}, {0: batch, 1: length})), os.path.join(out, "token_pool_dynamic.pt2"))
    torch.export.save(torch.export.export(pool, (ids, mask), dynamic_shapes=({0: batch}, {0: batch})),
                      os.path.join(out, "token_pool_static.pt2"))
    with open(os.path.join(out, "mlp_dynamic.pt2"), "rb") as f:
        data = f.read()
    with open(os.path.join(out, "truncated.pt2"), "wb") as f:
        f.write(data[: len(data) // 2])
    # Whole as a zip, but its program JSON is not JSON: torch.export.load and torchperf refuse it.
    with zipfile.ZipFile(os.path.join(out, "mlp_dynamic.pt2")) as src, \
            zipfile.ZipFile(os.path.join(out, "corrupt_program.pt2"), "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, b"{not json" if info.filename.endswith("models/model.json")
                         else src.read(info.filename))


def make_training_fixtures(out, save):
    """Small models and data for `train`: a tiny CNN, one that diverges at its third call, image
    folders (JPEG, PNG, and one corrupt JPEG), and a tensors file."""
    import io
    import numpy as np
    from PIL import Image

    torch.manual_seed(0)

    class TinyCnn(torch.nn.Module):
        def __init__(self, classes: int = 10):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(8)
            self.fc = torch.nn.Linear(8, classes)

        def forward(self, x: torch.Tensor):
            y = torch.relu(self.bn(self.conv(x)))
            return self.fc(y.mean(dim=(2, 3)))

    class DivergesAtThirdCall(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 10)
            self.register_buffer("calls", torch.zeros(1))

        def forward(self, x: torch.Tensor):
            self.calls += 1
            y = self.fc(x.mean(dim=(2, 3)))
            if bool(self.calls >= 3):
                y = y * float("inf")
            return y

    class Regressor(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(16, 4)

        def forward(self, x: torch.Tensor):
            return self.fc(x)

    save(torch.jit.script(TinyCnn().train()), "tiny_cnn.pt")
    save(torch.jit.script(TinyCnn(3).train()), "tiny_cnn_3.pt")
    save(torch.jit.script(DivergesAtThirdCall().train()), "diverges.pt")
    save(torch.jit.script(Regressor().train()), "regressor.pt")
    torch.save((torch.randn(64, 16), torch.randn(64, 4)), os.path.join(out, "regression.pt"))
    torch.save((torch.randn(64, 16), torch.randn(64, 3)), os.path.join(out, "regression_3.pt"))

    rng = np.random.default_rng(0)

    def image(path, fmt, size=(20, 16)):
        pixels = rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
        Image.fromarray(pixels).save(path, fmt)

    folder = os.path.join(out, "images")
    for c, name in enumerate(["cat", "dog", "eel"]):
        os.makedirs(os.path.join(folder, name), exist_ok=True)
        for i in range(6):
            fmt = "PNG" if i % 3 == 2 else "JPEG"
            image(os.path.join(folder, name, f"{i}.{'png' if fmt == 'PNG' else 'jpg'}"), fmt)
    # The same folder with one JPEG cut short: skipped and counted, or an error with --strict.
    corrupt = os.path.join(out, "images_corrupt")
    shutil.rmtree(corrupt, ignore_errors=True)
    shutil.copytree(folder, corrupt)
    buffer = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, size=(16, 20, 3), dtype=np.uint8)).save(buffer, "JPEG")
    with open(os.path.join(corrupt, "dog", "broken.jpg"), "wb") as f:
        f.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    os.makedirs(os.path.join(out, "images_empty", "cat"), exist_ok=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_fixtures.py OUTDIR")
    main(sys.argv[1])
