"""`model.adapter=fedpara`: FedPara (Hyeon-Woo et al., ICLR 2022), the whole model trained and
sent as in `full`, but every convolution is a low-rank Hadamard product whose factors are what
is trained, sent both ways and averaged.

A conv of O x I x k x k is W = W1 ⊙ W2, each Wj a Tucker product of a core and two factors:

    Wj = Tj x1 Xj x2 Yj,  Wj[o, i, u, v] = sum_{a, b} Tj[a, b, u, v] Xj[a, o] Yj[b, i]

(Tj: R x R x k x k, Xj: R x O, Yj: R x I): 2 (R^2 k^2 + R (O + I)) values instead of O I k^2.
A Linear is W = (X1 Y1^T) ⊙ (X2 Y2^T) (Xj: O x R, Yj: I x R), 2 R (O + I) values. The
Hadamard product of two rank-R products reaches rank R^2, hence the rank of each layer:

    R = ceil((1 - gamma) r_min + gamma r_max),  gamma = model.fedpara_gamma,

r_min = min(ceil(sqrt(O)), ceil(sqrt(I))) (the smallest R with R^2 >= min(O, I), full rank
possible) and r_max the largest R whose factors are no more values than the dense layer:
floor of the positive root of k^2 R^2 + (O + I) R - O I k^2 / 2 = 0 for a conv,
floor(O I / (2 (O + I))) for a Linear. A small layer can have r_max < r_min; R then lies between
them and the factors outnumber the dense weights (a 1x1 conv 8 -> 8 at gamma 0.1: R = 3, 114
values for 64), as in the baseline.

This follows Flower's FedPara baseline (`baselines/fedpara/fedpara/models.py`; PEFT's LoHa
layer composes the same Tucker form): the rank rule above (`_calc_from_ratio`), every conv
parameterised, the first one included (its VGG-16 replaces every nn.Conv2d, so the ResNet's
1x1 shortcut convs are parameterised too), the classifier's Linear layers dense, GroupNorm
trained and sent, no tanh on the two factors (its `add_nonlinear` is off), and its
initialisation: each core and factor Kaiming-normal with fan_out and the ReLU gain (std
sqrt(2 / (R k^2)) for a core, sqrt(2 / R) for a conv factor, sqrt(2 / O) and sqrt(2 / I) for a
Linear's). Where this departs:
- `model.fedpara_on_head=true` parameterises the head's Linear with the paper's W = (X1 Y1^T) ⊙
  (X2 Y2^T); the baseline's low-rank Linear (its MNIST models) is pFedPara's personalised
  W1 ⊙ W2 + W1, and its VGG keeps the classifier dense (fcl's default);
- R is at least 1: for a Linear with few outputs (a 2-class head) r_max is 0, and the baseline's
  rule would then give a rank-0 layer at large gamma;
- the ResNet's convs have no bias (the baseline's VGG convs carry a zero-initialised one).
A model's weights start from the factors' random draw: a loaded backbone (`model.weights`,
`model.pretrained`) has no factors to give, so the config refuses one.
"""
from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

from fcl.models.backbone import Backbone
from fcl.methods.full.model import FullNet


def conv_rank(out_ch: int, in_ch: int, kernel: int, gamma: float) -> int:
    """R of a conv at `gamma`, as the baseline's Conv2d._calc_from_ratio (at least 1)."""
    r_min = min(math.ceil(math.sqrt(out_ch)), math.ceil(math.sqrt(in_ch)))
    a, b, c = kernel ** 2, out_ch + in_ch, -out_ch * in_ch * kernel ** 2 / 2
    r_max = math.floor((-b + math.sqrt(b * b - 4 * a * c)) / (2 * a))
    return max(1, math.ceil((1 - gamma) * r_min + gamma * r_max))


def linear_rank(out_features: int, in_features: int, gamma: float) -> int:
    """R of a Linear at `gamma`, as the baseline's Linear._calc_from_ratio (at least 1)."""
    r_min = min(math.ceil(math.sqrt(out_features)), math.ceil(math.sqrt(in_features)))
    r_max = math.floor(out_features * in_features / (2 * (out_features + in_features)))
    return max(1, math.ceil((1 - gamma) * r_min + gamma * r_max))


