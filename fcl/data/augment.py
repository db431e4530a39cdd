"""Light augmentation of a batch of uint8 images, on whatever device the batch lives on.

`random_crop_flip` is the standard CIFAR recipe (Krizhevsky; He et al. 2016): pad every image
with `pad` zero (black) pixels on each side, cut a random HxW window, and mirror it left-right
with probability 1/2; done for the whole batch with one gather, no per-image Python. The
padding is H/8 pixels (4 for 32x32, 3 for 28x28, 10 for 84x84, 9 for 72x72). A mirror is wrong
for text-like domains (SVHN digits, Omniglot, signs): `data.augment` is off by default.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def random_crop_flip(x: torch.Tensor, pad: int, gen: torch.Generator) -> torch.Tensor:
    """x: (n, C, H, W) on gen's device; a new tensor of the same shape and dtype."""
    n, c, h, w = x.shape
    dev = x.device
    offsets = torch.randint(0, 2 * pad + 1, (2, n), generator=gen, device=dev)
    flip = torch.rand(n, generator=gen, device=dev) < 0.5
    padded = F.pad(x, (pad, pad, pad, pad))
    rows = offsets[0, :, None] + torch.arange(h, device=dev)                  # (n, H)
    cols = offsets[1, :, None] + torch.arange(w, device=dev)                  # (n, W)
    cols = torch.where(flip[:, None], cols.flip(1), cols)      # a mirror reads columns backwards
    return padded[torch.arange(n, device=dev)[:, None, None, None],
                  torch.arange(c, device=dev)[None, :, None, None],
                  rows[:, None, :, None], cols[:, None, None, :]]
