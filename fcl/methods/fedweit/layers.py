"""FedWeIT's decomposed layers (Yoon et al., ICML 2021; official code `wyjeong/FedWeIT`,
`modules/layers.py`, `modules/nets.py`; a PyTorch ResNet port: `LINC-BIT/FedKNOW`,
`models/ResNetWEIT.py`).

Every convolution of the backbone becomes a decomposed layer whose kernel for task t is

    theta_t = B * sigmoid(m_t) + A_t + sum_k alpha_t[k] * KB_t[k]

B (O x I x k x k) the base shared by all tasks of a client, trained and federated (it starts
from the backbone's weights, which stay frozen and untouched in `backbone`); m_t (O) a mask per
output channel; A_t (O x I x k x k) the task-adaptive kernel, initialised to B / 3 (the code's
`adaptive_factor`, from the initial B, as the code creates every task's variables at build);
alpha_t (S) attention over KB_t (S x O x I x k x k), the knowledge base: every client's latest
thresholded A (one slot per client, the receiving client's own earlier task included, where the
paper speaks of other clients' kernels), frozen, zero for a client's first task. In evaluation
mode A_t is hard-thresholded at |A| > lambda_1, as the code's `l1_pruning` does at inference.
Masks and attention start from Keras's VarianceScaling (truncated normal, std 1/sqrt(n)).

What a task module holds (trained locally, never averaged): the masks and adaptive kernels of
every conv, per-task copies of the backbone's norms (their affine parameters are the task's
biases: the project's convs have none, a norm follows each of them) and the task's head. The
code's decomposed layers (LeNet) carry a per-task bias; FedKNOW's ResNet keeps its norms
shared; per-task norms are this project's reading. B lives in `shared`, outside the task
modules. KB and alpha depend on the number of clients, which the model config does not know:
they enter the kernel through `set_knowledge(task, kb, alpha)`, owned by the FedWeIT round
(`fcl.methods.fedweit.round`). The backbone has no linear layer (the head is per task), so only
convolutions are decomposed.
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
from fcl.models.task_state import Params

ADAPTIVE_FACTOR = 3.0              # A_t starts at B / 3 (nets.py: adaptive_factor)


def variance_scaling_(t: torch.Tensor, generator: torch.Generator | None = None
                      ) -> torch.Tensor:
    """Keras VarianceScaling(scale 1, fan_in, truncated normal) of a vector: std 1/sqrt(n),
    divided by 0.8796 (the std of a standard normal cut at +-2), cut at 2 std."""
    std = math.sqrt(1.0 / t.numel()) / 0.87962566103423978
    return nn.init.trunc_normal_(t, std=std, a=-2 * std, b=2 * std, generator=generator)


def threshold(a: torch.Tensor, lambda_l1: float) -> torch.Tensor:
    """A with every entry of |A| <= lambda_1 set to 0 (client.py `get_adaptives`)."""
    return a * (a.abs() > lambda_l1)


def decomposed_kernel(base: torch.Tensor, mask: torch.Tensor, adaptive: torch.Tensor,
                      kb: torch.Tensor | None = None, alpha: torch.Tensor | None = None
                      ) -> torch.Tensor:
    """B * sigmoid(m) (per output channel) + A + sum_k alpha[k] KB[k]."""
    shape = (-1,) + (1,) * (base.dim() - 1)
    kernel = base * torch.sigmoid(mask).view(shape) + adaptive
    if kb is not None and kb.shape[0]:
        kernel = kernel + torch.tensordot(alpha, kb, dims=1)
    return kernel


class FedWeITTask(nn.Module):
    """One task's local state: masks and adaptive kernels per conv, norms and head."""

    def __init__(self, backbone: Backbone, num_classes: int):
        super().__init__()
        layers = dict(backbone.named_modules())
        convs, norms = adapted_layers(backbone)
        self.masks = nn.ParameterDict({module_key(n): nn.Parameter(variance_scaling_(
            torch.empty(layers[n].out_channels))) for n in convs})
        self.adaptive = nn.ParameterDict({module_key(n): nn.Parameter(
            layers[n].weight.detach() / ADAPTIVE_FACTOR) for n in convs})
        self.norms = nn.ModuleDict({module_key(n): copy.deepcopy(layers[n]).requires_grad_(True)
                                    for n in norms})
        self.head = nn.Linear(backbone.out_channels, num_classes)


