"""The frozen backbones shipped in the package (`fcl/weights/`, each with the `fcl pretrain`
command that wrote it in its README), named in a config as `model.weights=fcl:NAME`.

A name, not a path: the config, the trial ids (config hashes) and the stored manifests read the
same on every machine and on every node of a cluster, wherever fcl is installed; the file is
found in the installed package when the run loads it. Any other `model.weights` value is a path.
"""
from __future__ import annotations

from pathlib import Path

from fcl.config_error import ConfigError

PREFIX = "fcl:"
FOLDER = Path(__file__).resolve().with_name("weights")
SHA256 = {
    "resnet_tiny-fashion_mnist.pt":
        "40a3ed30c3bc7c33a9bde00605488b96dc170b79e05d9b8a9a961063dcc97816",
    "resnet_tiny-cifar10_rest.pt":
        "e2371a803ac502e185081ba26413d1e2074b7e8b29287717800ca0f14e31c31a",
}


def shipped(name: str) -> str:
    """The `model.weights` value of a shipped backbone."""
    if name not in SHA256:
        raise ValueError(f"no shipped backbone {name}")
    return PREFIX + name


def weights_file(value: str) -> str:
    """The file `model.weights` names: `fcl:NAME` -> the package's fcl/weights/NAME; a path as
    it is. An unknown NAME is one ConfigError naming the shipped ones."""
    if not value.startswith(PREFIX):
        return value
    name = value[len(PREFIX):]
    if name not in SHA256:
        raise ConfigError("model.weights", value, "no such shipped backbone",
                          ", ".join(PREFIX + n for n in SHA256) + ", or a file path")
    return str(FOLDER / name)
