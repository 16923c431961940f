"""ResNet-18 as torchvision.models.resnet18 builds it (He et al. 2016): torchperf's built-in
definition (python/torchperf/builtin_models.py), the one place it is written."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from torchperf.builtin_models import resnet18  # noqa: E402

__all__ = ["resnet18"]
