"""What the engine asks of a model (`build_model`'s result), as a checked protocol.

A model is a frozen `backbone` shared by every task plus one trainable module per task in
`tasks`: task t's module holds everything the federation moves for t (its float parameters that
require grad are trained and stepped by the server; its float buffers are averaged), and
nothing else. `model(x, t)` gives task t's logits; `extra_loss(t)` a loss term the client adds
(NetTailor's complexity penalty) or None. Each method's `build` makes one
(`fcl.methods.registry`).
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch
from torch import nn

from fcl.models.task_state import Params, trainable_names


@runtime_checkable
class TaskModel(Protocol):
    backbone: nn.Module
    tasks: nn.ModuleList

    def __call__(self, x: torch.Tensor, task: int) -> torch.Tensor: ...

    def extra_loss(self, task: int) -> torch.Tensor | None: ...


def adapter_params(model: TaskModel) -> Params:
    """Every task module's trained tensors, named `tasks.<t>.<name>` (the live parameters)."""
    out = {}
    for t, module in enumerate(model.tasks):
        tensors = dict(module.named_parameters())
        out.update({f"tasks.{t}.{n}": tensors[n] for n in trainable_names(module)})
    return out