def _kaiming(*shape: int) -> nn.Parameter:
    """The baseline's init of every core and factor: Kaiming-normal, fan_out, ReLU gain."""
    t = torch.empty(*shape)
    nn.init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu")
    return nn.Parameter(t)


class TuckerKernel(nn.Module):
    """One of a conv's two low-rank kernels: T x1 X x2 Y (the baseline's LowRank)."""

    def __init__(self, out_ch: int, in_ch: int, kernel: int, rank: int):
        super().__init__()
        self.t = _kaiming(rank, rank, kernel, kernel)
        self.x = _kaiming(rank, out_ch)
        self.y = _kaiming(rank, in_ch)

    def forward(self) -> torch.Tensor:
        return torch.einsum("abuv,ao,bi->oiuv", self.t, self.x, self.y)


class FedParaConv2d(nn.Module):
    """A conv whose kernel is W1 ⊙ W2, with the replaced conv's stride, padding and groups."""

    def __init__(self, conv: nn.Conv2d, gamma: float):
        super().__init__()
        out_ch, in_ch, kh, kw = conv.weight.shape
        if kh != kw:
            raise ValueError(f"model.adapter=fedpara: a {kh}x{kw} kernel is not square")
        self.rank = conv_rank(out_ch, in_ch, kh, gamma)
        self.w1 = TuckerKernel(out_ch, in_ch, kh, self.rank)
        self.w2 = TuckerKernel(out_ch, in_ch, kh, self.rank)
        self.bias = None if conv.bias is None else nn.Parameter(torch.zeros(out_ch))
        self.stride, self.padding = conv.stride, conv.padding
        self.dilation, self.groups = conv.dilation, conv.groups

    def weight(self) -> torch.Tensor:
        return self.w1() * self.w2()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, self.weight(), self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class FedParaLinear(nn.Module):
    """W = (X1 Y1^T) ⊙ (X2 Y2^T) plus a zero-initialised bias (the baseline's Linear's)."""

    def __init__(self, in_features: int, out_features: int, gamma: float):
        super().__init__()
        self.rank = linear_rank(out_features, in_features, gamma)
        self.x1, self.y1 = _kaiming(out_features, self.rank), _kaiming(in_features, self.rank)
        self.x2, self.y2 = _kaiming(out_features, self.rank), _kaiming(in_features, self.rank)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def weight(self) -> torch.Tensor:
        return (self.x1 @ self.y1.T) * (self.x2 @ self.y2.T)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight(), self.bias)


def parameterise_(net: nn.Module, gamma: float) -> nn.Module:
    """`net` with every nn.Conv2d replaced, in place, by a FedParaConv2d of its shape."""
    for name, conv in [(n, m) for n, m in net.named_modules() if isinstance(m, nn.Conv2d)]:
        parent, _, child = name.rpartition(".")
        setattr(net.get_submodule(parent), child, FedParaConv2d(conv, gamma))
    return net


class FedParaTask(nn.Module):
    """One task's model: a copy of the backbone with FedPara convs (its norms trained), and
    the head."""

    def __init__(self, backbone: Backbone, num_classes: int, gamma: float, on_head: bool):
        super().__init__()
        self.net = parameterise_(copy.deepcopy(backbone), gamma).requires_grad_(True)
        self.head = (FedParaLinear(backbone.out_channels, num_classes, gamma) if on_head
                     else nn.Linear(backbone.out_channels, num_classes))


class FedParaNet(FullNet):
    """`full`'s layout (fcl.methods.full.model): the untouched original as `backbone`, never run,
    and one whole FedPara model per task."""

    def __init__(self, backbone: Backbone, classes_per_task: list[int], gamma: float,
                 on_head: bool = False):
        super().__init__(backbone, classes_per_task,
                         lambda b, n: FedParaTask(b, n, gamma, on_head))


def layer_ranks(task: nn.Module) -> list[int]:
    """R of every FedPara layer of a task module, in module order (`fcl params` prints them)."""
    return [m.rank for m in task.modules() if isinstance(m, (FedParaConv2d, FedParaLinear))]
