"""FLoCoRA task modules: LoRA adapters on every convolution of a frozen backbone.

For a frozen conv W (O x I x k x k) the adapter is a down conv B (r x I x k x k, the conv's
stride and padding) followed by an up conv A (O x r x 1 x 1), scaled by alpha / r:

    y = conv(x, W) + (alpha / r) * A(B(x))  =  conv(x, W + (alpha / r) * A . B)

where (A . B)[o, i, u, v] = sum_j A[o, j] B[j, i, u, v]. The right-hand form is the same linear
map (a 1x1 conv after a strided conv composes into one conv), so it is what runs: one conv with
the merged kernel instead of three. A is zero-initialised, so at round 0 the merged kernel is
W + 0 = W bit for bit and the adapted model equals the frozen base.

What else a task trains follows the rows of FLoCoRA's Table II:
    "FLoCoRA Vanilla"   LoRA on every conv and on the final FC, norms frozen
                        (model.lora_on_head=true model.lora_train_norms=false)
    "+ Norm. Layers"    the same, norms trained (model.lora_on_head=true)
    "+ Final FC"        LoRA on every conv, norms and FC trained: the paper's choice, the default
Adapters cover every conv, the stem and the 1x1 shortcut convs included. Each task has its own
adapters, norms and head (like the NetTailor proxies), so the FCL engine treats `lora` as just
another per-task module; a plain FL run is T = 1. Trained norms are per-task copies of the
backbone's (same initial values); frozen norms are the backbone's own, kept in eval mode.
A frozen FC under LoRA is a per-task random Linear (the backbone has no head), never sent.
"""
from __future__ import annotations

import copy
import math
from functools import partial
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from fcl.models.backbone import Backbone, Swap, adapted_layers, module_key


def _down_factor(rank: int, fan_shape: tuple[int, ...]) -> nn.Parameter:
    """B, initialised as nn.Conv2d / nn.Linear initialise their weights (Kaiming uniform)."""
    b = torch.empty(rank, *fan_shape)
    nn.init.kaiming_uniform_(b, a=math.sqrt(5))
    return nn.Parameter(b)


class LoRAConv(nn.Module):
    """The trainable factors of one conv's adapter; the frozen base conv stays in the backbone."""

    def __init__(self, base: nn.Conv2d, rank: int, alpha: float):
        super().__init__()
        out_ch, in_ch, kh, kw = base.weight.shape
        self.down = _down_factor(rank, (in_ch, kh, kw))                       # B: r x I x k x k
        self.up = nn.Parameter(torch.zeros(out_ch, rank, 1, 1))              # A: O x r x 1 x 1
        self.scale = alpha / rank

    def merged_weight(self, base: torch.Tensor) -> torch.Tensor:
        delta = self.up.flatten(1) @ self.down.flatten(1)                    # O x (I k k)
        return base + self.scale * delta.view_as(base)

    def forward(self, x: torch.Tensor, base: nn.Conv2d) -> torch.Tensor:
        return F.conv2d(x, self.merged_weight(base.weight), base.bias, base.stride,
                        base.padding, base.dilation, base.groups)


class LoRALinear(nn.Module):
    """A frozen Linear plus W' = W + (alpha / r) * A B, A (out x r) zero-initialised."""

    def __init__(self, in_features: int, out_features: int, rank: int, alpha: float):
        super().__init__()
        self.base = nn.Linear(in_features, out_features).requires_grad_(False)
        self.down = _down_factor(rank, (in_features,))
        self.up = nn.Parameter(torch.zeros(out_features, rank))
        self.scale = alpha / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.base.weight + self.scale * (self.up @ self.down), self.base.bias)


class LoRATask(nn.Module):
    """One task's trainable state: an adapter per conv, norms (when trained) and the head."""

    def __init__(self, backbone: Backbone, num_classes: int, rank: int, alpha: float,
                 train_norms: bool, lora_on_head: bool):
        super().__init__()
        layers = dict(backbone.named_modules())
        convs, norms = adapted_layers(backbone)
        self.adapters = nn.ModuleDict({module_key(n): LoRAConv(layers[n], rank, alpha) for n in convs})
        self.norms = nn.ModuleDict({module_key(n): copy.deepcopy(layers[n]).requires_grad_(True)
                                    for n in norms} if train_norms else {})
        self.head = (LoRALinear(backbone.out_channels, num_classes, rank, alpha) if lora_on_head
                     else nn.Linear(backbone.out_channels, num_classes))


class LoRANet(nn.Module):
    """A frozen backbone shared by all tasks, plus one `LoRATask` per task."""

    def __init__(self, backbone: Backbone, classes_per_task: list[int], rank: int, alpha: float,
                 train_norms: bool = True, lora_on_head: bool = False):
        super().__init__()
        self.backbone = backbone
        self.tasks = nn.ModuleList(LoRATask(backbone, n, rank, alpha, train_norms, lora_on_head)
                                   for n in classes_per_task)
        self._layers = dict(backbone.named_modules())   # plain dict: not registered twice
        self._convs, self._norms = adapted_layers(backbone)

    def train(self, mode: bool = True):
        super().train(mode)
        self.backbone.eval()   # frozen: BatchNorm statistics of the shared norms never move
        return self

    def swap(self, task: int) -> Swap:
        """The backbone's convs as task `task`'s adapted convs, its norms as the task's own
        (when trained); everything else runs as is."""
        m = self.tasks[task]
        table: dict[nn.Module, Callable] = {
            self._layers[n]: partial(m.adapters[module_key(n)], base=self._layers[n])
            for n in self._convs}
        if len(m.norms):
            table.update({self._layers[n]: m.norms[module_key(n)] for n in self._norms})
        return lambda layer: table.get(layer, layer)

    def features(self, x: torch.Tensor, task: int) -> torch.Tensor:
        return self.backbone.features(x, self.swap(task))

    def forward(self, x: torch.Tensor, task: int) -> torch.Tensor:
        return self.tasks[task].head(self.features(x, task))

    def extra_loss(self, task: int) -> torch.Tensor | None:
        return None
