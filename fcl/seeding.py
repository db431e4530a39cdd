"""Seeds derived from (run seed, purpose, indices): every random stream of a run is a pure
function of the config, so a round can be replayed (or resumed) without replaying the ones
before it, and clients draw the same batches whatever order they are trained in."""
from __future__ import annotations

import hashlib

import torch


def derive_seed(seed: int, purpose: str, *indices: int) -> int:
    key = f"{seed}/{purpose}/" + "/".join(map(str, indices))
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little") >> 1


def generator(seed: int, purpose: str, *indices: int, device: str | torch.device = "cpu"
              ) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(derive_seed(seed, purpose, *indices))
    return g
