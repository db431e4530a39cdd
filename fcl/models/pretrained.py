"""Backbone weights from elsewhere: torchvision's ImageNet ResNet-18, or an `fcl pretrain` file.

    model.pretrained=imagenet                      torchvision's IMAGENET1K_V1 weights, downloaded
                                                   once into $TORCH_HOME/hub/checkpoints
    model.pretrained=imagenet model.weights=PATH   that same torchvision file, copied by hand
    model.weights=PATH                             a checkpoint of `fcl pretrain` (or any
                                                   torchvision resnet18 state_dict)
    model.weights=fcl:NAME                         a backbone shipped in the package
                                                   (fcl/shipped_weights.py)

torchvision -> fcl keys (resnet18, `model.stem=imagenet`, `model.norm=batch`): conv1 -> stem.0,
bn1 -> stem.1, layer{s}.{b} -> blocks.{2(s-1)+b}, downsample.{0,1} -> shortcut.{0,1}; `fc` is
dropped (every task has its own head). Weights for RGB on gray images (Fashion-MNIST): the stem's
filters summed over R, G, B, which is what they compute on a gray image copied into all three;
gray weights on RGB images: the filters repeated and divided by 3. The loaded backbone stays
frozen (BatchNorm statistics included); only the per-task modules train.

Inputs of an ImageNet backbone are normalised with ImageNet's mean and std (`input_stats`),
which its frozen BatchNorm statistics expect; gray images use the mean of the three channels'
values. Random and `fcl pretrain` backbones keep the data set's own statistics.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn

from fcl.atomic_file import write_torch_atomic
from fcl.config_error import ConfigError
from fcl.shipped_weights import weights_file

if TYPE_CHECKING:
    from fcl.config import ModelConfig

CHECKPOINT_FORMAT = "fcl-backbone/1"
IMAGENET_MEAN = (0.485, 0.456, 0.406)     # torchvision's IMAGENET1K_V1 preprocessing
IMAGENET_STD = (0.229, 0.224, 0.225)
WEIGHTS_HELP = "a checkpoint written by `fcl pretrain`, or torchvision's resnet18 state_dict"


def torchvision_to_fcl(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """torchvision resnet18 keys -> `Backbone` keys (see the module docstring); `fc` dropped."""
    out = {}
    for key, value in state.items():
        if key.startswith("fc."):
            continue
        new = re.sub(r"^conv1\.", "stem.0.", key)
        new = re.sub(r"^bn1\.", "stem.1.", new)
        m = re.match(r"^layer(\d)\.(\d)\.(.*)$", new)
        if m:
            stage, block, rest = int(m[1]), int(m[2]), m[3]
            rest = rest.replace("downsample.", "shortcut.")
            new = f"blocks.{2 * (stage - 1) + block}.{rest}"
        out[new] = value
    return out


def is_torchvision_layout(state: dict) -> bool:
    return "conv1.weight" in state and "layer1.0.conv1.weight" in state


def architecture(cfg: ModelConfig, in_channels: int) -> dict:
    """What a checkpoint's weights fit: checked key by key when it is loaded."""
    return {"backbone": cfg.backbone, "stem": cfg.stem, "norm": cfg.norm,
            "width": cfg.width if cfg.backbone == "resnet_tiny" else 0,
            "norm_groups": cfg.norm_groups if cfg.norm == "group" else 0,
            "in_channels": in_channels}


