#!/usr/bin/python3
"""Writes the test fixtures into OUTDIR: TorchScript models exported from torchvision and
torch.nn (scripted and traced, one saved in training mode), inputs saved with torch.save, and
files that are not TorchScript. Run by ctest as a fixture; never by torchperf itself."""
import os
import sys
import zipfile

import torch
import torchvision


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)

    def save(module, name):
        module.save(os.path.join(out, name))

    resnet = torchvision.models.resnet18().eval()
    save(torch.jit.script(resnet), "resnet18_scripted.pt")
    save(torch.jit.trace(resnet, torch.randn(1, 3, 224, 224)), "resnet18_traced.pt")
    save(torch.jit.script(torchvision.models.resnet18().train()), "resnet18_train_scripted.pt")
    save(torch.jit.script(torchvision.models.mobilenet_v2().eval()), "mobilenet_v2_scripted.pt")

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

    save(torch.jit.script(TwoInputs()), "two_inputs.pt")
    save(torch.jit.script(StructuredOutput()), "structured_output.pt")
    save(torch.jit.script(MakesNaN()), "nan_output.pt")

    torch.save(torch.randn(2, 3, 224, 224), os.path.join(out, "inputs_image.pt"))
    torch.save((torch.randn(4, 8, 16), torch.randn(4, 8, 16)), os.path.join(out, "inputs_pair.pt"))
    torch.save({"not": "tensors"}, os.path.join(out, "inputs_dict.pt"))

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


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_fixtures.py OUTDIR")
    main(sys.argv[1])
