"""ZeroFL (Qiu et al., ICLR 2022): `model.adapter=full` with sparse local training in the SWAT
manner (Raihan & Aamodt, NeurIPS 2020) at sparsity s = `model.zerofl_sparsity` (0 = off; the
paper's 0.9), and uploads at density (1 - s) + r, r = `model.zerofl_mask_ratio` (0, 0.1, 0.2).

Every convolution of the task's copy of the backbone (the first one and the 1x1 shortcuts
included) and every Linear inside it (none in fcl's ResNets) is a SWAT layer:

    forward   y = conv(x, top_k(W, 1 - s))          (top-K weights by magnitude, per layer)
    backward  dL/dx = conv_input(top_k(W, 1 - s), g)   (through the sparse weights)
              dL/dW = conv_weight(top_k(x, 1 - s), g)  (from the top-K input activations)
              dL/db = sum of g

and the gradient dL/dW, dense, updates the dense W: a weight outside the top-K this step still
moves, and once its magnitude passes the K-th largest it is back in the forward (it regrows).
top_k(t, d) keeps every value with |v| >= the K-th largest |v|, K = ceil(d n) over the n values
of the tensor (ties at the threshold kept, as the reference's `drop_nhwc_send_th` /
`matrix_drop` do). Evaluation runs the same sparse forward. GroupNorm / BatchNorm layers, every
bias and the head (the final FC) stay dense, trained and sent dense, as in ZeroFL.

Uploads (`fcl.federated.compression.Codec`, `topk`): each client sends every conv kernel (4-D
tensor) at per-tensor density (1 - s) + r by magnitude, top_k(W, 1 - s + r), zero-filled, in
the sparse encoding of magnitude pruning (`fcl.federated.pruning`: a count, the float32
values, the cheaper of a bitmap and uint32 indices per tensor); norms, biases, the head and
norm statistics go dense in float32. r = 0 sends exactly the weights of the sparse forward; r
> 0 adds the next-largest r n of each layer. The server averages the zero-filled uploads (plain
FedAvg with `server.optimizer=fedsgd`, `server.lr=1`) and broadcasts its dense aggregate.

References: `relogu/fl_powerpropagation`, `project/task/utils/swat_modules.py` (`swat_conv2d`,
`swat_linear`, `SWATConv2D`, `SWATLinear`) and `project/task/utils/drop.py` (taken from
`AamirRaihan/SWAT`'s `custom_layers`). Where this departs from them:
- The dense weights are kept: the forward uses top_k(W) as a new tensor and the optimizer
  updates W. The reference's `SWATConv2D.forward` writes `self.weight.data = drop(...)`, so a
  dropped weight restarts from 0 at each step (it regrows only if one step's update lifts it
  into the top-K); SWAT's paper keeps the dense weights, as fcl does.
- The activations' top-K is taken anew at every forward, per layer, over the whole input
  tensor (batch, channels, height, width together, `drop_nhwc`'s rule). The reference computes
  a conv's activation threshold once, at its first forward, and reuses it; SWAT recomputes it
  every `period` batches after a warm-up (fcl: period 1, no warm-up).
- One sparsity s for weights and activations and unstructured top-K for both (the reference's
  default `pruning_type` is `structured_filter`; ZeroFL's experiments use unstructured SWAT).
- The reference's `SWATLinear` keeps the top `sparsity` fraction of the weights (its
  `matrix_drop(weight, self.sparsity)` takes a keep fraction): fcl's Linear keeps 1 - s, as a
  conv does. The head is not a SWAT layer.
- No powerpropagation (alpha = 1).
- Under bf16 autocast the backward runs in float32 (the saved tensors' dtype).
Clients of a task train one by one (`run.client_batching` falls back): the custom backward is
not vmapped.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.grad import conv2d_input, conv2d_weight

from fcl.federated.pruning import top_k
from fcl.methods.full.model import FullNet, FullTask
from fcl.models.backbone import Backbone


class _SWATConv(torch.autograd.Function):
    """conv with the top-K weights; dL/dW from the top-K input activations (module docstring)."""

    @staticmethod
    def forward(ctx, x, weight, bias, density, stride, padding, dilation, groups):
        w = top_k(weight, density)
        ctx.geometry = (stride, padding, dilation, groups)
        ctx.x_shape, ctx.x_dtype = x.shape, x.dtype
        xs = top_k(x, density) if ctx.needs_input_grad[1] else None
        ctx.save_for_backward(xs, w, bias)
        return F.conv2d(x, w, bias, stride, padding, dilation, groups)

    @staticmethod
    def backward(ctx, g):
        xs, w, bias = ctx.saved_tensors
        g = g.to(w.dtype)
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = conv2d_input(ctx.x_shape, w, g, *ctx.geometry).to(ctx.x_dtype)
        if ctx.needs_input_grad[1]:
            gw = conv2d_weight(xs.to(w.dtype), w.shape, g, *ctx.geometry)
        if bias is not None and ctx.needs_input_grad[2]:
            gb = g.sum(dim=(0, 2, 3))
        return gx, gw, gb, None, None, None, None, None


class _SWATLinear(torch.autograd.Function):
    """linear with the top-K weights; dL/dW from the top-K inputs."""

    @staticmethod
    def forward(ctx, x, weight, bias, density):
        w = top_k(weight, density)
        ctx.x_dtype = x.dtype
        xs = top_k(x, density) if ctx.needs_input_grad[1] else None
        ctx.save_for_backward(xs, w, bias)
        return F.linear(x, w, bias)

    @staticmethod
    def backward(ctx, g):
        xs, w, bias = ctx.saved_tensors
        g = g.to(w.dtype)
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = (g @ w).to(ctx.x_dtype)
        if ctx.needs_input_grad[1]:
            gw = g.reshape(-1, g.shape[-1]).T @ xs.to(w.dtype).reshape(-1, xs.shape[-1])
        if bias is not None and ctx.needs_input_grad[2]:
            gb = g.reshape(-1, g.shape[-1]).sum(0)
        return gx, gw, gb, None


class ZeroFLConv2d(nn.Conv2d):
    """An nn.Conv2d (same parameters, same names) whose forward and backward are SWAT's."""
    sparsity: float = 0.0
    sequential_only = "ZeroFL's SWAT layers have a custom backward that is not vmapped"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.padding_mode != "zeros":
            raise ValueError(f"model.zerofl_sparsity: padding_mode={self.padding_mode} "
                             f"is not supported")
        return _SWATConv.apply(x, self.weight, self.bias, 1 - self.sparsity, self.stride,
                               self.padding, self.dilation, self.groups)


