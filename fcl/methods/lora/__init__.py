"""FLoCoRA's LoRA adapters on every convolution of a frozen backbone (`model.py`)."""
from __future__ import annotations

from fcl.methods.contract import Method


def build(cfg, backbone, classes_per_task):
    from fcl.methods.lora.model import LoRANet
    return LoRANet(backbone, classes_per_task, cfg.lora_rank, cfg.lora_alpha,
                   cfg.lora_train_norms, cfg.lora_on_head)


def describe(m) -> str:
    parts = ["LoRA on every conv" + (" and the FC" if m.lora_on_head else ""),
             "norms " + ("trained" if m.lora_train_norms else "frozen")]
    if not m.lora_on_head:
        parts.append("FC trained")
    return (f"lora (r={m.lora_rank}, alpha={m.lora_alpha:g}, scale "
            f"{m.lora_alpha / m.lora_rank:g}; {', '.join(parts)})")


METHOD = Method(
    name="lora", label="FLoCoRA",
    summary="lora = FLoCoRA's LoRA adapters (fcl/methods/lora/)",
    build=build, describe=describe,
    keys=("model.lora_rank", "model.lora_alpha", "model.lora_on_head", "model.lora_train_norms"),
    keys_always_hashed=True)
