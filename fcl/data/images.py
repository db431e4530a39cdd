"""Decode image files (JPEG, PNG, ...) into one uint8 array (n, 3, S, S), in parallel threads
(PIL releases the GIL while it decodes and resizes). Grayscale and palette images become RGB.

Two ways to reach S x S:
- `squash`: resize to S x S whatever the aspect ratio (LANCZOS), Ravi & Larochelle's MiniImageNet
  script (`im.resize((84, 84), resample=Image.LANCZOS)`);
- `center`: resize the shorter side to S (bilinear, torchvision's `Resize(S)`), then crop the
  centre S x S (torchvision's `CenterCrop(S)`).
An image already S x S is not resampled by either.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Sequence

import numpy as np

from fcl.data.image_dataset import DataError


def decode_one(path: Path, size: int, fit: str) -> np.ndarray:
    from PIL import Image
    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            if im.size != (size, size):
                if fit == "squash":
                    im = im.resize((size, size), resample=Image.LANCZOS)
                else:
                    w, h = im.size
                    scale = size / min(w, h)
                    nw, nh = max(size, round(w * scale)), max(size, round(h * scale))
                    im = im.resize((nw, nh), resample=Image.BILINEAR)
                    left, top = (nw - size) // 2, (nh - size) // 2
                    im = im.crop((left, top, left + size, top + size))
            return np.asarray(im, dtype=np.uint8).transpose(2, 0, 1)
    except FileNotFoundError:
        raise DataError(f"{path}: image missing") from None
    except Exception as e:  # noqa: BLE001  (PIL raises OSError, SyntaxError, ValueError, ...)
        raise DataError(f"{path}: not a readable image ({type(e).__name__}: "
                        f"{str(e)[:80]})") from None


def decode_images(paths: Sequence[Path], size: int, fit: str = "squash",
                  workers: int | None = None) -> np.ndarray:
    """uint8 (len(paths), 3, size, size), in the order of `paths`."""
    out = np.empty((len(paths), 3, size, size), dtype=np.uint8)
    workers = workers or min(16, os.cpu_count() or 1)

    def fill(i: int) -> None:
        out[i] = decode_one(Path(paths[i]), size, fit)

    if workers <= 1 or len(paths) < 64:
        for i in range(len(paths)):
            fill(i)
    else:
        with ThreadPoolExecutor(workers) as pool:
            for _ in pool.map(fill, range(len(paths))):
                pass          # re-raises the first DataError
    return out
