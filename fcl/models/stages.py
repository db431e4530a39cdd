"""The channels of every backbone's stages, without torch: `fcl.models.backbone` builds from
this table and `fcl.config` checks `model.norm_groups` against it, so both read one rule."""
from __future__ import annotations

SPECS = {  # name -> (channels per stage, blocks per stage); resnet_tiny: `stage_channels`
    "resnet8": ((64, 128, 256), 1),
    "resnet18": ((64, 128, 256, 512), 2),
}


def stage_channels(name: str, width: int) -> tuple[int, ...]:
    """Channels of each stage; every layer of the backbone and of its per-task modules (stem,
    block convs and norms, shortcuts, NetTailor proxies, LoRA's norms) has one of these."""
    if name == "resnet_tiny":
        return (width, 2 * width, 4 * width)
    return SPECS[name][0]
