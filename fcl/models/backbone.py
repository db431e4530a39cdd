"""Frozen ResNet backbones, exposed as a stem plus a list of blocks so that per-task modules
can tap every block's output (NetTailor proxies) or wrap its convolutions (LoRA).

| name        | stages (channels x blocks)         | for                               |
|-------------|------------------------------------|-----------------------------------|
| resnet_tiny | w, 2w, 4w x 1, all stride 2        | the bundled 28x28 set on 2 CPUs    |
| resnet8     | 64, 128, 256 x 1                   | FLoCoRA                           |
| resnet18    | 64, 128, 256, 512 x 2 (CIFAR stem) | the FCL paper (NetTailor)         |

Weights are randomly initialised from the run's seed and frozen, unless `fcl.models.pretrained`
loads them (`model.pretrained=imagenet`, `model.weights=PATH`). The initialisation is
torchvision's ResNet one, which FLoCoRA's code uses too: every conv Kaiming-normal with fan_out
and the ReLU gain (std sqrt(2 / (out_channels * k * k))), every norm weight 1 and bias 0. With a
norm after each conv the scale of a frozen W against LoRA's (alpha / r) B A is what FLoCoRA's
alpha = 2r vs 16r comparison measures, so the scale is part of the spec.

GroupNorm has `model.norm_groups` groups (2 by default: FLoCoRA follows Hsieh et al. 2020,
`GroupNorm(2, C)`); BatchNorm runs in eval mode (frozen statistics).

Two stems (`model.stem`): `cifar`, a 3x3 conv of stride 1 (small images keep their resolution);
`imagenet`, torchvision's 7x7 conv of stride 2 + 3x3 max-pool of stride 2, the layout of its
ImageNet weights (`resnet18` with this stem and BatchNorm has torchvision's ResNet-18 key-for-key
minus `fc`, see `fcl.models.pretrained.torchvision_to_fcl`). `model.input_size=S` makes the stem
first resize every batch to S x S (bilinear): ImageNet weights expect objects of ImageNet scale,
and on 32x32 images the imagenet stem leaves 8x8 maps before the first block and 1x1 after the
last, so the paper presets feed CIFAR's 32x32 images at 72x72 (Decathlon's size for its CIFAR-100).
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from fcl.models.stages import SPECS, stage_channels
from fcl.seeding import derive_seed


def make_norm(kind: str, channels: int, groups: int = 2) -> nn.Module:
    """`kind` batch -> BatchNorm2d; group -> GroupNorm(groups, channels)."""
    if kind == "batch":
        return nn.BatchNorm2d(channels)
    if channels % groups:
        raise ValueError(f"model.norm_groups={groups}: a layer has {channels} channels, not a "
                         f"multiple; allowed: a divisor of every layer's channels")
    return nn.GroupNorm(groups, channels)


def init_weights_(module: nn.Module) -> None:
    """torchvision's ResNet initialisation: convs Kaiming-normal (fan_out, relu), norms 1 / 0."""
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


# A per-task model may run the backbone with some layers swapped for its own (LoRA: a conv with
# a merged kernel, a trained norm): `swap(layer)` gives the callable to run in place of `layer`.
Swap = Callable[[nn.Module], Callable[[torch.Tensor], torch.Tensor]]


def same(layer: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    return layer


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, norm: str, groups: int = 2):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = make_norm(norm, cout, groups)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = make_norm(norm, cout, groups)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          make_norm(norm, cout, groups))

    def preactivation(self, x: torch.Tensor, swap: Swap = same) -> torch.Tensor:
        """The residual sum before the block's last ReLU (NetTailor gates it with proxies)."""
        out = torch.relu(swap(self.bn1)(swap(self.conv1)(x)))
        out = swap(self.bn2)(swap(self.conv2)(out))
        for layer in self.shortcut:
            x = swap(layer)(x)
        return out + x

    def forward(self, x: torch.Tensor, swap: Swap = same) -> torch.Tensor:
        return torch.relu(self.preactivation(x, swap))


