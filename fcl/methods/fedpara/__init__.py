"""FedPara's low-rank Hadamard layers, the whole model trained and sent (`model.py`)."""
from __future__ import annotations

from fcl.config_error import ConfigError
from fcl.methods.contract import Method


def build(cfg, backbone, classes_per_task):
    from fcl.methods.fedpara.model import FedParaNet
    return FedParaNet(backbone, classes_per_task, cfg.fedpara_gamma, cfg.fedpara_on_head)


def describe(m) -> str:
    layers, dense = ("every conv and the FC", "norms") if m.fedpara_on_head else \
        ("every conv", "norms and FC")
    return (f"fedpara (gamma={m.fedpara_gamma:g}; {layers} W1 * W2 of low-rank factors, "
            f"{dense} trained; the factors are sent)")


def layer_ranks(task) -> list[int]:
    from fcl.methods.fedpara.model import layer_ranks as ranks
    return ranks(task)


def check(cfg) -> None:
    """Its weights are its factors' random start: a loaded backbone would go unused."""
    for key, off in (("pretrained", "none"), ("weights", "")):
        if getattr(cfg.model, key) != off:
            raise ConfigError(f"model.{key}", getattr(cfg.model, key), "model.adapter=fedpara "
                              "starts every conv from random factors, so a loaded backbone's "
                              "conv weights would go unused", off or "empty")


METHOD = Method(
    name="fedpara", label="FedPara",
    summary="fedpara = the whole model with FedPara's low-rank Hadamard convs, their factors "
            "sent (Hyeon-Woo et al. 2022; fcl/methods/fedpara/)",
    build=build, describe=describe, check=check, layer_ranks=layer_ranks,
    keys=("model.fedpara_gamma", "model.fedpara_on_head"))
