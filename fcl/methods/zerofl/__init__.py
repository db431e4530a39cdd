"""ZeroFL: the whole model with SWAT's sparse local training and a top-K uplink (`model.py`).

Its trials stored before it had its own name ran as `model.adapter=full` with
`model.zerofl_sparsity` > 0; they keep their ids (`hashed_as`) and read as ZeroFL."""
from __future__ import annotations

from fcl.config_error import ConfigError
from fcl.methods.contract import Method


def build(cfg, backbone, classes_per_task):
    from fcl.methods.zerofl.model import ZeroFLNet
    return ZeroFLNet(backbone, classes_per_task, cfg.zerofl_sparsity)


def upload_density(sparsity: float, mask_ratio: float) -> float:
    """(1 - s) + r: the share of each conv kernel a client uploads (0: no sparsity)."""
    return 0.0 if sparsity <= 0 else min(1.0, 1 - sparsity + mask_ratio)


def uploads(m) -> float:
    return upload_density(m.zerofl_sparsity, m.zerofl_mask_ratio)


def describe(m) -> str:
    return (f"zerofl (SWAT training at sparsity {m.zerofl_sparsity:g}; each conv kernel "
            f"uploaded at its top {uploads(m):g} by magnitude, sparse (row k); norms, "
            f"FC and the downlink dense)")


def check(cfg) -> None:
    s, r, c = cfg.model.zerofl_sparsity, cfg.model.zerofl_mask_ratio, cfg.compression
    if s == 0:
        raise ConfigError("model.zerofl_sparsity", s, "model.adapter=zerofl trains sparse "
                          "(at s = 0 it is model.adapter=full)", "0 < s < 1, the paper's 0.9")
    if r > s:
        raise ConfigError("model.zerofl_mask_ratio", r, f"the upload density (1 - s) + r "
                          f"would pass 1 at model.zerofl_sparsity={s:g}", f"0 <= r <= {s:g}")
    for key, value, want in (("compression.bits", c.bits, 32), ("compression.prune", c.prune, 0.0),
                             ("compression.payload", c.payload, "values")):
        if value != want:
            raise ConfigError(key, value, "model.adapter=zerofl sends each conv kernel's top-K "
                              "trained values in float32", str(want))


def spelled_before(flat: dict) -> bool:
    """A stored trial of `full` with a ZeroFL sparsity: how ZeroFL ran before its own name."""
    return flat.get("model.adapter") == "full" and float(flat.get("model.zerofl_sparsity",
                                                                      0) or 0) > 0


METHOD = Method(
    name="zerofl", label="ZeroFL",
    summary="zerofl = the whole model with ZeroFL's sparse local training and top-K uplink "
            "(Qiu et al. 2022; fcl/methods/zerofl/)",
    build=build, describe=describe, check=check, upload_density=uploads,
    keys=("model.zerofl_sparsity", "model.zerofl_mask_ratio"),
    hashed_as="full", spelled_before=spelled_before)
