"""The training data of `train` in Python: synthetic CIFAR (random 32x32 RGB images resized and
normalised as torchperf's C++ pipeline does, or handed over as bytes for transfer=uint8) and a
saved (inputs, targets) pair. The Python training worker and the benchmarks read it from here."""

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, TensorDataset

# torchvision's Normalize(0.5, 0.5), as the C++ pipeline's kImageMean and kImageStd.
MEAN, STD = 0.5, 0.5


class SyntheticCifar(Dataset):
    """50 000 random 32x32 RGB images, 10 classes, resized (bilinear) and normalised in
    __getitem__. Pixels are a function of the index, so loader workers share no generator; they
    are not the C++ side's bytes (splitmix64), which does not matter for speed: making 3 KB takes
    tens of microseconds beside the resize and normalisation."""

    def __init__(self, size, as_bytes=False):
        self.size = size
        self.as_bytes = as_bytes

    def __len__(self):
        return 50000

    def __getitem__(self, index):
        rng = np.random.default_rng(index)
        hwc = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
        x = torch.from_numpy(hwc).permute(2, 0, 1).unsqueeze(0).float()
        x = F.interpolate(x, size=(self.size, self.size), mode="bilinear",
                          align_corners=False).squeeze(0)
        label = int(rng.integers(10))
        if self.as_bytes:  # transfer=uint8: resized bytes, normalised after the copy
            return x.round_().clamp_(0, 255).to(torch.uint8), label
        return x.div_(255).sub_(MEAN).div_(STD), label


class SyntheticFeatures(Dataset):
    """50 000 random vectors of `features` unit normals and a label among 10: the data of a model
    that takes a vector (builtin:mlp's 784). A function of the index, as SyntheticCifar."""

    def __init__(self, features):
        self.features = features

    def __len__(self):
        return 50000

    def __getitem__(self, index):
        rng = np.random.default_rng(index)
        x = torch.from_numpy(rng.standard_normal(self.features, dtype=np.float32))
        return x, int(rng.integers(10))


def normalise_after_copy(inputs):
    """uint8 images to normalised float32 on the device (transfer=uint8)."""
    return inputs.float().div_(255).sub_(MEAN).div_(STD)


def open_dataset(source, image_size, as_bytes):
    """synthetic-cifar, synthetic-features:N or tensors:FILE (torch.save((inputs, targets)));
    ValueError otherwise."""
    if source == "synthetic-cifar":
        return SyntheticCifar(image_size, as_bytes)
    if source.startswith("synthetic-features:"):
        return SyntheticFeatures(int(source.split(":", 1)[1]))
    if source.startswith("tensors:"):
        inputs, targets = torch.load(source.split(":", 1)[1])
        return TensorDataset(inputs, targets)
    raise ValueError(f"--data {source}: the Python training step reads synthetic-cifar, "
                     "synthetic-features:N or tensors:FILE (images:DIR trains with "
                     "step=torchscript)")
