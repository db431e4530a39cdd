"""NetTailor's task proxies on a frozen backbone (the FCL paper's method; `model.py`)."""
from __future__ import annotations

from fcl.methods.contract import Method


def build(cfg, backbone, classes_per_task):
    from fcl.methods.nettailor.model import NetTailorNet
    return NetTailorNet(backbone, classes_per_task, cfg.proxy_depth, cfg.gate_init, cfg.norm,
                        cfg.node_relu, cfg.complexity_penalty)


METHOD = Method(
    name="nettailor", label="NetTailor",
    summary="nettailor = NetTailor's proxies per task on the frozen backbone (the FCL paper; "
            "fcl/methods/nettailor/)",
    build=build,
    keys=("model.proxy_depth", "model.node_relu", "model.gate_init", "model.complexity_penalty"),
    keys_always_hashed=True)