class ZeroFLLinear(nn.Linear):
    """An nn.Linear (same parameters, same names) whose forward and backward are SWAT's."""
    sparsity: float = 0.0
    sequential_only = ZeroFLConv2d.sequential_only

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _SWATLinear.apply(x, self.weight, self.bias, 1 - self.sparsity)


def sparsify_(net: nn.Module, sparsity: float) -> nn.Module:
    """`net` with every nn.Conv2d and nn.Linear made a SWAT layer at `sparsity`, in place: the
    module keeps its tensors (its class is swapped), so nothing is drawn from any RNG and the
    message's names are `full`'s."""
    for m in net.modules():
        for dense, swat in ((nn.Conv2d, ZeroFLConv2d), (nn.Linear, ZeroFLLinear)):
            if type(m) is dense:
                m.__class__ = swat
                m.sparsity = sparsity
    return net


class ZeroFLTask(FullTask):
    """`full`'s task module (a trainable copy of the backbone, and the head) with SWAT layers
    in the copy; the head stays dense."""

    def __init__(self, backbone: Backbone, num_classes: int, sparsity: float):
        super().__init__(backbone, num_classes)
        sparsify_(self.net, sparsity)


class ZeroFLNet(FullNet):
    """`full` (fcl.methods.full.model) with ZeroFL's sparse local training."""

    def __init__(self, backbone: Backbone, classes_per_task: list[int], sparsity: float):
        super().__init__(backbone, classes_per_task,
                         lambda b, n: ZeroFLTask(b, n, sparsity))
