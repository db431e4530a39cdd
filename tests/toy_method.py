"""A continual method from outside fcl, as a researcher would add one: a linear probe (a head per
task on the frozen backbone's features, nothing else trained or sent). One module whose
`METHOD` is a `Method`; fcl's own code is not touched. Load it with `FCL_METHODS=toy_method`
(this folder on the path), or `fcl.methods.registry.register(toy_method.METHOD)`."""
from __future__ import annotations

import torch
from torch import nn

from fcl.methods.contract import Method


class ProbeTask(nn.Module):
    def __init__(self, features: int, num_classes: int):
        super().__init__()
        self.head = nn.Linear(features, num_classes)


class ProbeNet(nn.Module):
    """The frozen backbone's features, a linear head per task."""

    def __init__(self, backbone: nn.Module, classes_per_task: list[int]):
        super().__init__()
        self.backbone = backbone
        self.tasks = nn.ModuleList(ProbeTask(backbone.out_channels, n) for n in classes_per_task)

    def train(self, mode: bool = True):
        super().train(mode)
        self.backbone.eval()          # frozen: its norms keep their statistics
        return self

    def forward(self, x: torch.Tensor, task: int) -> torch.Tensor:
        return self.tasks[task].head(self.backbone.features(x))

    def extra_loss(self, task: int) -> torch.Tensor | None:
        return None


METHOD = Method(
    name="probe", label="Linear probe",
    summary="probe = a linear head per task on the frozen backbone (tests/toy_method.py)",
    build=lambda cfg, backbone, classes: ProbeNet(backbone, classes),
    describe=lambda m: "probe (a linear head per task, the backbone frozen)")