def save_checkpoint(path: str | Path, backbone: nn.Module, arch: dict, meta: dict) -> str:
    """Atomic write of the backbone's state_dict with its architecture (the same bytes for the
    same tensors: `write_torch_atomic`); returns its SHA-256."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = {"format": CHECKPOINT_FORMAT, "architecture": arch, "meta": meta,
            "state_dict": {k: v.detach().cpu().clone() for k, v in backbone.state_dict().items()}}
    return hashlib.sha256(write_torch_atomic(blob, path)).hexdigest()


def read_weights(path: str) -> tuple[dict[str, torch.Tensor], dict | None]:
    """(state_dict in fcl keys, architecture or None for a torchvision file)."""
    if not os.path.isfile(path):
        raise ConfigError("model.weights", path, "no such file", WEIGHTS_HELP)
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001  (truncated zip, pickle with code, not torch at all)
        raise ConfigError("model.weights", path, f"not a readable torch file "
                          f"({type(e).__name__})", WEIGHTS_HELP) from None
    if isinstance(blob, dict) and blob.get("format") == CHECKPOINT_FORMAT:
        return blob["state_dict"], blob["architecture"]
    if isinstance(blob, dict) and is_torchvision_layout(blob):
        return torchvision_to_fcl(blob), None
    raise ConfigError("model.weights", path, "neither an fcl backbone checkpoint nor a "
                      "torchvision resnet18 state_dict", WEIGHTS_HELP)


def imagenet_state() -> dict[str, torch.Tensor]:
    """torchvision's ImageNet ResNet-18 (from its hub cache, else downloaded), in fcl keys."""
    from torchvision.models import ResNet18_Weights
    weights = ResNet18_Weights.IMAGENET1K_V1
    cached = Path(torch.hub.get_dir()) / "checkpoints" / os.path.basename(weights.url)
    from fcl.data.download import offline
    why = "no network (FCL_OFFLINE is set)" if offline() and not cached.is_file() else None
    if why is None:
        try:
            return torchvision_to_fcl(weights.get_state_dict(progress=False))
        except Exception as e:  # noqa: BLE001  (URLError, hash mismatch, ...)
            why = f"download failed: {(str(e).splitlines() or [type(e).__name__])[0][:100]}"
    raise ConfigError("model.pretrained", "imagenet", f"torchvision's ImageNet ResNet-18 weights "
                      f"are not available ({why}); put {weights.url} into {cached.parent} or "
                      "pass it as model.weights=PATH", "none, or imagenet where they can be had")


def adapt_in_channels(weight: torch.Tensor, in_channels: int) -> torch.Tensor:
    """First conv's filters for a different number of input channels (see module docstring)."""
    have = weight.shape[1]
    if have == in_channels:
        return weight
    if in_channels == 1:
        return weight.sum(dim=1, keepdim=True)
    if have == 1:
        return weight.repeat(1, in_channels, 1, 1) / in_channels
    raise ValueError(f"{have} input channels cannot feed {in_channels}")


def check_architecture(path: str, saved: dict | None, want: dict) -> None:
    if saved is None:   # torchvision's layout: only its own architecture fits
        saved = {**want, "backbone": "resnet18", "stem": "imagenet", "norm": "batch", "width": 0,
                 "norm_groups": 0}
    for key in ("backbone", "stem", "norm", "width", "norm_groups"):
        if saved.get(key, 0 if key == "norm_groups" else None) != want[key]:
            raise ConfigError("model.weights", path, f"the checkpoint has {key}={saved.get(key)}"
                              f" but the run has model.{key}={want[key]}",
                              f"model.{key}={saved.get(key)} (or another checkpoint)")


@torch.no_grad()
def load_pretrained_(backbone: nn.Module, cfg: ModelConfig, in_channels: int) -> bool:
    """Copy `model.weights` / `model.pretrained` into `backbone` in place; False if neither is
    set (the random init stays). Raises ConfigError naming the key when they do not fit."""
    if cfg.weights:
        state, saved = read_weights(weights_file(cfg.weights))
        source = cfg.weights
    elif cfg.pretrained == "imagenet":
        state, saved, source = imagenet_state(), None, "imagenet"
    else:
        return False
    check_architecture(source, saved, architecture(cfg, in_channels))
    state = dict(state)
    if "stem.0.weight" in state:
        try:
            state["stem.0.weight"] = adapt_in_channels(state["stem.0.weight"], in_channels)
        except ValueError as e:
            raise ConfigError("model.weights", source, str(e), "1 or 3 channel weights") from None
    own = backbone.state_dict()
    wrong = sorted(set(own) ^ set(state))
    bad_shape = [k for k in own if k in state and own[k].shape != state[k].shape]
    if wrong or bad_shape:
        k = (wrong or bad_shape)[0]
        raise ConfigError("model.weights", source, f"does not fit the backbone (first mismatch: "
                          f"{k})", WEIGHTS_HELP)
    backbone.load_state_dict(state)
    return True


def input_stats(cfg: ModelConfig, channels: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(mean, std) as (1, C, 1, 1) the inputs of this backbone expect, or None for the data
    set's own statistics (a random or `fcl pretrain` backbone)."""
    if cfg.pretrained != "imagenet":
        return None
    mean, std = torch.tensor(IMAGENET_MEAN), torch.tensor(IMAGENET_STD)
    if channels != 3:
        mean, std = mean.mean().repeat(channels), std.mean().repeat(channels)
    return mean.view(1, -1, 1, 1), std.view(1, -1, 1, 1)
