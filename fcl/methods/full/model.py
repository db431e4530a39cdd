"""`model.adapter=full`: every weight is trained and sent (FLoCoRA's FedAvg baseline).

The engine's contract is a frozen `backbone` plus per-task trainable modules whose tensors are
the federated message. With `full`, each task module owns a trainable copy of the whole backbone
(made at build time from the same seeded weights) and its head, so the task-state machinery
(server state per task, broadcast, deltas, buffers such as BatchNorm statistics) works
unchanged, and a T = 1 run is plain FedAvg of the whole model. `model.backbone` stays the
untouched original: it is never used in the forward pass and never moves. In an FCL run (T > 1)
every task trains a separate whole model, the upper bound on what a task could send.
"""
from __future__ import annotations

import copy
from typing import Callable

import torch
from torch import nn

from fcl.models.backbone import Backbone


class FullTask(nn.Module):
    def __init__(self, backbone: Backbone, num_classes: int):
        super().__init__()
        self.net = copy.deepcopy(backbone).requires_grad_(True)
        self.head = nn.Linear(backbone.out_channels, num_classes)


class FullNet(nn.Module):
    """The untouched original as `backbone`, never run, and one whole model per task, built by
    `make_task(backbone, classes)` (`FullTask`; FedPara's parameterised copy)."""

    def __init__(self, backbone: Backbone, classes_per_task: list[int],
                 make_task: Callable[[Backbone, int], nn.Module] = FullTask):
        super().__init__()
        self.backbone = backbone
        self.tasks = nn.ModuleList(make_task(backbone, n) for n in classes_per_task)

    def train(self, mode: bool = True):
        super().train(mode)
        self.backbone.eval()   # the frozen original; the task copies do train their norms
        return self

    def forward(self, x: torch.Tensor, task: int) -> torch.Tensor:
        module = self.tasks[task]
        return module.head(module.net.features(x))

    def extra_loss(self, task: int) -> torch.Tensor | None:
        return None