class Stem(nn.Sequential):
    """conv - norm - ReLU [- max-pool]; with `input_size` > 0 the batch is first resized to
    input_size x input_size. Children keep torchvision-like indices: 0 conv, 1 norm."""

    def __init__(self, in_channels: int, out_channels: int, norm: str, kind: str = "cifar",
                 input_size: int = 0, groups: int = 2):
        if kind == "imagenet":
            layers = [nn.Conv2d(in_channels, out_channels, 7, 2, 3, bias=False),
                      make_norm(norm, out_channels, groups), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
        else:
            layers = [nn.Conv2d(in_channels, out_channels, 3, 1, 1, bias=False),
                      make_norm(norm, out_channels, groups), nn.ReLU()]
        super().__init__(*layers)
        self.kind, self.input_size = kind, input_size

    @property
    def reduction(self) -> int:
        return 4 if self.kind == "imagenet" else 1

    def resize(self, x: torch.Tensor) -> torch.Tensor:
        s = self.input_size
        if s and tuple(x.shape[-2:]) != (s, s):
            x = F.interpolate(x, size=(s, s), mode="bilinear", align_corners=False)
        return x

    def forward(self, x: torch.Tensor, swap: Swap = same) -> torch.Tensor:
        x = self.resize(x)
        for layer in self:
            x = swap(layer)(x)
        return x


class Backbone(nn.Module):
    """`nodes` are the stem output (node 0) and every block output (nodes 1..L);
    `channels[i]` and `reduction[i]` (spatial downsampling vs the input) describe node i."""

    def __init__(self, in_channels: int, stages: tuple[int, ...], blocks_per_stage: int,
                 norm: str, first_stride: int = 1, stem: str = "cifar", input_size: int = 0,
                 norm_groups: int = 2):
        super().__init__()
        self.norm_groups = norm_groups
        self.stem = Stem(in_channels, stages[0], norm, stem, input_size, norm_groups)
        red = self.stem.reduction
        blocks, self.channels, self.reduction = [], [stages[0]], [red]
        cin = stages[0]
        for s, cout in enumerate(stages):
            for b in range(blocks_per_stage):
                stride = (2 if s > 0 else first_stride) if b == 0 else 1
                blocks.append(BasicBlock(cin, cout, stride, norm, norm_groups))
                cin, red = cout, red * stride
                self.channels.append(cout)
                self.reduction.append(red)
        self.blocks = nn.ModuleList(blocks)
        init_weights_(self)

    @property
    def out_channels(self) -> int:
        return self.channels[-1]

    def forward(self, x: torch.Tensor, swap: Swap = same) -> torch.Tensor:
        """The last node: stem, then every block (the one ResNet walk of the project)."""
        x = self.stem(x, swap)
        for block in self.blocks:
            x = block(x, swap)
        return x

    def features(self, x: torch.Tensor, swap: Swap = same) -> torch.Tensor:
        """Globally average-pooled last node: what a head reads."""
        return self(x, swap).mean(dim=(2, 3))


def build_backbone(name: str, in_channels: int, norm: str, width: int, seed: int,
                   stem: str = "cifar", input_size: int = 0, norm_groups: int = 2) -> Backbone:
    """A randomly initialised backbone, identical for the same (name, seed), frozen."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, "backbone"))
        if name == "resnet_tiny":
            # Every stage halves the resolution (28 -> 14 -> 7 -> 4): 2x faster than a full-
            # resolution first stage on the CPU, and small images lose little.
            net = Backbone(in_channels, stage_channels(name, width), 1, norm, first_stride=2,
                           stem=stem, input_size=input_size, norm_groups=norm_groups)
        else:
            net = Backbone(in_channels, stage_channels(name, width), SPECS[name][1], norm,
                           stem=stem, input_size=input_size, norm_groups=norm_groups)
    net.requires_grad_(False)
    return net.eval()


def module_key(name: str) -> str:
    """A module's dotted name as a ModuleDict / ParameterDict key."""
    return name.replace(".", "_")          # ModuleDict keys may not contain dots


NORMS = (nn.GroupNorm, nn.BatchNorm2d)


def adapted_layers(backbone: Backbone) -> tuple[list[str], list[str]]:
    """(conv names, norm names) of the backbone in forward order, as the adapter methods (LoRA, FedWeIT) walk it:
    the stem's convs and norms (whatever else the stem holds, e.g. a max-pool, runs as is),
    then per block conv1, bn1, conv2, bn2 and the shortcut's conv + norm."""
    convs = [f"stem.{i}" for i, m in enumerate(backbone.stem) if isinstance(m, nn.Conv2d)]
    norms = [f"stem.{i}" for i, m in enumerate(backbone.stem) if isinstance(m, NORMS)]
    for i, block in enumerate(backbone.blocks):
        p = f"blocks.{i}."
        convs += [p + "conv1", p + "conv2"]
        norms += [p + "bn1", p + "bn2"]
        if len(block.shortcut):
            convs.append(p + "shortcut.0")
            norms.append(p + "shortcut.1")
    every_conv = {n for n, m in backbone.named_modules() if isinstance(m, nn.Conv2d)}
    if every_conv != set(convs):   # a backbone of another layout would silently lose adapters
        raise ValueError(f"backbone convs {sorted(every_conv - set(convs))} "
                         "are not covered by the walk of adapted layers")
    return convs, norms
