"""A task's state as data: `Params = dict[str, Tensor]` of its module's float parameters and
float buffers. That dict is the federated message; the model only ever has tensors copied into
it in place (no per-client rebuild, no deepcopy)."""
from __future__ import annotations

from typing import TypeAlias

import torch
from torch import nn

Params: TypeAlias = dict[str, torch.Tensor]


def trainable_names(module: nn.Module) -> list[str]:
    """Float parameters that the client trains and the server optimizer steps."""
    return [n for n, p in module.named_parameters() if p.requires_grad and p.is_floating_point()]


def buffer_names(module: nn.Module) -> list[str]:
    """Float buffers (norm running statistics): averaged by the server, not optimised.
    Integer buffers (BatchNorm's num_batches_tracked) stay local: they only matter for
    momentum=None BatchNorm, which no model of fcl uses."""
    return [n for n, b in module.named_buffers() if b.is_floating_point()]


def _tensors(module: nn.Module) -> dict[str, torch.Tensor]:
    return {**dict(module.named_parameters()), **dict(module.named_buffers())}


def read_state(module: nn.Module, names: list[str]) -> Params:
    """Detached copies of the named tensors (safe to keep while the module trains on)."""
    tensors = _tensors(module)
    return {n: tensors[n].detach().clone() for n in names}


@torch.no_grad()
def load_state_(module: nn.Module, state: Params) -> None:
    """Copy `state` into the module's tensors in place."""
    tensors = _tensors(module)
    for n, value in state.items():
        tensors[n].copy_(value)


def live_tensors(module: nn.Module, names: list[str]) -> list[torch.Tensor]:
    tensors = _tensors(module)
    return [tensors[n] for n in names]

