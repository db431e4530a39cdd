"""`model.backbone` + `model.adapter` -> one model for the whole run.

A model is a `fcl.models.contract.TaskModel`: `forward(x, task)`, `tasks` (a ModuleList: task
t's trainable module), `extra_loss(task)` and a frozen `backbone`. The backbone comes from
`model.backbone` (and `model.pretrained` / `model.weights`); the task modules from the method's
`build` (`fcl.methods.registry`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from fcl.methods.registry import method
from fcl.models.backbone import build_backbone
from fcl.models.pretrained import load_pretrained_
from fcl.seeding import derive_seed

if TYPE_CHECKING:
    from fcl.config import ModelConfig


def build_model(cfg: ModelConfig, image_shape: tuple[int, int, int], classes_per_task: list[int],
                seed: int) -> nn.Module:
    """Backbone and task modules initialised from `seed` alone (global RNG left untouched)."""
    backbone = build_backbone(cfg.backbone, image_shape[0], cfg.norm, cfg.width, seed,
                              cfg.stem, cfg.input_size, cfg.norm_groups)
    load_pretrained_(backbone, cfg, image_shape[0])   # model.weights / model.pretrained, if set
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, "task_modules"))
        model = method(cfg.adapter).build(cfg, backbone, classes_per_task)
    return model
