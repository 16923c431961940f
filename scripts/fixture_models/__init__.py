"""torchvision's ResNet-18 and MobileNetV2, defined with torch.nn alone: PyPI's torchvision is a
CUDA build that does not import beside the CPU torch of the project's .venv. The same layers, module
paths, parameter counts and initialisation as torchvision's, so fixtures keep their meaning."""
from .mobilenetv2 import mobilenet_v2
from .resnet import resnet18

__all__ = ["mobilenet_v2", "resnet18"]
