"""`model.backbone` + `model.adapter` -> one model for the whole run.

A model is a `fcl.models.contract.TaskModel`: `forward(x, task)`, `tasks` (a ModuleList: task
t's trainable module), `extra_loss(task)` and a frozen `backbone`. `ADAPTERS` is the table of
the ones there are."""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from fcl.config import ModelConfig
from fcl.models.backbone import build_backbone
from fcl.models.fedpara import FedParaNet
from fcl.models.fedweit import FedWeITNet
from fcl.models.full import FullNet
from fcl.models.lora import LoRANet
from fcl.models.nettailor import NetTailorNet
from fcl.models.pretrained import load_pretrained_
from fcl.models.zerofl import ZeroFLNet
from fcl.seeding import derive_seed


def _nettailor(cfg: ModelConfig, backbone, classes_per_task: list[int]) -> nn.Module:
    return NetTailorNet(backbone, classes_per_task, cfg.proxy_depth, cfg.gate_init, cfg.norm,
                        cfg.node_relu, cfg.complexity_penalty)


def _lora(cfg: ModelConfig, backbone, classes_per_task: list[int]) -> nn.Module:
    return LoRANet(backbone, classes_per_task, cfg.lora_rank, cfg.lora_alpha,
                   cfg.lora_train_norms, cfg.lora_on_head)


def _full(cfg: ModelConfig, backbone, classes_per_task: list[int]) -> nn.Module:
    if cfg.zerofl_sparsity > 0:         # ZeroFL: full with SWAT's sparse local training
        return ZeroFLNet(backbone, classes_per_task, cfg.zerofl_sparsity)
    return FullNet(backbone, classes_per_task)


def _fedweit(cfg: ModelConfig, backbone, classes_per_task: list[int]) -> nn.Module:
    return FedWeITNet(backbone, classes_per_task, cfg.fedweit_lambda_l1)


def _fedpara(cfg: ModelConfig, backbone, classes_per_task: list[int]) -> nn.Module:
    return FedParaNet(backbone, classes_per_task, cfg.fedpara_gamma, cfg.fedpara_on_head)


ADAPTERS: dict[str, Callable[[ModelConfig, nn.Module, list[int]], nn.Module]] = {
    "nettailor": _nettailor,
    "lora": _lora,
    "full": _full,
    "fedweit": _fedweit,
    "fedpara": _fedpara,
}


def build_model(cfg: ModelConfig, image_shape: tuple[int, int, int], classes_per_task: list[int],
                seed: int) -> nn.Module:
    """Backbone and task modules initialised from `seed` alone (global RNG left untouched)."""
    backbone = build_backbone(cfg.backbone, image_shape[0], cfg.norm, cfg.width, seed,
                              cfg.stem, cfg.input_size, cfg.norm_groups)
    load_pretrained_(backbone, cfg, image_shape[0])   # model.weights / model.pretrained, if set
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, "task_modules"))
        model = ADAPTERS[cfg.adapter](cfg, backbone, classes_per_task)
    return model
