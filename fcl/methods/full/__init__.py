"""The whole model trained and sent: FedAvg's baseline (`model.py`)."""
from __future__ import annotations

from fcl.methods.contract import Method


def build(cfg, backbone, classes_per_task):
    from fcl.methods.full.model import FullNet
    return FullNet(backbone, classes_per_task)


METHOD = Method(
    name="full", label="FedAvg",
    summary="full = the whole model trained and sent (FedAvg baseline; fcl/methods/full/)",
    build=build, describe=lambda m: "full (every weight trained and sent: FedAvg)")