class FedWeITNet(nn.Module):
    """The frozen backbone (B's starting point, never moved), B in `shared`, a `FedWeITTask`
    per task, and per task the knowledge base and attention of the client it now holds."""

    def __init__(self, backbone: Backbone, classes_per_task: list[int], lambda_l1: float):
        super().__init__()
        self.backbone = backbone
        self._layers = dict(backbone.named_modules())    # plain dict: not registered twice
        self._convs, self._norms = adapted_layers(backbone)
        self.shared = nn.ParameterDict({module_key(n): nn.Parameter(
            self._layers[n].weight.detach().clone()) for n in self._convs})
        self.tasks = nn.ModuleList(FedWeITTask(backbone, n) for n in classes_per_task)
        self.lambda_l1 = lambda_l1
        self.knowledge: dict[int, tuple[Params, Params]] = {}   # task -> (KB, alpha) per conv

    def train(self, mode: bool = True):
        super().train(mode)
        self.backbone.eval()
        return self

    def set_knowledge(self, task: int, kb: Params | None, alpha: Params | None) -> None:
        """The knowledge base (per conv: S x O x I x k x k) and attention (S) task `task`'s
        kernels add; None: none (a client's first task)."""
        if kb is None:
            self.knowledge.pop(task, None)
        else:
            self.knowledge[task] = (kb, alpha)

    def kernel(self, task: int, name: str) -> torch.Tensor:
        m = self.tasks[task]
        adaptive = m.adaptive[name]
        if not self.training:            # inference uses the thresholded A (l1_pruning)
            adaptive = threshold(adaptive, self.lambda_l1)
        kb, alpha = self.knowledge.get(task, (None, None))
        return decomposed_kernel(self.shared[name], m.masks[name], adaptive,
                                 kb[name] if kb else None, alpha[name] if alpha else None)

    def swap(self, task: int) -> Swap:
        m = self.tasks[task]
        table: dict[nn.Module, Callable] = {
            self._layers[n]: partial(_conv, layer=self._layers[n],
                                     kernel=partial(self.kernel, task, module_key(n)))
            for n in self._convs}
        table.update({self._layers[n]: m.norms[module_key(n)] for n in self._norms})
        return lambda layer: table.get(layer, layer)

    def forward(self, x: torch.Tensor, task: int) -> torch.Tensor:
        return self.tasks[task].head(self.backbone.features(x, self.swap(task)))

    def extra_loss(self, task: int) -> torch.Tensor | None:
        return None          # FedWeIT's regularisers need past tasks: `fedweit_penalty`

    def conv_names(self) -> list[str]:
        return [module_key(n) for n in self._convs]


def _conv(x: torch.Tensor, layer: nn.Conv2d, kernel: Callable[[], torch.Tensor]) -> torch.Tensor:
    return F.conv2d(x, kernel(), None, layer.stride, layer.padding, layer.dilation, layer.groups)


def l2_half(t: torch.Tensor) -> torch.Tensor:
    """tf.nn.l2_loss: half the sum of squares."""
    return t.pow(2).sum() / 2


def fedweit_penalty(model: FedWeITNet, task: int, anchors: dict[int, Params], wd: float,
                    lambda_l1: float, lambda_l2: float) -> torch.Tensor:
    """client.py `loss` less the cross-entropy, per conv: wd (l2(A_t) + l2(m_t)) + lambda_1
    |A_t|_1, + wd l2(B) when the client has no past task, else for every past task i
    lambda_2 l2(B * sigmoid(m_i) + A_i - theta_i*) + lambda_1 |A_i|_1, with l2 = half the sum of
    squares (the official form; a mean would rescale lambda_2). `anchors[i]` holds theta_i*,
    B * sigmoid(m_i) + A_i at the client's last task switch. The code's lambda_mask |m_t|_1 is
    0 in its config and left out."""
    cur = model.tasks[task]
    total = torch.zeros((), device=next(cur.parameters()).device)
    for n in model.conv_names():
        a, m, b = cur.adaptive[n], cur.masks[n], model.shared[n]
        total = total + wd * (l2_half(a) + l2_half(m)) + lambda_l1 * a.abs().sum()
        if not anchors:
            total = total + wd * l2_half(b)
        for i, theta in anchors.items():
            past = model.tasks[i]
            restored = decomposed_kernel(b, past.masks[n], past.adaptive[n])
            total = total + lambda_l2 * l2_half(restored - theta[n])
            total = total + lambda_l1 * past.adaptive[n].abs().sum()
    return total


@torch.no_grad()
def anchor(model: FedWeITNet, task: int) -> Params:
    """theta_i* of task `task` with the model's current B: B * sigmoid(m_i) + A_i per conv."""
    m = model.tasks[task]
    return {n: decomposed_kernel(model.shared[n], m.masks[n], m.adaptive[n]).clone()
            for n in model.conv_names()}


def channel_mask(mask: torch.Tensor, sparsity: float, rule: str) -> torch.Tensor:
    """The output channels of B a client sends (bool, per channel), from |m_t|.

    code: |m| strictly above the floor(s n)-th smallest |m| (0-based), as the official
          `get_weights` cuts it: n - floor(s n) - 1 channels when the |m| are distinct
          (6 of 10 at s = 0.3);
    top:  the ceil((1 - s) n) channels of largest |m| (7 of 10 at s = 0.3), the paper's
          "top 70%" (ties broken by the lower index)."""
    a = mask.detach().abs()
    n = a.numel()
    if rule == "top":
        keep = torch.zeros(n, dtype=torch.bool, device=a.device)
        order = torch.sort(a, descending=True, stable=True).indices
        keep[order[:math.ceil(round((1 - sparsity) * n, 9))]] = True
        return keep
    cut = torch.sort(a).values[min(math.floor(n * sparsity), n - 1)]
    return a > cut
